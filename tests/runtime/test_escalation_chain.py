"""Escalation chains on the fake clock: the levels of the frozen policy fire in order
after the acknowledgement deadline, each after the previous level's wait, repeated as the level
says; a response at any level stops the whole chain in its own transaction; a level that cannot
be sent is recorded and skipped; the end is recorded; manual escalation jumps a level; the
chain's timers are rows, so a pass long after a deadline fires the due level once."""
from unittest import mock

import pytest

from notifications.models import Channel, Notification
from notifications.runtime import Conflict
from notifications.runtime.escalation import chain_view, escalation_ids
from rthelpers import kinds, only_event, request, row, timeline

pytestmark = pytest.mark.django_db

CHAIN = {"levels": [
    {"channels": ["lead"], "wait_seconds": 60},
    {"channels": ["manager"], "wait_seconds": 120, "repeat": 2},
    {"channels": ["director", "cto"], "wait_seconds": 300},
]}


@pytest.fixture
def levels(db):
    """In-app console channels for each level of ``CHAIN``."""
    return [Channel.objects.create(name=n, kind="console", config={}) for n in ("lead", "manager", "director", "cto")]


@pytest.fixture
def chained(policy, levels):
    return policy(escalation=CHAIN)


def delivered(rt, clock, **fields):
    n = rt.accept("alice", request(require_ack=True, **fields)).notification
    clock.advance(5)
    [report] = rt.dispatch()
    assert report.status == "DELIVERED"
    return n.id


def fired(nid):
    """``(level, repetition, channels)`` of each ESCALATED event of ``nid``."""
    return [(e.payload["level"], e.payload["repetition"], e.payload["channels"]) for e in timeline(nid, "ESCALATED")]


def escalation_of(nid, number):
    ev = [e for e in timeline(nid, "ESCALATED") if e.payload["escalation_number"] == number]
    return row(ev[0].payload["escalation_id"])


def timed_out(rt, clock):
    nid = delivered(rt, clock)
    clock.now = row(nid).deadline
    assert rt.expire() == [nid]
    return nid


def test_without_a_response_the_levels_fire_in_order_then_the_chain_ends(rt, clock, channel, chained):
    nid = timed_out(rt, clock)
    start = clock.now
    assert fired(nid) == [(1, 1, ["lead"])]
    r = row(nid)
    assert (r.escalation_state, r.escalation_step, r.escalation_due) == ("ACTIVE", 1, start + 60)
    esc = escalation_of(nid, 1)
    assert esc.notification["channels"] == ["lead"] and esc.notification["metadata"]["escalation_level"] == 1
    clock.now = start + 59.9
    rt.expire()
    assert len(fired(nid)) == 1  # not yet
    clock.now = start + 60
    rt.expire()
    assert fired(nid)[-1] == (2, 1, ["manager"])
    clock.now = start + 180
    rt.expire()
    assert fired(nid)[-1] == (2, 2, ["manager"])  # the level repeats
    clock.now = start + 300
    rt.expire()
    assert fired(nid)[-1] == (3, 1, ["director", "cto"])
    assert escalation_of(nid, 4).notification["channels"] == ["director", "cto"]
    assert row(nid).escalation_state == "ACTIVE"
    clock.now = start + 599
    rt.expire()
    assert timeline(nid, "ESCALATION_EXHAUSTED") == []
    clock.now = start + 600
    rt.expire()
    end = only_event(nid, "ESCALATION_EXHAUSTED")
    assert end.payload == {"actor": "uns-timeout-worker", "levels": 3, "steps": 4} and end.at == start + 600
    r = row(nid)
    assert (r.escalation_state, r.escalation_due) == ("EXHAUSTED", None)
    assert [e.payload["escalation_number"] for e in timeline(nid, "ESCALATED")] == [1, 2, 3, 4]
    clock.advance(10_000)
    rt.expire()
    assert len(fired(nid)) == 4
    assert kinds(nid).count("ESCALATION_EXHAUSTED") == 1


