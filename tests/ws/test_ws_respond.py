"""``/ws/respond/``: ACK, dismiss and snooze over the socket. Each answer carries the client's
request id; failures are problem details with the same ``code`` as over HTTP; repeats are
idempotent; anything else is refused with a problem and the socket stays usable."""
import pytest
from rest_framework.test import APIClient

from notifications.models import AckAuditRecord, Event, Notification

from .helpers import receive, receive_until, socket, sync

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True)]

MISSING = "00000000-0000-4000-8000-000000000000"


@pytest.fixture
def responder(make_principal):
    return make_principal("ws-bob", ("responder",))[1]


@pytest.fixture
def other_responder(make_principal):
    return make_principal("ws-carol", ("responder",))[1]


def delivered(rt, clock, **fields):
    nid = rt.accept("alice", {"source": "billing", "title": "disk full", "channels": ["ops-hook"],
                              "require_ack": True, **fields}).notification.id
    clock.advance(5)
    rt.dispatch()
    return nid


async def ask(comm, **message):
    await comm.send_json_to(message)
    return await receive(comm)


@pytest.mark.parametrize("action,settled", [("ack", "ACKED"), ("dismiss", "DISMISSED")])
async def test_ack_and_dismiss_settle_with_the_socket_principal(layer, ws_rt, clock, channel, responder,
                                                                action, settled):
    nid = await sync(delivered, ws_rt, clock)
    async with socket("/ws/respond/", token=responder) as comm:
        reply = await ask(comm, action=action, request_id="r-1", notification_id=nid, metadata={"via": "ws"})
        assert reply["request_id"] == "r-1" and reply["ok"] is True, reply
        n = reply["notification"]
        assert (n["id"], n["ack_status"], n["actor"], n["response_metadata"]) == (nid, settled, "ws-bob", {"via": "ws"})
        assert "timeline" not in n
        # a repeat (a client retry) is idempotent: the same answer, nothing new written
        again = await ask(comm, action=action, request_id="r-1", notification_id=nid, metadata={"via": "ws"})
        assert again == reply
    assert await sync(lambda: Event.objects.filter(notification_id=nid, kind=settled).count()) == 1
    assert await sync(lambda: AckAuditRecord.objects.filter(notification_id=nid).count()) == 1


async def test_conflicts_carry_the_http_code(layer, ws_rt, clock, channel, responder, other_responder,
                                             make_principal):
    nid = await sync(delivered, ws_rt, clock)
    async with socket("/ws/respond/", token=responder) as comm:
        assert (await ask(comm, action="ack", request_id="a", notification_id=nid))["ok"]
    async with socket("/ws/respond/", token=other_responder) as comm:
        reply = await ask(comm, action="ack", request_id="b", notification_id=nid)
        assert reply["ok"] is False and reply["request_id"] == "b"
        ws_problem = reply["problem"]
        assert ws_problem["code"] == "ack_conflict" and ws_problem["status"] == 409
        reply = await ask(comm, action="dismiss", request_id="c", notification_id=nid)
        assert reply["problem"]["code"] == "ack_conflict"
        reply = await ask(comm, action="snooze", request_id="d", notification_id=nid, seconds=600)
        assert reply["problem"]["code"] == "ack_conflict"

    def over_http():
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {other_responder}")
        return client.post(f"/api/v1/notifications/{nid}/ack", {}, format="json").json()

    http_problem = await sync(over_http)
    assert http_problem["code"] == ws_problem["code"] and http_problem["status"] == ws_problem["status"]


async def test_timed_out_and_not_awaiting(layer, ws_rt, clock, channel, responder):
    late = await sync(delivered, ws_rt, clock)
    pending = await sync(lambda: ws_rt.accept("alice", {"source": "billing", "title": "later", "channels": ["ops-hook"],
                                                        "require_ack": True}).notification.id)
    clock.advance(15 * 60 + 1)
    async with socket("/ws/respond/", token=responder) as comm:
        assert (await ask(comm, action="ack", request_id="1", notification_id=late))["problem"]["code"] == "ack_timed_out"
        assert (await ask(comm, action="ack", request_id="2", notification_id=pending))["problem"]["code"] == "not_awaiting_ack"
        reply = await ask(comm, action="ack", request_id="3", notification_id=MISSING)
        assert (reply["problem"]["code"], reply["problem"]["status"]) == ("not_found", 404)


