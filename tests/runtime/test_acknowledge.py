"""Acknowledgement lifecycle (reference 1.2): NULL -> PENDING at delivery when require_ack,
then ACKED / DISMISSED before the deadline, once, by one actor."""
import pytest

from notifications.models import AckAuditRecord
from notifications.runtime import Conflict, InvalidRequest, NotFound
from rthelpers import counts, fail, only_event, request, row, timeline

pytestmark = pytest.mark.django_db


def delivered(rt, clock, **fields):
    n = rt.accept("alice", request(require_ack=True, **fields)).notification
    clock.advance(7)
    [report] = rt.dispatch()
    assert report.status == "DELIVERED"
    return n.id


def test_delivery_with_require_ack_opens_the_ack_window(rt, clock, channel):
    n = rt.accept("alice", request(require_ack=True)).notification
    assert row(n.id).ack_status is None and row(n.id).deadline is None  # not yet delivered
    clock.advance(7)
    rt.dispatch()
    r = row(n.id)
    assert r.ack_status == "PENDING"
    assert r.delivered_at == clock.now
    assert r.deadline == r.delivered_at + 60 * 15.0  # bootstrap ack_timeout_minutes
    assert r.actor is None and r.responded_at is None


def test_deadline_follows_the_policy_timeout(rt, clock, channel, policy):
    policy(ack_timeout_minutes=2.5)
    nid = delivered(rt, clock)
    assert row(nid).deadline == row(nid).delivered_at + 150.0


def test_require_ack_from_policy_rule(rt, clock, channel):
    # the bootstrap rule "critical-needs-ack" asks for acknowledgement; the request did not
    n = rt.accept("alice", request(severity="critical")).notification
    rt.dispatch()
    assert row(n.id).ack_status == "PENDING"
    assert row(n.id).deadline == row(n.id).delivered_at + 900.0


def test_no_ack_window_without_require_ack(rt, clock, channel):
    n = rt.accept("alice", request()).notification
    rt.dispatch()
    r = row(n.id)
    assert r.status == "DELIVERED" and r.ack_status is None and r.deadline is None


def test_retry_does_not_open_the_ack_window(rt, clock, webhook, channel):
    n = rt.accept("alice", request(require_ack=True)).notification
    webhook.script.append(fail())
    rt.dispatch()
    assert row(n.id).ack_status is None and row(n.id).deadline is None


@pytest.mark.parametrize("dismiss,state", [(False, "ACKED"), (True, "DISMISSED")])
def test_response_before_deadline_settles_with_event_and_audit(rt, clock, channel, dismiss, state):
    nid = delivered(rt, clock)
    clock.advance(60)
    out = rt.acknowledge(nid, "bob", dismiss=dismiss, metadata={"note": "on it"})
    assert out.id == nid and out.ack_status == state
    r = row(nid)
    assert (r.ack_status, r.actor, r.responded_at, r.response_metadata) == (state, "bob", clock.now,
                                                                          {"note": "on it"})
    assert r.status == "DELIVERED"
    ev = only_event(nid, state)
    assert ev.payload == {"actor": "bob", "metadata": {"note": "on it"}}
    assert ev.at == clock.now
    assert ev.callback_pending is True  # always enqueued; the draining worker resolves the URL
    audit = AckAuditRecord.objects.get(notification_id=nid)
    assert (audit.old_status, audit.new_status, audit.acked_by, audit.acked_at, audit.ack_metadata,
            audit.created_at) == ("PENDING", state, "bob", clock.now, {"note": "on it"}, clock.now)


def test_metadata_defaults_to_an_empty_object(rt, clock, channel):
    nid = delivered(rt, clock)
    rt.acknowledge(nid, "bob")
    assert only_event(nid, "ACKED").payload == {"actor": "bob", "metadata": {}}
    assert row(nid).response_metadata == {}


