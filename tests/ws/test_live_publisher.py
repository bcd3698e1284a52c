"""``notifications.live.ChannelsPublisher`` without a server loop (a ``runworker`` process):
sends run on its private background loop, in commit order, and ``drain()`` waits for them."""
import asyncio

import pytest
from channels.layers import get_channel_layer

from notifications import live
from notifications.runtime import timeline


@pytest.fixture
def layer(settings, monkeypatch):
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    monkeypatch.setattr(live, "_bound_loop", None)
    return get_channel_layer()


def test_background_loop_sends_in_order_to_both_groups_and_drains(layer):
    publisher = live.ChannelsPublisher()
    nid = "11111111-1111-4111-8111-111111111111"
    events = [timeline.event(nid, kind, {"n": i}, 1_800_000_000.0 + i)
              for i, kind in enumerate(["ACCEPTED", "ATTEMPT_STARTED", "DELIVERY_RESULT"])]
    publisher(events[:1])  # starts the background loop
    assert publisher.drain(5)
    loop = publisher._target_loop()

    def on_loop(coro):
        return asyncio.run_coroutine_threadsafe(coro, loop).result(5)

    one = on_loop(layer.new_channel())
    every = on_loop(layer.new_channel())
    on_loop(layer.group_add(live.timeline_group(nid), one))
    on_loop(layer.group_add(live.TIMELINE_ALL, every))
    publisher(events[1:2])
    publisher(events[2:])
    assert publisher.drain(5)
    for channel in (one, every):
        received = [on_loop(layer.receive(channel)) for _ in range(2)]
        assert [m["type"] for m in received] == [live.MESSAGE_TYPE] * 2
        assert [m["event"]["kind"] for m in received] == ["ATTEMPT_STARTED", "DELIVERY_RESULT"]
        assert received[0]["event"] == live.event_message(events[1])
        assert received[0]["event"]["at_iso"].endswith("Z")


def test_a_layer_failure_is_logged_not_raised(layer, monkeypatch, caplog):
    async def broken(group, message):
        raise ConnectionError("redis is down")

    monkeypatch.setattr(layer, "group_send", broken)
    publisher = live.ChannelsPublisher()
    publisher([timeline.event("11111111-1111-4111-8111-111111111111", "ACCEPTED", {}, 1.0)])
    assert publisher.drain(5)
    assert "live push to the channel layer failing (ConnectionError: redis is down)" in caplog.text


def test_runworker_drains_the_live_push_before_exiting(monkeypatch):
    from notifications.management.commands import runworker

    drained = []

    class Publisher:
        def drain(self, timeout):
            drained.append(timeout)
            return True

    class Rt:
        publish = Publisher()

    runworker._drain_live_push(Rt())
    assert drained == [5.0]
    runworker._drain_live_push(type("NoPush", (), {"publish": None})())  # no publisher: nothing to do