async def test_snooze_moves_the_deadline_and_a_repeat_is_idempotent(layer, ws_rt, clock, channel, responder):
    nid = await sync(delivered, ws_rt, clock)
    async with socket("/ws/respond/", token=responder) as comm:
        reply = await ask(comm, action="snooze", request_id="s-1", notification_id=nid, seconds=1800,
                          metadata={"why": "deploy"})
        assert reply["ok"] is True, reply
        assert reply["notification"]["deadline"] == clock.now + 1800
        assert reply["notification"]["ack_status"] == "PENDING"
        clock.advance(60)
        again = await ask(comm, action="snooze", request_id="s-1", notification_id=nid, seconds=1800,
                          metadata={"why": "deploy"})
        assert again["ok"] is True and again["notification"]["deadline"] == reply["notification"]["deadline"]
        # a new request id snoozes again
        third = await ask(comm, action="snooze", request_id="s-2", notification_id=nid, seconds=1800)
        assert third["notification"]["deadline"] == clock.now + 1800
    snoozes = await sync(lambda: list(Event.objects.filter(notification_id=nid, kind="SNOOZED")
                                      .order_by("at", "id").values_list("payload", flat=True)))
    assert [(p["actor"], p["request_id"]) for p in snoozes] == [("ws-bob", "s-1"), ("ws-bob", "s-2")]


@pytest.mark.parametrize("message,code", [
    ({"action": "escalate", "request_id": "x", "notification_id": MISSING}, "unknown_action"),
    ({"action": "replay", "request_id": "x", "notification_id": MISSING}, "unknown_action"),
    ({"request_id": "x", "notification_id": MISSING}, "unknown_action"),
    ({"action": "ack", "notification_id": MISSING}, "invalid_request"),                   # no request id
    ({"action": "ack", "request_id": 5, "notification_id": MISSING}, "invalid_request"),
    ({"action": "ack", "request_id": "x" * 129, "notification_id": MISSING}, "invalid_request"),
    ({"action": "ack", "request_id": "x"}, "invalid_request"),                             # no id
    ({"action": "ack", "request_id": "x", "notification_id": "not-a-uuid"}, "invalid_request"),
    ({"action": "ack", "request_id": "x", "notification_id": MISSING, "actor": "mallory"}, "invalid_request"),
    ({"action": "ack", "request_id": "x", "notification_id": MISSING, "seconds": 60}, "invalid_request"),
    ({"action": "ack", "request_id": "x", "notification_id": MISSING, "metadata": "note"}, "invalid_request"),
    ({"action": "snooze", "request_id": "x", "notification_id": MISSING}, "invalid_request"),  # no seconds
    ([], "invalid_request"),
    (None, "invalid_request"),
])
async def test_malformed_messages_are_refused_and_the_socket_stays_usable(layer, ws_rt, responder, message, code):
    async with socket("/ws/respond/", token=responder) as comm:
        await comm.send_json_to(message)
        reply = await receive(comm)
        assert reply["ok"] is False and reply["problem"]["code"] == code, reply
        if isinstance(message, dict):  # the request id is echoed only when it is itself valid
            sent = message.get("request_id")
            valid = isinstance(sent, str) and 1 <= len(sent) <= 128
            assert reply["request_id"] == (sent if valid else None), reply
        follow_up = await ask(comm, action="ack", request_id="next", notification_id=MISSING)
        assert follow_up["request_id"] == "next" and follow_up["problem"]["code"] == "not_found"


async def test_bad_metadata_and_seconds_are_invalid(layer, ws_rt, clock, channel, responder):
    nid = await sync(delivered, ws_rt, clock)
    async with socket("/ws/respond/", token=responder) as comm:
        reply = await ask(comm, action="ack", request_id="m", notification_id=nid, metadata=["x"])
        assert reply["problem"]["code"] == "invalid_request"
        for seconds in (59, 86401, "600", True):
            reply = await ask(comm, action="snooze", request_id="s", notification_id=nid, seconds=seconds)
            assert reply["problem"]["code"] == "invalid_request", seconds
    assert await sync(lambda: Notification.objects.get(id=nid).ack_status) == "PENDING"


async def test_a_response_shows_up_live_on_a_timeline_socket(layer, ws_rt, clock, channel, responder, make_principal):
    nid = await sync(delivered, ws_rt, clock)
    _, viewer = await sync(make_principal, "ws-viewer", ("console",))
    async with socket("/ws/timeline/", token=viewer) as timeline, socket("/ws/respond/", token=responder) as respond:
        await timeline.send_json_to({"action": "subscribe", "notification_id": nid})
        await receive(timeline)
        assert (await ask(respond, action="snooze", request_id="1", notification_id=nid, seconds=600))["ok"]
        assert (await ask(respond, action="ack", request_id="2", notification_id=nid))["ok"]
        messages = await receive_until(timeline, lambda m: m.get("event", {}).get("kind") == "ACKED", "ACKED")
        assert [m["event"]["kind"] for m in messages] == ["SNOOZED", "ACKED"]
