"""``escalate`` and the automatic escalation of ``expire()``: a new notification to
the frozen policy's escalation target, accepted through intake (so delivered and retried like
any other), and ESCALATED on the original, in one transaction; the automatic one in its own
transaction after the TIMED_OUT one, fenced by ``escalation_due``."""
from unittest import mock

import pytest

from core.schema import parse
from notifications.models import Channel, Notification
from notifications.runtime import Conflict, InvalidRequest, NotFound, schemas
from rthelpers import counts, kinds, only_event, request, row, timeline

pytestmark = pytest.mark.django_db

ESCALATION = {"target": "oncall"}


@pytest.fixture
def oncall(db):
    """The escalation target: an in-app console channel named ``oncall``."""
    return Channel.objects.create(name="oncall", kind="console", config={})


@pytest.fixture
def escalating(policy, oncall):
    """A policy whose defaults escalate to ``oncall``."""
    return policy(escalation=ESCALATION)


def delivered(rt, clock, **fields):
    n = rt.accept("alice", request(require_ack=True, **fields)).notification
    clock.advance(5)
    [report] = rt.dispatch()
    assert report.status == "DELIVERED"
    return n.id


def test_escalate_sends_a_new_notification_to_the_target(rt, clock, channel, escalating):
    nid = delivered(rt, clock, title="disk full", body="sda1 at 99%", severity="error")
    clock.advance(60)
    result = rt.escalate(nid, "bob", "nobody is looking")
    assert result.created and result.number == 1 and result.target == "oncall"
    esc = row(result.escalation.id)
    assert esc.principal == "uns-escalation" and esc.status == "PENDING"
    n = esc.notification
    assert n["title"] == "ESCALATED: disk full" and n["body"] == "sda1 at 99%" and n["severity"] == "error"
    assert n["channels"] == ["oncall"] and n["require_ack"] is True and n["source"] == "billing"
    assert {k: n["metadata"][k] for k in ("escalated_from", "escalation_number", "escalation_reason", "escalated_by")} == {
        "escalated_from": nid, "escalation_number": 1, "escalation_reason": "nobody is looking", "escalated_by": "bob"}
    assert kinds(esc.id) == ["ACCEPTED"]
    ev = only_event(nid, "ESCALATED")
    assert ev.at == clock.now
    assert ev.payload == {"actor": "bob", "reason": "nobody is looking", "target": "oncall",
                          "channels": ["oncall"], "level": 1, "repetition": 1,
                          "escalation_id": esc.id, "escalation_number": 1, "request_id": None}
    # the original keeps waiting for its own response
    assert row(nid).ack_status == "PENDING"
    # and the escalation is delivered like any other notification
    [report] = rt.dispatch()
    assert (report.id, report.status) == (esc.id, "DELIVERED")
    assert row(esc.id).ack_status == "PENDING"


def test_each_escalation_is_numbered_and_separate(rt, clock, channel, escalating):
    nid = delivered(rt, clock)
    first = rt.escalate(nid, "bob", "one")
    second = rt.escalate(nid, "bob", "two")
    assert (first.number, second.number) == (1, 2)
    assert first.escalation.id != second.escalation.id
    assert [e.payload["escalation_number"] for e in timeline(nid, "ESCALATED")] == [1, 2]


def test_same_request_id_is_idempotent(rt, clock, channel, escalating):
    nid = delivered(rt, clock)
    first = rt.escalate(nid, "bob", "once", request_id="r-1")
    before = counts()
    again = rt.escalate(nid, "bob", "once", request_id="r-1")
    assert not again.created and again.escalation.id == first.escalation.id and again.number == 1
    assert counts() == before


def test_escalation_idempotency_key_derives_from_original_and_number(rt, clock, channel, escalating):
    from core.keys import idempotency_key

    nid = delivered(rt, clock)
    esc = rt.escalate(nid, "bob").escalation
    assert esc.key == idempotency_key("uns-escalation", "billing", f"escalation:{nid}:1")


def test_no_escalation_target_is_a_conflict_and_writes_nothing(rt, clock, channel):
    nid = delivered(rt, clock)  # the bootstrap policy names no escalation target
    before = counts()
    with pytest.raises(Conflict) as err:
        rt.escalate(nid, "bob", "help")
    assert err.value.code == "no_escalation_target"
    assert counts() == before


def test_target_that_refuses_is_a_conflict_and_writes_nothing(rt, clock, channel, escalating, oncall):
    nid = delivered(rt, clock)
    Channel.objects.filter(name="oncall").update(enabled=False)
    before = counts()
    with pytest.raises(Conflict) as err:
        rt.escalate(nid, "bob", "help")
    assert err.value.code == "escalation_target_unavailable"
    assert err.value.extra["cause"] == "unknown_channel" and err.value.extra["target"] == "oncall"
    assert counts() == before


def test_not_yet_delivered_cannot_be_escalated(rt, clock, channel, escalating):
    n = rt.accept("alice", request(require_ack=True)).notification
    with pytest.raises(Conflict) as err:
        rt.escalate(n.id, "bob")
    assert err.value.code == "not_awaiting_ack"


