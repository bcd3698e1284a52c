"""Authentication (401 with WWW-Authenticate) and capabilities (403) on the API; a refused
request writes nothing."""
from datetime import timedelta

import pytest
from rest_framework.test import APIClient

from .helpers import assert_problem, drive_to_dlq, row_counts, submit

pytestmark = pytest.mark.django_db

URL = "/api/v1/notifications"
VALID = {"source": "billing", "title": "card declined", "channels": ["ops-hook"]}


def _client(authorization=None):
    client = APIClient()
    if authorization is not None:
        client.credentials(HTTP_AUTHORIZATION=authorization)
    return client


@pytest.mark.parametrize("authorization,code", [
    (None, "not_authenticated"),
    ("Bearer not-a-real-token", "authentication_failed"),
    ("Bearer " + "0" * 64, "authentication_failed"),
    ("Bearer", "authentication_failed"),
    ("Bearer a b", "authentication_failed"),
    ("Bearer \u00ff\u00fe", "authentication_failed"),  # not UTF-8 once on the wire (latin-1 header bytes)
    ("Basic dXNlcjpwYXNz", "not_authenticated"),
    ("Token abc", "not_authenticated"),
])
def test_missing_or_wrong_credentials_are_401_with_www_authenticate(api_rt, channel, authorization, code):
    client = _client(authorization)
    before = row_counts()
    for response in (client.post(URL, VALID, format="json"), client.get(f"{URL}/x"),
                     client.post(f"{URL}/x/ack", format="json"), client.get("/api/v1/dlq"),
                     client.post("/api/v1/dlq/x/replay"), client.post("/api/v1/dlq/x/resolve"),
                     client.delete("/api/v1/dlq/x"), client.post("/api/v1/runtime/notifications/x/replay")):
        assert_problem(response, 401, code)
        assert response["WWW-Authenticate"] == "Bearer"
    assert row_counts() == before


def test_a_revoked_or_expired_token_is_401(make_principal, api_rt, channel):
    from knox.models import AuthToken

    user, token = make_principal("revoked-svc", ("producer",))
    client = _client(f"Bearer {token}")
    assert client.post(URL, VALID, format="json").status_code == 202
    AuthToken.objects.filter(user=user).delete()
    before = row_counts()
    assert_problem(client.post(URL, VALID, format="json"), 401, "authentication_failed")

    _, expired = AuthToken.objects.create(user=user, expiry=timedelta(seconds=-1))
    assert_problem(_client(f"Bearer {expired}").post(URL, VALID, format="json"), 401, "authentication_failed")
    assert row_counts() == before


def test_an_inactive_principal_is_401(make_principal, api_rt, channel):
    user, token = make_principal("retired-svc", ("producer",))
    user.is_active = False
    user.save()
    assert_problem(_client(f"Bearer {token}").post(URL, VALID, format="json"), 401, "authentication_failed")


def test_producer_cannot_ack_or_dismiss(api, api_rt, channel):
    producer = api(groups=("producer",))
    nid = submit(producer, require_ack=True)["id"]
    api_rt.dispatch()
    before = row_counts()
    for action in ("ack", "dismiss"):
        body = assert_problem(producer.post(f"{URL}/{nid}/{action}", format="json"), 403, "permission_denied")
        assert body["instance"] == f"{URL}/{nid}/{action}"
    assert row_counts() == before
    assert producer.get(f"{URL}/{nid}").json()["ack_status"] == "PENDING"


def test_responder_cannot_replay_or_resolve(api, api_rt, clock, webhook, channel):
    nid = drive_to_dlq(api_rt, clock, webhook, api(groups=("producer",)))
    responder = api(groups=("responder",))
    before = row_counts()
    assert_problem(responder.post(f"/api/v1/dlq/{nid}/replay"), 403, "permission_denied")
    assert_problem(responder.post(f"/api/v1/dlq/{nid}/resolve"), 403, "permission_denied")
    assert row_counts() == before
    assert responder.get(f"{URL}/{nid}").json()["dead_letter"] is True


def test_console_only_cannot_send(api, api_rt, channel):
    console = api(groups=("console",))
    before = row_counts()
    assert_problem(console.post(URL, VALID, format="json"), 403, "permission_denied")
    assert row_counts() == before


def test_producer_cannot_operate_the_dlq(api, api_rt, clock, webhook, channel):
    producer = api(groups=("producer",))
    nid = drive_to_dlq(api_rt, clock, webhook, producer)
    before = row_counts()
    assert_problem(producer.post(f"/api/v1/dlq/{nid}/replay"), 403, "permission_denied")
    assert_problem(producer.post(f"/api/v1/dlq/{nid}/resolve"), 403, "permission_denied")
    assert row_counts() == before


def test_capability_is_checked_before_the_body_is_parsed(api, api_rt):
    # A principal without the capability learns nothing about its body's validity.
    console = api(groups=("console",))
    assert_problem(console.generic("POST", URL, b"{not json", content_type="application/json"), 403,
                   "permission_denied")
    assert_problem(console.generic("POST", URL, b"{}", content_type="text/plain"), 403, "permission_denied")


def test_a_token_and_its_capabilities_are_one_query(make_principal, django_assert_num_queries):
    """The principal and its capabilities cost one statement however many tokens the user holds
    (knox's own lookup read every token of the user; the capabilities were a second query); a
    capability granted directly to the user and one through a group both count. A user not read
    through a token (a session's) still gets its capabilities in one query of their own."""
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Permission
    from knox.models import AuthToken

    from notifications.api.auth import BearerTokenAuthentication
    from core.capabilities import RESPOND, SEND
    from notifications.access import load_capabilities

    user, token = make_principal("busy-svc", ("producer",))
    for _ in range(5):
        AuthToken.objects.create(user=user, expiry=timedelta(days=1))
    user.user_permissions.add(Permission.objects.get(codename=RESPOND.split(".")[1]))
    with django_assert_num_queries(1):
        found, _ = BearerTokenAuthentication().authenticate_credentials(token.encode())
        load_capabilities(found)
        assert found.has_perm(SEND) and found.has_perm(RESPOND)
        assert not found.has_perm("notifications.operate_dlq")
    session_user = get_user_model().objects.get(pk=user.pk)
    with django_assert_num_queries(1):
        load_capabilities(session_user)
        assert session_user.has_perm(SEND) and session_user.has_perm(RESPOND)
        assert not session_user.has_perm("notifications.operate_dlq")


def test_a_capability_removed_is_refused_on_the_next_request(api, api_rt):
    from django.contrib.auth.models import Group, Permission  # capabilities are read per request (no cache)

    client = api(groups=("producer",), name="losing-send")
    assert client.post("/api/v1/notifications", {"source": "s", "title": "t"}, format="json").status_code == 202
    Group.objects.get(name="producer").permissions.remove(Permission.objects.get(codename="send_notification"))
    answer = client.post("/api/v1/notifications", {"source": "s", "title": "t"}, format="json")
    assert answer.status_code == 403 and answer.json()["code"] == "permission_denied"