@pytest.mark.parametrize("dismiss", [False, True])
def test_same_actor_repeat_is_idempotent(rt, clock, channel, dismiss):
    nid = delivered(rt, clock)
    first = rt.acknowledge(nid, "bob", dismiss=dismiss)
    before = counts()
    clock.advance(30)
    again = rt.acknowledge(nid, "bob", dismiss=dismiss)
    assert (again.ack_status, again.actor, again.responded_at) == (first.ack_status, "bob", first.responded_at)
    assert counts() == before


def test_other_actor_is_a_conflict(rt, clock, channel):
    nid = delivered(rt, clock)
    rt.acknowledge(nid, "bob")
    before = counts()
    with pytest.raises(Conflict) as err:
        rt.acknowledge(nid, "carol")
    assert err.value.code == "ack_conflict" and err.value.status == 409
    assert counts() == before
    assert row(nid).actor == "bob"


def test_other_response_by_the_same_actor_is_a_conflict(rt, clock, channel):
    nid = delivered(rt, clock)
    rt.acknowledge(nid, "bob")
    with pytest.raises(Conflict) as err:
        rt.acknowledge(nid, "bob", dismiss=True)
    assert err.value.code == "ack_conflict"
    assert row(nid).ack_status == "ACKED"


def test_ack_after_timeout_is_a_conflict(rt, clock, channel):
    nid = delivered(rt, clock)
    clock.now = row(nid).deadline
    assert rt.expire() == [nid]
    before = counts()
    with pytest.raises(Conflict) as err:
        rt.acknowledge(nid, "bob")
    assert err.value.code == "ack_timed_out" and err.value.status == 409
    assert counts() == before
    assert row(nid).ack_status == "TIMED_OUT"


def test_ack_at_the_deadline_before_the_sweep_is_a_conflict(rt, clock, channel):
    nid = delivered(rt, clock)
    clock.now = row(nid).deadline
    before = counts()
    with pytest.raises(Conflict) as err:
        rt.acknowledge(nid, "bob")
    assert err.value.code == "ack_timed_out"
    assert counts() == before
    assert row(nid).ack_status == "PENDING"  # expire() owns the TIMED_OUT transition


def test_ack_just_before_the_deadline_is_accepted(rt, clock, channel):
    nid = delivered(rt, clock)
    clock.now = row(nid).deadline - 0.001
    assert rt.acknowledge(nid, "bob").ack_status == "ACKED"


def test_ack_not_required(rt, clock, channel):
    n = rt.accept("alice", request()).notification
    rt.dispatch()
    before = counts()
    with pytest.raises(Conflict) as err:
        rt.acknowledge(n.id, "bob")
    assert err.value.code == "ack_not_required"
    assert counts() == before


def test_ack_before_delivery_is_not_awaiting_ack(rt, clock, webhook, channel):
    n = rt.accept("alice", request(require_ack=True)).notification
    before = counts()
    with pytest.raises(Conflict) as err:
        rt.acknowledge(n.id, "bob")
    assert err.value.code == "not_awaiting_ack"
    webhook.script.append(fail())
    rt.dispatch()  # a failed attempt does not open the window either
    with pytest.raises(Conflict) as err:
        rt.acknowledge(n.id, "bob", dismiss=True)
    assert err.value.code == "not_awaiting_ack"
    assert not timeline(n.id, "ACKED") and not timeline(n.id, "DISMISSED")
    assert counts()["ack_audit"] == before["ack_audit"]


def test_unknown_notification_is_not_found(rt, channel):
    before = counts()
    with pytest.raises(NotFound) as err:
        rt.acknowledge("00000000-0000-0000-0000-000000000000", "bob")
    assert err.value.status == 404
    assert counts() == before


@pytest.mark.parametrize("actor,metadata", [("bob", ["not", "an", "object"]), ("bob", "note"), ("", None)])
def test_bad_input_is_invalid_and_writes_nothing(rt, clock, channel, actor, metadata):
    nid = delivered(rt, clock)
    before = counts()
    with pytest.raises(InvalidRequest):
        rt.acknowledge(nid, actor, metadata=metadata)
    assert counts() == before
    assert row(nid).ack_status == "PENDING"
