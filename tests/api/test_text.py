"""Text that cannot be stored is a 4xx on every API path, never a 500.

``"\\ud800"`` (a lone surrogate) is valid JSON but not text: UTF-8, canonical JSON and both
databases refuse it; PostgreSQL also refuses NUL. ``parsers.BoundedJSONParser`` refuses both in
bodies (400 ``parse_error``), ``BodySizeLimitMiddleware`` NUL in query strings (400
``invalid_query``). Bodies are sent as raw strings so the escapes reach the server as-is."""
import pytest
from rest_framework.test import APIClient

from .helpers import assert_problem, row_counts

pytestmark = pytest.mark.django_db

NUL = "\\u0000"
SURROGATE = "\\ud800"
LOW_SURROGATE = "\\udc00"


def raw(client, path, text):
    return client.post(path, text, content_type="application/json")


@pytest.fixture
def client(api, api_rt, channel):
    return api(groups=("producer", "responder", "operator"), name="texty")


@pytest.mark.parametrize("escape", [NUL, SURROGATE, LOW_SURROGATE])
@pytest.mark.parametrize("body", [
    '{"source": "s", "title": "a%sb"}',
    '{"source": "s", "title": "t", "metadata": {"k": ["ok", "x%s"]}}',
    '{"source": "s", "title": "t", "metadata": {"k%s": 1}}',
])
def test_submit_refuses_unstorable_text(client, escape, body):
    before = row_counts()
    assert_problem(raw(client, "/api/v1/notifications", body % escape), 400, "parse_error")
    assert row_counts() == before


def test_a_valid_surrogate_pair_is_just_text(client):
    response = raw(client, "/api/v1/notifications", '{"source": "s", "title": "snow \\ud83d\\ude00", '
                                                     '"channels": ["ops-hook"]}')
    assert response.status_code == 202, response.content


def test_escaped_backslashes_are_just_text(client):
    response = raw(client, "/api/v1/notifications",
                   '{"source": "s", "title": "not a NUL: \\\\u0000", "channels": ["ops-hook"]}')
    assert response.status_code == 202, response.content


@pytest.mark.parametrize("escape", [NUL, SURROGATE])
def test_ack_metadata(client, api_rt, escape):
    nid = client.post("/api/v1/notifications", {"source": "s", "title": "t", "channels": ["ops-hook"],
                                                "require_ack": True}, format="json").json()["id"]
    api_rt.dispatch()
    assert_problem(raw(client, f"/api/v1/notifications/{nid}/ack", '{"metadata": {"n": "%s"}}' % escape), 400,
                   "parse_error")
    assert client.post(f"/api/v1/notifications/{nid}/ack", {"metadata": {"n": "ok"}}, format="json").status_code == 200


def test_listing_and_timeline(client):
    for query in ("source=a%00b", "principal=%00", "status=%00", "cursor=%00"):
        assert_problem(client.get(f"/api/v1/notifications?{query}"), 400, "invalid_query")
    assert client.get("/api/v1/notifications/x%00/timeline").status_code in (400, 404)


@pytest.mark.parametrize("escape", [NUL, SURROGATE])
def test_alertmanager(client, escape):
    body = ('{"version": "4", "receiver": "r", "alerts": [{"status": "firing", "labels": {"job": "a%sb"}, '
            '"startsAt": "2027-01-15T08:00:00Z", "fingerprint": "f1"}]}') % escape
    before = row_counts()
    assert_problem(raw(client, "/api/v1/integrations/alertmanager", body), 400, "parse_error")
    assert row_counts() == before


@pytest.mark.parametrize("escape", [NUL, SURROGATE])
def test_pagerduty_answers_in_its_own_shape(make_principal, api_rt, escape):
    _, token = make_principal("pd-texty", ("producer", "responder"))
    plain = APIClient()
    for event in ('{"routing_key": "abc%s", "event_action": "trigger"}' % escape,
                  '{"routing_key": "%s", "event_action": "trigger", "payload": {"summary": "x%s", "source": "h", '
                  '"severity": "info"}}' % (token, escape)):
        response = raw(plain, "/api/v1/integrations/pagerduty/v2/enqueue", event)
        assert response.status_code == 400
        body = response.json()
        assert body["status"] == "invalid event" and "must not contain" in body["errors"][0], body
