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


@pytest.fixture
def redis_layer(settings, monkeypatch):
    import uuid

    from local_redis import answering_redis_url

    url = answering_redis_url()
    if url is None:
        pytest.skip("no Redis answers")
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels_redis.core.RedisChannelLayer", "CONFIG": {
        "hosts": [url], "prefix": f"uns-test-live-{uuid.uuid4().hex[:8]}"}}}
    monkeypatch.setattr(live, "_bound_loop", None)
    return get_channel_layer()


def test_on_redis_only_watched_groups_get_a_send_and_events_queue_in_order(redis_layer, monkeypatch):
    """One pipelined read per send finds the watched groups; ``group_send`` runs for those only;
    events published while a send is under way go out together in the next, in order."""
    layer = redis_layer
    publisher = live.ChannelsPublisher()
    watched, quiet = "22222222-2222-4222-8222-222222222222", "33333333-3333-4333-8333-333333333333"
    publisher([timeline.event(quiet, "ACCEPTED", {}, 1.0)])  # starts the background loop
    assert publisher.drain(5)
    loop = publisher._target_loop()

    def on_loop(coro):
        return asyncio.run_coroutine_threadsafe(coro, loop).result(5)

    channel = on_loop(layer.new_channel())
    on_loop(layer.group_add(live.timeline_group(watched), channel))
    sends, reads = [], []
    real_send, real_watched = layer.group_send, live._watched_groups

    async def counting_send(group, message):
        sends.append((group, message["event"]["kind"]))
        await real_send(group, message)

    async def counting_read(lay, groups):
        reads.append(set(groups))
        return await real_watched(lay, groups)

    monkeypatch.setattr(layer, "group_send", counting_send)
    monkeypatch.setattr(live, "_watched_groups", counting_read)
    events = [timeline.event(nid, kind, {}, 2.0 + i) for i, (nid, kind) in
              enumerate([(quiet, "ATTEMPT_STARTED"), (watched, "ACCEPTED"), (watched, "DELIVERY_RESULT")])]
    for ev in events:
        publisher([ev])
    assert publisher.drain(5)
    # Nobody watches timeline.all or the quiet notification: only the watched group was sent to.
    assert sends == [(live.timeline_group(watched), "ACCEPTED"), (live.timeline_group(watched), "DELIVERY_RESULT")]
    assert 1 <= len(reads) <= 3 and set().union(*reads) == {
        live.TIMELINE_ALL, live.timeline_group(quiet), live.timeline_group(watched)}
    received = [on_loop(layer.receive(channel)) for _ in range(2)]
    assert [m["event"]["kind"] for m in received] == ["ACCEPTED", "DELIVERY_RESULT"]


def test_on_redis_a_failed_read_is_counted_as_the_sends_it_lost(redis_layer, monkeypatch, caplog):
    async def broken(lay, groups):
        raise ConnectionError("redis is down")

    monkeypatch.setattr(live, "_watched_groups", broken)
    publisher = live.ChannelsPublisher()
    publisher([timeline.event("11111111-1111-4111-8111-111111111111", "ACCEPTED", {}, 1.0)])
    assert publisher.drain(5)
    assert "live push to the channel layer failing (ConnectionError: redis is down)" in caplog.text
    assert "(2 sends failed, 1 events not pushed live)" in caplog.text
