"""Every frame the WebSocket consumers send validates against its model in
``notifications.payloads`` (no member the model lacks, none missing): ``/ws/timeline/``'s
subscribed, event, unsubscribed and error frames, ``/ws/respond/``'s answer (the notification
the HTTP API answers, ``payloads.Notification``) and its refusal (the HTTP API's problem)."""
import pytest

from notifications import payloads
from notifications.consumers import TimelineConsumer

from .helpers import receive, receive_until, socket, sync

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def viewer(make_principal):
    return make_principal("ws-viewer", ("console",))[1]


@pytest.fixture
def responder(make_principal):
    return make_principal("ws-bob", ("responder",))[1]


def delivered(rt, clock):
    nid = rt.accept("alice", {"source": "billing", "title": "disk full", "channels": ["ops-hook"],
                              "require_ack": True}).notification.id
    clock.advance(5)
    rt.dispatch()
    return nid


async def test_timeline_frames_validate(layer, ws_rt, clock, channel, viewer):
    nid = await sync(delivered, ws_rt, clock)
    async with socket("/ws/timeline/", token=viewer) as comm:
        await comm.send_json_to({"action": "subscribe", "notification_id": nid, "request_id": "s1"})
        payloads.TimelineSubscribed.model_validate(await receive(comm))
        await comm.send_json_to({"action": "subscribe", "stream": "all", "limit": 2})
        payloads.TimelineSubscribed.model_validate(await receive(comm))
        await sync(ws_rt.acknowledge, nid, "bob")
        [event] = await receive_until(comm, lambda m: m.get("type") == "event", "ACKED")
        payloads.TimelineEventFrame.model_validate(event)
        await comm.send_json_to({"action": "unsubscribe", "stream": "all"})
        payloads.TimelineUnsubscribed.model_validate(await receive(comm))
        await comm.send_json_to({"action": "shout"})
        payloads.TimelineError.model_validate(await receive(comm))


async def test_respond_frames_validate(layer, ws_rt, clock, channel, responder):
    nid = await sync(delivered, ws_rt, clock)
    async with socket("/ws/respond/", token=responder) as comm:
        await comm.send_json_to({"action": "ack", "request_id": "r-1", "notification_id": nid})
        payloads.RespondReply.model_validate(await receive(comm))
        await comm.send_json_to({"action": "ack", "request_id": "r-2", "notification_id": "nope"})
        payloads.RespondError.model_validate(await receive(comm))


@pytest.mark.anyio
async def test_a_client_gone_before_its_answer_is_logged_as_info_not_as_a_failure(caplog):
    """The server's transport refuses a send to a client that left (uvicorn raises its
    ``ClientDisconnected``, an ``OSError``): nothing is raised and nothing logged as an error."""
    class Gone(OSError):
        pass

    consumer = TimelineConsumer()

    async def refuse(**_):
        raise Gone("client disconnected")

    consumer.send = refuse
    with caplog.at_level("INFO", logger="uns.ws"):
        await consumer.send_json({"type": "subscribed"})
    assert [r.levelname for r in caplog.records if r.name == "uns.ws"] == ["INFO"]
    assert "left before its answer" in caplog.records[-1].getMessage()
