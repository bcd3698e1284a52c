"""Live push during a channel-layer outage: failed sends are counted and summarised (one
line when sends start failing, one with duration and counts when one succeeds again), never a
traceback per event and group; the publisher keeps working when the layer is back."""
import logging

import pytest
from channels.layers import get_channel_layer

from notifications import live
from notifications.runtime import timeline

NID = "11111111-1111-4111-8111-111111111111"


@pytest.fixture
def layer(settings, monkeypatch):
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    monkeypatch.setattr(live, "_bound_loop", None)
    return get_channel_layer()


def test_an_outage_is_summarised_in_two_lines_without_tracebacks(layer, monkeypatch, caplog):
    down = {"value": True}
    sent = []

    async def flaky(group, message):
        if down["value"]:
            raise ConnectionError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")
        sent.append((group, message["event"]["id"]))

    monkeypatch.setattr(layer, "group_send", flaky)
    publisher = live.ChannelsPublisher()
    events = [timeline.event(NID, "ATTEMPT_STARTED", {"n": i}, 1_800_000_000.0 + i) for i in range(20)]
    with caplog.at_level(logging.INFO, logger="uns.live"):
        for ev in events[:15]:
            publisher([ev])
        assert publisher.drain(5)
        down["value"] = False
        publisher(events[15:])
        assert publisher.drain(5)

    lines = [r.getMessage() for r in caplog.records if r.name == "uns.live" and r.levelno >= logging.INFO]
    assert lines[0] == ("live push to the channel layer failing (ConnectionError: Error 111 connecting to "
                        "127.0.0.1:6379. Connection refused.); counting failures until a send succeeds "
                        "(subscribers catch up from the timeline)")
    # drain() during the outage reports the counts so far (as runworker does when it exits).
    assert lines[1].startswith("live push to the channel layer still failing after ")
    assert lines[1].endswith("s (30 sends failed, 15 events not pushed live)")
    assert lines[2].startswith("live push to the channel layer succeeds again after ")
    assert lines[2].endswith("s (30 sends failed, 15 events not pushed live)")
    assert len(lines) == 3
    assert not any(r.exc_info for r in caplog.records if r.levelno >= logging.INFO)
    assert [eid for _g, eid in sent] == [ev.id for ev in events[15:] for _ in range(2)]


def test_drain_during_an_outage_logs_the_counts_so_far(layer, monkeypatch, caplog):
    async def broken(group, message):
        raise ConnectionError("down")

    monkeypatch.setattr(layer, "group_send", broken)
    publisher = live.ChannelsPublisher()
    with caplog.at_level(logging.INFO, logger="uns.live"):
        publisher([timeline.event(NID, "ACCEPTED", {}, 1.0)])
        assert publisher.drain(5)
    assert "live push to the channel layer still failing after" in caplog.text
    assert "(2 sends failed, 1 events not pushed live)" in caplog.text
