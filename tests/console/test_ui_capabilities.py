"""/ui needs the console capability (notifications.view_console); /ui/me reports what the caller
may do so the app shows only the allowed actions."""
import pytest
from rest_framework.test import APIClient

from uihelpers import populate, ui_paths

pytestmark = pytest.mark.django_db


def test_anonymous_is_401_and_no_console_capability_is_403(ui, rt, clock, webhook, channel):
    ids = populate(rt, clock, webhook)
    producer = ui(groups=("producer",))
    nobody = ui(groups=())
    for path in ui_paths(ids["dlq"][0]).values():
        anonymous = APIClient().get(path)
        assert anonymous.status_code == 401 and anonymous["WWW-Authenticate"] == "Bearer", path
        for client in (producer, nobody):
            refused = client.get(path)
            assert refused.status_code == 403, path
            assert refused.json()["code"] == "permission_denied"


@pytest.mark.parametrize("groups,expected", [
    (("console",), {"view_console"}),
    (("responder",), {"view_console", "respond"}),
    (("operator",), {"view_console", "operate_dlq"}),
    (("policy_admin",), {"view_console", "manage_policies"}),
    (("operator", "responder", "producer"), {"view_console", "operate_dlq", "respond", "send"}),
])
def test_me_lists_exactly_the_callers_capabilities(ui, groups, expected):
    body = ui(groups=groups, name="someone").get("/ui/me").json()
    assert body["username"] == "someone"
    assert body["groups"] == sorted(groups)
    assert {k for k, v in body["capabilities"].items() if v} == expected
    assert set(body["capabilities"]) == {"view_console", "respond", "operate_dlq", "send", "manage_policies"}