def test_without_require_ack_cannot_be_escalated(rt, clock, channel, escalating):
    n = rt.accept("alice", request()).notification
    rt.dispatch()
    with pytest.raises(Conflict) as err:
        rt.escalate(n.id, "bob")
    assert err.value.code == "ack_not_required"


@pytest.mark.parametrize("dismiss", [False, True])
def test_settled_notification_cannot_be_escalated(rt, clock, channel, escalating, dismiss):
    nid = delivered(rt, clock)
    rt.acknowledge(nid, "carol", dismiss=dismiss)
    before = counts()
    with pytest.raises(Conflict) as err:
        rt.escalate(nid, "bob")
    assert err.value.code == "ack_conflict"
    assert counts() == before


def test_settled_between_read_and_fence_is_a_conflict(rt, clock, channel, escalating):
    nid = delivered(rt, clock)
    stale = Notification.objects.get(id=nid)
    rt.acknowledge(nid, "carol")
    before = counts()
    with mock.patch("notifications.runtime.rows.get",
                    side_effect=[stale, Notification.objects.get(id=nid)]):
        with pytest.raises(Conflict) as err:
            rt.escalate(nid, "bob")
    assert err.value.code == "ack_conflict"
    assert counts() == before


def test_unknown_notification_is_not_found(rt, channel, escalating):
    with pytest.raises(NotFound):
        rt.escalate("00000000-0000-4000-8000-000000000000", "bob")


@pytest.mark.parametrize("reason", [123, "x" * 1001, "a\x00"], ids=["number", "too-long", "nul"])
def test_reason_is_refused_as_the_escalate_schema_refuses_it(rt, clock, channel, escalating, reason):
    """The runtime parses ``reason`` with ``schemas.EscalateRequest``, the model HTTP parses the
    body with: the same code and ``errors`` (one rule, one place), nothing written."""
    nid = delivered(rt, clock)
    with pytest.raises(InvalidRequest) as expected:
        parse(schemas.EscalateRequest, {"reason": reason})
    before = counts()
    with pytest.raises(InvalidRequest) as err:
        rt.escalate(nid, "bob", reason)
    assert (err.value.code, err.value.extra["errors"]) == (expected.value.code, expected.value.extra["errors"])
    assert counts() == before


def test_the_escalation_title_is_clipped_to_the_submit_limit(rt, clock, channel, escalating):
    nid = delivered(rt, clock, title="t" * schemas.MAX_TITLE)
    result = rt.escalate(nid, "bob")
    assert result.escalation.notification["title"] == ("ESCALATED: " + "t" * schemas.MAX_TITLE)[:schemas.MAX_TITLE]


def test_expire_auto_escalates_in_the_same_sweep(rt, clock, channel, escalating):
    nid = delivered(rt, clock)
    clock.now = row(nid).deadline
    assert rt.expire() == [nid]
    assert row(nid).ack_status == "TIMED_OUT"
    # the one-target form is a one-level chain: it fires, and with nothing after it, ends
    assert kinds(nid)[-3:] == ["TIMED_OUT", "ESCALATED", "ESCALATION_EXHAUSTED"]
    ev = only_event(nid, "ESCALATED")
    assert ev.payload["actor"] == "uns-timeout-worker"
    assert ev.payload["reason"] == "acknowledgement deadline passed"
    esc = row(ev.payload["escalation_id"])
    assert esc.principal == "uns-escalation" and esc.notification["metadata"]["escalated_from"] == nid
    # the escalation itself is delivered by the next dispatch pass
    [report] = rt.dispatch()
    assert report.id == esc.id and report.status == "DELIVERED"


def test_a_failing_escalation_keeps_the_timeout_and_stays_due(rt, clock, channel, escalating):
    """A failure while escalating (not a refusal: a bug or a database error) rolls back only the
    escalation's own transaction: the row stays TIMED_OUT with its escalation due, and the next
    pass escalates it, once (one transition, one transaction)."""
    nid = delivered(rt, clock)
    clock.now = row(nid).deadline
    notifications_before = Notification.objects.count()
    with mock.patch("notifications.runtime.intake.accept", side_effect=RuntimeError("boom")):
        assert rt.expire() == [nid]
    assert row(nid).ack_status == "TIMED_OUT" and row(nid).escalation_due == clock.now
    assert timeline(nid, "ESCALATED") == [] and timeline(nid, "ESCALATION_FAILED") == []
    assert Notification.objects.count() == notifications_before
    clock.advance(30)
    assert rt.expire() == []  # nothing new to time out; the due escalation runs
    assert len(timeline(nid, "ESCALATED")) == 1 and row(nid).escalation_due is None
    rt.expire()
    assert len(timeline(nid, "ESCALATED")) == 1


