"""NUL (U+0000) in any JSON string or query parameter is a 400 on every backend (PostgreSQL cannot
store it), and nothing is written."""
import json

import pytest

from notifications.models import Event, Notification
from notifications.runtime import InvalidRequest

pytestmark = pytest.mark.django_db


def _counts():
    return Notification.objects.count(), Event.objects.count()


@pytest.mark.parametrize("body", [
    {"source": "svc\u0000", "title": "t"},
    {"source": "svc", "title": "t", "metadata": {"k": ["ok", "bad\u0000"]}},
    {"source": "svc", "title": "t", "metadata": {"bad\u0000key": 1}},
])
def test_nul_in_body_is_a_400_and_writes_nothing(api, body):
    client = api(groups=("producer",))
    before = _counts()
    response = client.post("/api/v1/notifications", data=json.dumps(body), content_type="application/json")
    assert response.status_code == 400
    assert response["Content-Type"] == "application/problem+json"
    assert response.json()["code"] == "parse_error"
    assert _counts() == before


@pytest.mark.parametrize("path", ["/api/v1/dlq?after=a%00b", "/api/v1/notifications?source=x%00"])
def test_nul_in_query_is_a_400(api, path):
    client = api(groups=("operator",))
    response = client.get(path)
    assert response.status_code == 400
    assert response.json()["code"] == "invalid_query"


def test_runtime_refuses_nul_for_python_callers(rt):
    """A Python caller gets the refusal every transport gives (``core.json_values.check_value``, run
    first by ``core.schema.parse``): ``parse_error`` naming the exact path."""
    with pytest.raises(InvalidRequest) as err:
        rt.accept("alice", {"source": "svc", "title": "t", "metadata": {"deep": [{"x": "a\u0000"}]}})
    assert err.value.code == "parse_error"
    assert err.value.extra["errors"] == [{"field": "metadata.deep.0.x", "message": "strings must not contain U+0000 (NUL)"}]
    assert Notification.objects.count() == 0


@pytest.mark.parametrize("path", ["/ui/notifications/a%00b", "/ui/policies/a%00b/diff?from=1&to=2"])
@pytest.mark.parametrize("method", ["get", "head"])
def test_nul_in_a_ui_path_is_not_found_not_a_500(api, path, method):
    """A path id that cannot be an id (here with a NUL, which PostgreSQL cannot even compare) is
    404 problem details without a query, as on /api/v1 (``rows.get``, ``POLICY_ID_RE``)."""
    client = api(groups=("console",))
    response = getattr(client, method)(path)
    assert response.status_code == 404
    assert response["Content-Type"] == "application/problem+json"
    if method == "get":
        assert response.json()["status"] == 404