@pytest.mark.parametrize("dismiss", [False, True])
def test_a_response_on_an_escalation_stops_the_whole_chain(rt, clock, channel, chained, dismiss):
    nid = timed_out(rt, clock)
    start = clock.now
    clock.now = start + 60
    rt.expire()  # level 2 fires
    rt.dispatch()
    first = escalation_of(nid, 1)  # a response at level 1, while level 2 is active
    clock.advance(1)
    rt.acknowledge(first.id, "carol", dismiss=dismiss)
    stop = only_event(nid, "ESCALATION_STOPPED")
    assert stop.payload == {"actor": "carol", "response": "DISMISSED" if dismiss else "ACKED",
                            "responded_on": first.id, "level": 2, "steps": 2}
    r = row(nid)
    assert (r.escalation_state, r.escalation_due) == ("RESPONDED", None)
    # level 2's escalation was closed with the chain: a second response finds it settled
    with pytest.raises(Conflict) as refused:
        rt.acknowledge(escalation_of(nid, 2).id, "dave")
    assert refused.value.code == "ack_conflict"
    assert len(timeline(nid, "ESCALATION_STOPPED")) == 1
    for t in (180, 300, 600, 5000):
        clock.now = start + t
        rt.expire()
    assert len(fired(nid)) == 2
    assert timeline(nid, "ESCALATION_EXHAUSTED") == []


def test_a_response_committed_before_the_due_pass_fires_nothing(rt, clock, channel, chained):
    """The worker was slow: the next level is long due when the ACK commits; the pass after it
    finds the chain RESPONDED and its fence matches nothing."""
    nid = timed_out(rt, clock)
    rt.dispatch()
    clock.advance(500)  # level 2 was due 440 s ago
    rt.acknowledge(escalation_of(nid, 1).id, "carol")
    rt.expire()
    assert len(fired(nid)) == 1


def test_the_fence_refuses_a_step_on_a_stale_read(rt, clock, channel, chained):
    """A pass that read the row as ACTIVE before the response committed claims the step with a
    conditional UPDATE on the chain's state: after the response it matches nothing, so the
    level does not fire (PostgreSQL races: tests/concurrency/test_concurrent_escalation_chain.py)."""
    from notifications.runtime import escalation

    nid = timed_out(rt, clock)
    rt.dispatch()
    clock.advance(60)
    assert row(nid).escalation_step == 1  # what the pass read
    rt.acknowledge(escalation_of(nid, 1).id, "carol")
    assert escalation._fence(nid, 1, clock.now, escalation_step=2) is False
    assert escalation._advance(rt, nid, clock.now) == (False, False)
    assert len(fired(nid)) == 1 and row(nid).escalation_state == "RESPONDED"


def test_a_response_on_the_original_stops_a_chain_started_by_hand(rt, clock, channel, chained):
    nid = delivered(rt, clock)
    result = rt.escalate(nid, "bob", "paging the lead now")
    assert (result.level, result.channels, result.number) == (1, ("lead",), 1)
    r = row(nid)
    assert (r.ack_status, r.escalation_state, r.escalation_due) == ("PENDING", "ACTIVE", clock.now + 60)
    clock.advance(10)
    rt.acknowledge(nid, "carol")
    assert only_event(nid, "ESCALATION_STOPPED").payload["responded_on"] == nid
    clock.advance(10_000)
    rt.expire()
    assert len(fired(nid)) == 1


def test_the_timeout_does_not_restart_a_chain_started_by_hand(rt, clock, channel, chained):
    nid = delivered(rt, clock)
    rt.escalate(nid, "bob", "early")
    started = clock.now
    clock.now = row(nid).deadline  # 15 min later: level 2 fired long ago?
    rt.expire()
    # the pass fires the one due step (level 2), not level 1 again
    assert fired(nid) == [(1, 1, ["lead"]), (2, 1, ["manager"])]
    assert row(nid).ack_status == "TIMED_OUT" and row(nid).escalation_due == clock.now + 120
    assert started < clock.now


def test_manual_escalation_jumps_to_the_next_level(rt, clock, channel, chained):
    nid = timed_out(rt, clock)  # level 1 fired
    clock.advance(5)
    second = rt.escalate(nid, "bob", "lead is asleep")
    assert (second.level, second.number, second.channels) == (2, 2, ("manager",))
    assert row(nid).escalation_due == clock.now + 120 and row(nid).escalation_step == 2
    third = rt.escalate(nid, "bob", "manager too")  # skips level 2's repetition
    assert (third.level, third.number) == (3, 3)
    again = rt.escalate(nid, "bob", "still nothing")  # the last level again
    assert (again.level, again.number) == (3, 4)
    assert [e.payload["actor"] for e in timeline(nid, "ESCALATED")] == ["uns-timeout-worker", "bob", "bob", "bob"]
    clock.advance(300)
    rt.expire()
    assert row(nid).escalation_state == "EXHAUSTED" and len(fired(nid)) == 4


def test_manual_escalation_after_a_response_is_refused(rt, clock, channel, chained):
    nid = timed_out(rt, clock)
    rt.dispatch()
    rt.acknowledge(escalation_of(nid, 1).id, "carol")
    with pytest.raises(Conflict) as err:
        rt.escalate(nid, "bob", "again")
    assert err.value.code == "escalation_stopped"
    assert len(fired(nid)) == 1


