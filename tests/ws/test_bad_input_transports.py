"""One table of bad inputs, one refusal: the same problem ``code`` over HTTP
(``POST /api/v1/notifications/{id}/ack``), WebSocket (``/ws/respond/``) and MCP (``acknowledge``,
in-process), and nothing written. The refusals are checked before the notification is looked
up, so an unknown id serves every case."""
import json

import pytest
from mcp import Client

from core.schema import parse
from notifications.mcp.auth import StdioIdentity
from notifications.mcp.server import build_server
from notifications.models import Event, Notification

from .helpers import RECEIVE_TIMEOUT, socket

pytestmark = [pytest.mark.django_db(transaction=True)]

NID = "00000000-0000-4000-8000-000000000001"

NUL_MESSAGE = "strings must not contain U+0000 (NUL)"
SURROGATE_MESSAGE = "strings must not contain lone surrogates (\\ud800-\\udfff)"
NON_FINITE = "numbers must be finite (not NaN, Infinity or out of range like 1e400)"

# (case, metadata as JSON text, metadata as a parsed value, extra members, expected code, expected
# ``errors``): every transport must answer exactly this problem ``code`` and ``errors``.
CASES = [
    ("nul", '{"k": "a\\u0000"}', {"k": "a\u0000"}, {}, "parse_error",
     [{"field": "metadata.k", "message": NUL_MESSAGE}]),
    ("lone-surrogate", '{"k": "\\ud800"}', {"k": "\ud800"}, {}, "parse_error",
     [{"field": "metadata.k", "message": SURROGATE_MESSAGE}]),
    ("1e400", '{"v": 1e400}', {"v": float("inf")}, {}, "parse_error", [{"field": "metadata.v", "message": NON_FINITE}]),
    ("nan-literal", '{"v": NaN}', {"v": float("nan")}, {}, "parse_error",
     [{"field": "metadata.v", "message": NON_FINITE}]),
    ("infinity-literal", '{"v": -Infinity}', {"v": float("-inf")}, {}, "parse_error",
     [{"field": "metadata.v", "message": NON_FINITE}]),
    ("unknown-field", "{}", {}, {"bogus": 1}, "invalid_request", [{"field": "bogus", "message": "unknown field"}]),
    ("wrong-type", '"x"', "x", {}, "invalid_request", [{"field": "metadata", "message": "must be an object"}]),
]
IDS = [c[0] for c in CASES]


@pytest.fixture
def responder(make_principal):
    _, token = make_principal("resp", ("responder",))
    return token


def _fields(body: dict) -> list[str]:
    return [e["field"] for e in body.get("errors", [])]


def _nothing_written():
    assert (Notification.objects.count(), Event.objects.count()) == (0, 0)


def _extra_members(extra: dict) -> str:
    return "".join(f", {json.dumps(k)}: {json.dumps(v)}" for k, v in extra.items())


