"""``/ws/timeline/``: subscribe to one notification or to the stream, get the stored timeline as
catch-up, then every event as it commits (from request threads and from worker threads), once."""
import threading

import pytest
from django.db import connections

from notifications.models import Event

from .helpers import live_kinds, receive, receive_until, socket, sync

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True)]

MISSING = "00000000-0000-4000-8000-000000000000"


@pytest.fixture
def viewer(make_principal):
    return make_principal("ws-viewer", ("console",))[1]


def accept(rt, **fields):
    return rt.accept("alice", {"source": "billing", "title": "disk full", "channels": ["ops-hook"], **fields}).notification.id


def stored(nid=None):
    qs = Event.objects.all() if nid is None else Event.objects.filter(notification_id=nid)
    return list(qs.order_by("at", "id").values_list("id", flat=True))


async def test_subscribe_sends_catch_up_then_live_events(layer, ws_rt, clock, channel, viewer):
    nid = await sync(accept, ws_rt, require_ack=True)
    async with socket("/ws/timeline/", token=viewer) as comm:
        await comm.send_json_to({"action": "subscribe", "notification_id": nid, "request_id": "s1"})
        subscribed = await receive(comm)
        assert subscribed["type"] == "subscribed" and subscribed["notification_id"] == nid
        assert subscribed["request_id"] == "s1" and subscribed["truncated"] is False
        assert [e["id"] for e in subscribed["events"]] == await sync(stored, nid)
        assert [e["kind"] for e in subscribed["events"]] == ["ACCEPTED"]
        first = subscribed["events"][0]
        assert first["notification_id"] == nid and first["at_iso"].endswith("Z") and "policy_id" in first["payload"]

        clock.advance(5)
        await sync(ws_rt.dispatch)
        messages = await receive_until(comm, lambda m: m.get("event", {}).get("kind") == "DELIVERY_RESULT",
                                       "DELIVERY_RESULT pushed live")
        assert live_kinds(messages) == ["ATTEMPT_STARTED", "CHANNEL_ATTEMPT_STARTED", "CHANNEL_ATTEMPT_RESULT",
                                        "DELIVERY_RESULT"]
        await sync(ws_rt.acknowledge, nid, "bob")
        [acked] = await receive_until(comm, lambda m: m.get("type") == "event", "ACKED")
        assert acked["event"]["kind"] == "ACKED" and acked["event"]["payload"]["actor"] == "bob"
        assert await comm.receive_nothing(timeout=0.2)


def worker_pass(rt):
    try:
        rt.dispatch()
    finally:
        connections.close_all()


async def test_events_from_a_worker_thread_are_pushed(layer, ws_rt, clock, channel, viewer):
    """The embedded worker loops run in plain threads of the server process: their commits reach
    the sockets on the server loop too."""
    nid = await sync(accept, ws_rt)
    async with socket("/ws/timeline/", token=viewer) as comm:
        await comm.send_json_to({"action": "subscribe", "notification_id": nid})
        await receive(comm)
        worker = threading.Thread(target=worker_pass, args=(ws_rt,))
        worker.start()
        messages = await receive_until(comm, lambda m: m.get("event", {}).get("kind") == "DELIVERY_RESULT",
                                       "events from the worker thread")
        worker.join(5)
        assert live_kinds(messages)[0] == "ATTEMPT_STARTED"


async def test_stream_all_catch_up_and_live(layer, ws_rt, clock, channel, viewer):
    a = await sync(accept, ws_rt, title="a")
    b = await sync(accept, ws_rt, title="b")
    async with socket("/ws/timeline/", token=viewer) as comm:
        await comm.send_json_to({"action": "subscribe", "stream": "all", "limit": 1})
        subscribed = await receive(comm)
        assert subscribed["stream"] == "all" and subscribed["truncated"] is True
        assert [e["notification_id"] for e in subscribed["events"]] == [b]  # the newest one
        c = await sync(accept, ws_rt, title="c")
        [pushed] = await receive_until(comm, lambda m: m.get("type") == "event", "ACCEPTED of c")
        assert (pushed["event"]["notification_id"], pushed["event"]["kind"]) == (c, "ACCEPTED")
        await comm.send_json_to({"action": "subscribe", "stream": "all", "limit": 500})
        again = await receive(comm)
        # a re-subscribe catches up again, without what this socket already received
        assert {e["notification_id"] for e in again["events"]} == {a}
    assert a != b


async def test_overlapping_subscriptions_deliver_each_event_once(layer, ws_rt, clock, channel, viewer):
    nid = await sync(accept, ws_rt, require_ack=True)
    async with socket("/ws/timeline/", token=viewer) as comm:
        await comm.send_json_to({"action": "subscribe", "stream": "all", "limit": 0})
        await receive(comm)
        await comm.send_json_to({"action": "subscribe", "notification_id": nid})
        await receive(comm)
        await sync(ws_rt.dispatch)
        messages = await receive_until(comm, lambda m: m.get("event", {}).get("kind") == "DELIVERY_RESULT",
                                       "DELIVERY_RESULT")
        assert await comm.receive_nothing(timeout=0.3)
        ids = [m["event"]["id"] for m in messages]
        assert len(ids) == len(set(ids)) == 4