def test_a_level_that_cannot_be_sent_is_recorded_and_the_chain_moves_on(rt, clock, channel, chained):
    nid = timed_out(rt, clock)
    Channel.objects.filter(name="manager").update(enabled=False)
    clock.advance(60)
    rt.expire()
    failed = only_event(nid, "ESCALATION_FAILED")
    assert failed.payload["level"] == 2 and failed.payload["channels"] == ["manager"]
    assert failed.payload["code"] == "unknown_channel"
    # level 2 (and its repetition) skipped: level 3 fires in the same pass
    assert fired(nid) == [(1, 1, ["lead"]), (3, 1, ["director", "cto"])]
    assert row(nid).escalation_due == clock.now + 300


def test_a_last_level_that_cannot_be_sent_ends_the_chain(rt, clock, channel, chained):
    nid = timed_out(rt, clock)
    Channel.objects.filter(name__in=["manager", "director"]).update(enabled=False)
    clock.advance(60)
    rt.expire()
    assert [e.payload["level"] for e in timeline(nid, "ESCALATION_FAILED")] == [2, 3]
    assert row(nid).escalation_state == "EXHAUSTED"
    assert kinds(nid)[-1] == "ESCALATION_EXHAUSTED"


def test_a_pass_long_after_several_deadlines_fires_the_due_level_once(rt, clock, channel, chained):
    """The worker was down from before level 2's deadline until after level 3's would have
    been: the timer is a row, so the next pass fires level 2 once, and the next levels keep
    their full wait from when level 2 really fired."""
    nid = timed_out(rt, clock)
    clock.advance(3600)
    rt.expire()
    rt.expire()
    assert fired(nid) == [(1, 1, ["lead"]), (2, 1, ["manager"])]
    assert row(nid).escalation_due == clock.now + 120


def test_a_crash_during_a_level_leaves_it_due(rt, clock, channel, chained):
    nid = timed_out(rt, clock)
    clock.advance(60)
    with mock.patch("notifications.runtime.intake.accept", side_effect=RuntimeError("killed")):
        rt.expire()
    r = row(nid)
    assert (r.escalation_state, r.escalation_step, r.escalation_due) == ("ACTIVE", 1, clock.now)
    clock.advance(1)
    rt.expire()
    assert fired(nid)[-1] == (2, 1, ["manager"]) and len(fired(nid)) == 2


def test_the_chain_is_frozen_at_acceptance(rt, clock, channel, chained):
    nid = delivered(rt, clock)
    frozen = row(nid).notification["metadata"]["uns_resolution"]["effective"]["escalation"]
    assert frozen == CHAIN
    # whatever the policy says later, the row's own copy drives its chain
    Notification.objects.filter(id=nid).update(notification={
        **row(nid).notification,
        "metadata": {**row(nid).notification["metadata"], "uns_resolution": {
            **row(nid).notification["metadata"]["uns_resolution"],
            "effective": {**row(nid).notification["metadata"]["uns_resolution"]["effective"],
                          "escalation": {"target": "cto"}}}}})
    clock.now = row(nid).deadline
    rt.expire()
    assert fired(nid) == [(1, 1, ["cto"])]


def test_chain_view_shows_the_active_level_what_fired_and_who_responded(rt, clock, channel, chained):
    nid = timed_out(rt, clock)
    clock.advance(60)
    rt.expire()
    rt.dispatch()
    first = escalation_of(nid, 1)
    rt.acknowledge(first.id, "carol")
    events = timeline(nid)
    r = row(nid)
    view = chain_view(r, events, {e.id: e for e in Notification.objects.filter(id__in=escalation_ids(events))})
    assert view["state"] == "RESPONDED" and view["active_level"] == 2 and view["steps_fired"] == 2
    assert [lv["level"] for lv in view["levels"]] == [1, 2, 3]
    assert [(f["level"], f["repetition"]) for f in view["fired"]] == [(1, 1), (2, 1)]
    assert view["fired"][0]["responded_by"] == "carol" and view["fired"][0]["ack_status"] == "ACKED"
    assert view["fired"][0]["closed_by_chain"] is False
    # level 2's escalation was closed by carol's response on level 1
    assert view["fired"][1]["responded_by"] == "carol" and view["fired"][1]["closed_by_chain"] is True
    assert view["stopped"]["actor"] == "carol" and view["stopped"]["responded_on"] == first.id
    assert view["next"] is None and view["can_escalate"] is False


def test_without_a_chain_the_view_is_none(rt, clock, channel):
    nid = delivered(rt, clock)
    assert chain_view(row(nid), timeline(nid), {}) is None