@pytest.mark.parametrize(("text", "extra", "code", "errors"), [(c[1], c[3], c[4], c[5]) for c in CASES], ids=IDS)
def test_http(client, responder, text, extra, code, errors):
    body = '{"metadata": %s%s}' % (text, _extra_members(extra))
    response = client.post(f"/api/v1/notifications/{NID}/ack", data=body.encode("utf-8", "surrogatepass"),
                           content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {responder}")
    assert response.status_code == 400, response.content
    problem = response.json()
    assert (problem["code"], problem["status"], problem.get("errors")) == (code, 400, errors)
    _nothing_written()


@pytest.mark.anyio
@pytest.mark.parametrize(("text", "extra", "code", "errors"), [(c[1], c[3], c[4], c[5]) for c in CASES], ids=IDS)
async def test_websocket(responder, text, extra, code, errors):
    frame = '{"action": "ack", "request_id": "r1", "notification_id": "%s", "metadata": %s%s}' % (
        NID, text, _extra_members(extra))
    async with socket("/ws/respond/", token=responder) as comm:
        assert comm.accepted
        await comm.send_to(text_data=frame)
        reply = json.loads(await comm.receive_from(timeout=RECEIVE_TIMEOUT))
    assert reply["ok"] is False
    assert reply["request_id"] == "r1"  # echoed even when the frame is refused as a whole
    problem = reply["problem"]
    assert (problem["code"], problem["status"], problem.get("errors")) == (code, 400, errors)


@pytest.mark.anyio
async def test_websocket_does_not_echo_a_request_id_it_would_refuse(responder):
    async with socket("/ws/respond/", token=responder) as comm:
        await comm.send_to(text_data='{"action": "ack", "request_id": "r\\u0000", "notification_id": "%s"}' % NID)
        reply = json.loads(await comm.receive_from(timeout=RECEIVE_TIMEOUT))
    assert reply["request_id"] is None and reply["problem"]["code"] == "parse_error"


@pytest.mark.anyio
@pytest.mark.parametrize(("value", "extra", "code", "errors"), [(c[2], c[3], c[4], c[5]) for c in CASES], ids=IDS)
async def test_mcp(responder, value, extra, code, errors):
    server = build_server(StdioIdentity(responder), with_worker=False)
    arguments = {"notification_id": NID, "metadata": value, **extra}
    if code == "parse_error" and isinstance(value.get("v"), float):
        # The SDK's client serialises inf/NaN as null, so it cannot send them: hand the parsed
        # arguments (what a server parsing ``1e400`` or ``NaN`` holds) to the server's call_tool.
        result = await server.call_tool("acknowledge", arguments)
    else:
        async with Client(server) as client:
            result = await client.call_tool("acknowledge", arguments)
    assert result.is_error
    problem = result.structured_content
    assert problem is not None, result.content
    assert (problem["code"], problem["status"], problem.get("errors")) == (code, 400, errors)
    assert json.loads(result.content[0].text) == problem  # the text content is the same body


# Submit (HTTP and MCP; WebSocket has no submit): (case, request as JSON text, the same request
# parsed, expected code). The expected ``errors`` are what the definition itself,
# ``parse(SendNotificationRequest, ...)``, refuses the parsed request with.
SUBMIT_CASES = [
    ("nul-in-title", '{"source": "s", "title": "a\\u0000"}', {"source": "s", "title": "a\u0000"}, "parse_error"),
    ("1e400-in-metadata", '{"source": "s", "title": "t", "metadata": {"deep": [1e400]}}',
     {"source": "s", "title": "t", "metadata": {"deep": [float("inf")]}}, "parse_error"),
    ("unknown-field", '{"source": "s", "title": "t", "principal": "mallory"}',
     {"source": "s", "title": "t", "principal": "mallory"}, "invalid_request"),
    ("bad-severity", '{"source": "s", "title": "t", "severity": "loud"}',
     {"source": "s", "title": "t", "severity": "loud"}, "invalid_request"),
    ("missing-title", '{"source": "s"}', {"source": "s"}, "invalid_request"),
    ("channels-not-a-list", '{"source": "s", "title": "t", "channels": "ops"}',
     {"source": "s", "title": "t", "channels": "ops"}, "invalid_request"),
    ("require-ack-as-text", '{"source": "s", "title": "t", "require_ack": "yes"}',
     {"source": "s", "title": "t", "require_ack": "yes"}, "invalid_request"),
]
SUBMIT_IDS = [c[0] for c in SUBMIT_CASES]


def _defined_refusal(value) -> list[dict]:
    from notifications.runtime import UNSError, schemas

    with pytest.raises(UNSError) as err:
        parse(schemas.SendNotificationRequest, value)
    return err.value.extra["errors"]


@pytest.fixture
def producer(make_principal):
    _, token = make_principal("prod", ("producer",))
    return token


@pytest.mark.parametrize(("text", "value", "code"), [c[1:] for c in SUBMIT_CASES], ids=SUBMIT_IDS)
def test_submit_http(client, producer, text, value, code):
    response = client.post("/api/v1/notifications", data=text.encode("utf-8", "surrogatepass"),
                           content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {producer}")
    assert response.status_code == 400, response.content
    problem = response.json()
    assert (problem["code"], problem.get("errors")) == (code, _defined_refusal(value))
    _nothing_written()


@pytest.mark.anyio
@pytest.mark.parametrize(("text", "value", "code"), [c[1:] for c in SUBMIT_CASES], ids=SUBMIT_IDS)
async def test_submit_mcp(producer, text, value, code):
    server = build_server(StdioIdentity(producer), with_worker=False)
    # As above: the SDK's client cannot send inf, so the parsed arguments go to call_tool.
    result = await server.call_tool("send_notification", value)
    assert result.is_error
    problem = result.structured_content
    assert (problem["code"], problem["status"], problem.get("errors")) == (code, 400, _defined_refusal(value))


@pytest.mark.parametrize("path", ["/api/v1/notifications", "/api/v1/integrations/pagerduty/v2/enqueue"])
def test_an_infinite_number_in_a_submitted_body_is_a_400(client, make_principal, path):
    """``1e400`` parses as infinity, which jsonb cannot store: refused by the parser, not a 500."""
    _, token = make_principal("prod", ("producer",))
    body = b'{"source": "s", "title": "t", "metadata": {"v": 1e400}, "payload": {"custom_details": {"v": 1e400}}}'
    response = client.post(path, data=body, content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}")
    assert response.status_code == 400, response.content
    _nothing_written()


# Snooze (HTTP and WebSocket; MCP has no snooze tool): its body is ``schemas.SnoozeRequest`` on both.
SNOOZE_CASES = [
    ("missing-seconds", {}, "seconds"),
    ("seconds-as-text", {"seconds": "600"}, "seconds"),
    ("seconds-below-minimum", {"seconds": 59}, "seconds"),
    ("seconds-boolean", {"seconds": True}, "seconds"),
    ("unknown-field", {"seconds": 600, "actor": "someone-else"}, "actor"),
]
SNOOZE_IDS = [c[0] for c in SNOOZE_CASES]


@pytest.mark.parametrize(("body", "field"), [c[1:] for c in SNOOZE_CASES], ids=SNOOZE_IDS)
def test_snooze_http(client, responder, body, field):
    response = client.post(f"/api/v1/notifications/{NID}/snooze", data=json.dumps(body),
                           content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {responder}")
    assert response.status_code == 400, response.content
    assert response.json()["code"] == "invalid_request" and field in _fields(response.json())
    _nothing_written()


@pytest.mark.anyio
@pytest.mark.parametrize(("body", "field"), [c[1:] for c in SNOOZE_CASES], ids=SNOOZE_IDS)
async def test_snooze_websocket(responder, body, field):
    frame = {"action": "snooze", "request_id": "r1", "notification_id": NID, **body}
    async with socket("/ws/respond/", token=responder) as comm:
        assert comm.accepted
        await comm.send_to(text_data=json.dumps(frame))
        reply = json.loads(await comm.receive_from(timeout=RECEIVE_TIMEOUT))
    assert reply["ok"] is False
    assert reply["problem"]["code"] == "invalid_request" and reply["problem"]["status"] == 400
    assert field in _fields(reply["problem"])


@pytest.mark.anyio
@pytest.mark.parametrize("request_id", ["r" * 129, ""], ids=["too-long", "empty"])
async def test_a_bad_request_id_is_refused_alike_over_http_and_websocket(responder, request_id):
    """HTTP's ``Idempotency-Key`` and a frame's ``request_id`` are one rule
    (``requests.check_request_id``): the same problem code and ``errors``."""
    from asgiref.sync import sync_to_async
    from django.test import Client as HttpClient

    http = await sync_to_async(HttpClient().post)(
        f"/api/v1/notifications/{NID}/snooze", data=json.dumps({"seconds": 600}), content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {responder}", HTTP_IDEMPOTENCY_KEY=request_id)
    frame = {"action": "snooze", "request_id": request_id, "notification_id": NID, "seconds": 600}
    async with socket("/ws/respond/", token=responder) as comm:
        assert comm.accepted
        await comm.send_to(text_data=json.dumps(frame))
        reply = json.loads(await comm.receive_from(timeout=RECEIVE_TIMEOUT))
    assert http.status_code == 400, http.content
    over_http, over_ws = http.json(), reply["problem"]
    assert over_http["code"] == over_ws["code"] == "invalid_request"
    assert over_http["errors"] == over_ws["errors"] == [
        {"field": "request_id", "message": "must be a string of 1..128 characters"}]