async def test_unsubscribe_stops_the_live_events(layer, ws_rt, clock, channel, viewer):
    nid = await sync(accept, ws_rt)
    async with socket("/ws/timeline/", token=viewer) as comm:
        await comm.send_json_to({"action": "subscribe", "notification_id": nid})
        await receive(comm)
        await comm.send_json_to({"action": "unsubscribe", "notification_id": nid, "request_id": "u"})
        assert await receive(comm) == {"type": "unsubscribed", "request_id": "u", "notification_id": nid}
        await sync(ws_rt.dispatch)
        assert await comm.receive_nothing(timeout=0.3)


async def test_events_of_other_notifications_are_not_pushed(layer, ws_rt, clock, channel, viewer):
    mine = await sync(accept, ws_rt, title="mine")
    async with socket("/ws/timeline/", token=viewer) as comm:
        await comm.send_json_to({"action": "subscribe", "notification_id": mine})
        await receive(comm)
        await sync(accept, ws_rt, title="other")
        assert await comm.receive_nothing(timeout=0.3)


async def test_unknown_notification_is_a_not_found_problem(layer, ws_rt, viewer):
    async with socket("/ws/timeline/", token=viewer) as comm:
        await comm.send_json_to({"action": "subscribe", "notification_id": MISSING, "request_id": "q"})
        reply = await receive(comm)
        assert reply["type"] == "error" and reply["request_id"] == "q"
        assert reply["problem"]["code"] == "not_found" and reply["problem"]["status"] == 404


@pytest.mark.parametrize("message,code", [
    ({"action": "watch", "notification_id": MISSING}, "unknown_action"),
    ({"notification_id": MISSING}, "unknown_action"),
    ({"action": "subscribe"}, "invalid_request"),
    ({"action": "subscribe", "notification_id": "../../etc"}, "invalid_request"),
    ({"action": "subscribe", "notification_id": "timeline.all"}, "invalid_request"),
    ({"action": "subscribe", "notification_id": 7}, "invalid_request"),
    ({"action": "subscribe", "notification_id": MISSING + "0"}, "invalid_request"),
    ({"action": "subscribe", "stream": "everything"}, "invalid_request"),
    ({"action": "subscribe", "stream": "all", "limit": 501}, "invalid_request"),
    ({"action": "subscribe", "stream": "all", "limit": "5"}, "invalid_request"),
    ({"action": "subscribe", "stream": "all", "group": "timeline.x"}, "invalid_request"),
    ({"action": "subscribe", "notification_id": MISSING, "extra": 1}, "invalid_request"),
    ({"action": "subscribe", "stream": "all", "request_id": ""}, "invalid_request"),
    (["subscribe"], "invalid_request"),
    ("subscribe", "invalid_request"),
])
async def test_malformed_messages_get_a_problem_and_the_socket_stays_usable(layer, ws_rt, viewer, message, code):
    async with socket("/ws/timeline/", token=viewer) as comm:
        await comm.send_json_to(message)
        reply = await receive(comm)
        assert reply["type"] == "error" and reply["problem"]["code"] == code, reply
        assert reply["problem"]["status"] == 400 and reply["problem"]["type"] == f"urn:uns:problem:{code}"
        await comm.send_json_to({"action": "subscribe", "stream": "all", "limit": 0})
        assert (await receive(comm))["type"] == "subscribed"


@pytest.mark.parametrize("frame,code,status", [
    ({"text_data": "{not json"}, "parse_error", 400),  # the code HTTP gives the same body
    ({"bytes_data": b"\x00\x01"}, "unsupported_frame", 400),
    ({"text_data": "x" * (64 * 1024 + 1)}, "payload_too_large", 413),
])
async def test_bad_frames_get_a_problem(layer, ws_rt, viewer, frame, code, status):
    async with socket("/ws/timeline/", token=viewer) as comm:
        await comm.send_to(**frame)
        reply = await receive(comm)
        assert (reply["type"], reply["problem"]["code"], reply["problem"]["status"]) == ("error", code, status)


async def test_subscriptions_per_socket_are_bounded(layer, ws_rt, viewer, monkeypatch):
    from notifications import consumers

    monkeypatch.setattr(consumers, "MAX_SUBSCRIPTIONS", 1)
    async with socket("/ws/timeline/", token=viewer) as comm:
        await comm.send_json_to({"action": "subscribe", "stream": "all", "limit": 0})
        await receive(comm)
        await comm.send_json_to({"action": "subscribe", "notification_id": MISSING})
        reply = await receive(comm)
        assert reply["problem"]["code"] == "too_many_subscriptions"


async def test_an_uppercase_id_is_not_an_id(layer, ws_rt, clock, channel, viewer):
    """One notification-id rule (``core.keys.is_notification_id``): the canonical lower-case UUID;
    another spelling is answered as any malformed id is."""
    nid = await sync(accept, ws_rt)
    async with socket("/ws/timeline/", token=viewer) as comm:
        await comm.send_json_to({"action": "subscribe", "notification_id": nid.upper()})
        reply = await receive(comm)
        assert reply["problem"]["code"] == "invalid_request"
        assert reply["problem"]["errors"] == [{"field": "notification_id",
                                               "message": "must be a notification id (a UUID string)"}]