def test_crash_between_timeout_and_escalation_escalates_on_the_next_pass(rt, clock, channel, escalating):
    """The worker dies after the TIMED_OUT transaction committed and before the escalation
    step: the timeout is durable, the escalation is recorded as due, and the next pass (a later
    fake-clock time) performs it exactly once."""
    nid = delivered(rt, clock)
    clock.now = row(nid).deadline
    with mock.patch("notifications.runtime.escalation.escalate_due", side_effect=SystemExit("worker killed")):
        with pytest.raises(SystemExit):
            rt.expire()
    r = row(nid)
    assert (r.ack_status, r.actor, r.escalation_due) == ("TIMED_OUT", "uns-timeout-worker", clock.now)
    assert kinds(nid)[-1] == "TIMED_OUT" and timeline(nid, "ESCALATED") == []
    clock.advance(120)
    assert rt.expire() == []
    ev = only_event(nid, "ESCALATED")
    assert ev.payload["actor"] == "uns-timeout-worker" and ev.payload["escalation_number"] == 1
    assert ev.at == clock.now and row(nid).escalation_due is None
    clock.advance(120)
    rt.expire()
    assert len(timeline(nid, "ESCALATED")) == 1
    assert Notification.objects.filter(principal="uns-escalation").count() == 1


def test_timeout_without_a_target_records_no_escalation_due(rt, clock, channel):
    nid = delivered(rt, clock)
    clock.now = row(nid).deadline
    with mock.patch("notifications.runtime.escalation.escalate_due", side_effect=SystemExit("worker killed")):
        with pytest.raises(SystemExit):
            rt.expire()
    assert row(nid).ack_status == "TIMED_OUT" and row(nid).escalation_due is None


def test_each_timeout_is_its_own_transaction(rt, clock, channel, escalating):
    """A row that fails to time out (its event insert raises) does not take the other rows of
    the sweep back with it."""
    from notifications.runtime import timeline as timeline_module  # timeline() is this file's helper

    first, second = delivered(rt, clock), delivered(rt, clock)
    clock.now = max(row(first).deadline, row(second).deadline)
    real = timeline_module.insert_events
    calls = []

    def flaky(runtime, events):
        calls.append(events)
        if len(calls) == 2:
            raise RuntimeError("disk full")
        return real(runtime, events)

    with mock.patch("notifications.runtime.timeline.insert_events", side_effect=flaky):
        with pytest.raises(RuntimeError):
            rt.expire()
    states = sorted(row(n).ack_status for n in (first, second))
    assert states == ["PENDING", "TIMED_OUT"]
    assert rt.expire() and {row(n).ack_status for n in (first, second)} == {"TIMED_OUT"}
    assert all(len(timeline(n, "TIMED_OUT")) == 1 and len(timeline(n, "ESCALATED")) == 1 for n in (first, second))


def test_refused_auto_escalation_still_times_out_and_records_the_failure(rt, clock, channel, escalating):
    nid = delivered(rt, clock)
    Channel.objects.filter(name="oncall").update(enabled=False)
    clock.now = row(nid).deadline
    notifications_before = Notification.objects.count()
    assert rt.expire() == [nid]
    assert row(nid).ack_status == "TIMED_OUT"
    failed = only_event(nid, "ESCALATION_FAILED")
    assert failed.payload["target"] == "oncall" and failed.payload["code"] == "unknown_channel"
    assert timeline(nid, "ESCALATED") == []
    assert Notification.objects.count() == notifications_before


def test_no_target_no_auto_escalation(rt, clock, channel):
    nid = delivered(rt, clock)
    clock.now = row(nid).deadline
    assert rt.expire() == [nid]
    assert kinds(nid)[-1] == "TIMED_OUT"
    assert timeline(nid, "ESCALATED") == [] and timeline(nid, "ESCALATION_FAILED") == []


def test_an_escalation_that_times_out_is_not_escalated_again(rt, clock, channel, escalating):
    nid = delivered(rt, clock)
    clock.now = row(nid).deadline
    rt.expire()
    esc_id = only_event(nid, "ESCALATED").payload["escalation_id"]
    rt.dispatch()
    clock.now = row(esc_id).deadline
    assert rt.expire() == [esc_id]
    assert row(esc_id).ack_status == "TIMED_OUT"
    assert timeline(esc_id, "ESCALATED") == []
    # by hand it still can be
    assert rt.escalate(esc_id, "bob", "still nobody").number == 1


def test_timed_out_notification_can_be_escalated_again_by_hand(rt, clock, channel, escalating):
    nid = delivered(rt, clock)
    clock.now = row(nid).deadline
    rt.expire()
    again = rt.escalate(nid, "bob", "paging the manager")
    assert again.number == 2
    assert [e.payload["actor"] for e in timeline(nid, "ESCALATED")] == ["uns-timeout-worker", "bob"]


def test_escalation_target_comes_from_the_matching_rule_frozen_on_the_row(rt, clock, channel, policy, oncall):
    policy(rules=[{"name": "errors-escalate", "match": {"severity": ["error"]}, "set": {"escalation": ESCALATION}}])
    nid = delivered(rt, clock, severity="error")
    other = delivered(rt, clock, severity="warning")
    assert row(nid).notification["metadata"]["uns_resolution"]["effective"]["escalation"] == ESCALATION
    assert rt.escalate(nid, "bob").target == "oncall"
    with pytest.raises(Conflict) as err:
        rt.escalate(other, "bob")
    assert err.value.code == "no_escalation_target"
