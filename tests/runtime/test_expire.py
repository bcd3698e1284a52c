"""``Runtime.expire``: ack_status PENDING rows whose deadline <= now become TIMED_OUT, swept by
"uns-timeout-worker" with metadata {"escalation_required": true} (reference 1.2)."""
import pytest

from notifications.models import AckAuditRecord
from rthelpers import counts, only_event, request, row

pytestmark = pytest.mark.django_db

TIMEOUT_METADATA = {"escalation_required": True}


def delivered(rt, clock, **fields):
    n = rt.accept("alice", request(require_ack=True, **fields)).notification
    rt.dispatch()
    assert row(n.id).ack_status == "PENDING"
    return n.id


def test_nothing_is_swept_before_the_deadline(rt, clock, channel):
    nid = delivered(rt, clock)
    clock.now = row(nid).deadline - 0.001
    before = counts()
    assert rt.expire() == []
    assert counts() == before
    assert row(nid).ack_status == "PENDING"


def test_sweep_at_the_deadline_times_out_with_event_and_audit(rt, clock, channel):
    nid = delivered(rt, clock)
    deadline = row(nid).deadline
    clock.now = deadline
    assert rt.expire() == [nid]
    r = row(nid)
    assert (r.ack_status, r.actor, r.responded_at, r.response_metadata) == (
        "TIMED_OUT", "uns-timeout-worker", deadline, TIMEOUT_METADATA)
    assert r.status == "DELIVERED" and r.deadline == deadline
    ev = only_event(nid, "TIMED_OUT")
    assert ev.payload == {"actor": "uns-timeout-worker", "metadata": {"escalation_required": True}}
    assert ev.at == deadline
    assert ev.callback_pending is True  # always enqueued; the draining worker resolves the URL
    audit = AckAuditRecord.objects.get(notification_id=nid)
    assert (audit.old_status, audit.new_status, audit.acked_by, audit.acked_at, audit.ack_metadata) == (
        "PENDING", "TIMED_OUT", "uns-timeout-worker", deadline, TIMEOUT_METADATA)


def test_sweep_is_idempotent(rt, clock, channel):
    nid = delivered(rt, clock)
    clock.now = row(nid).deadline + 10
    assert rt.expire() == [nid]
    before = counts()
    clock.advance(3600)
    assert rt.expire() == []
    assert counts() == before


def test_only_overdue_pending_responses_are_swept(rt, clock, channel, policy):
    policy(ack_timeout_minutes=1)
    overdue = delivered(rt, clock)
    acked = delivered(rt, clock)
    rt.acknowledge(acked, "bob")
    no_ack = rt.accept("alice", request()).notification.id
    rt.dispatch()
    clock.advance(30)
    later = delivered(rt, clock)  # its deadline is 30 s after the others'
    undelivered = rt.accept("alice", request(require_ack=True)).notification.id

    clock.now = row(overdue).deadline
    assert rt.expire() == [overdue]
    assert row(acked).ack_status == "ACKED"
    assert row(no_ack).ack_status is None
    assert row(later).ack_status == "PENDING"
    assert row(undelivered).ack_status is None and row(undelivered).status == "PENDING"

    clock.now = row(later).deadline
    assert rt.expire() == [later]


def test_sweep_takes_oldest_deadlines_first_up_to_the_limit(rt, clock, channel):
    ids = []
    for _ in range(3):
        ids.append(delivered(rt, clock))
        clock.advance(1)
    clock.advance(3600)
    assert rt.expire(limit=2) == ids[:2]
    assert rt.expire(limit=2) == ids[2:]
