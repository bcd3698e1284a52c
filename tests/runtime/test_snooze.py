"""``snooze``: postpone the ack deadline of a notification awaiting a response, with a
SNOOZED event and an ack audit row in the same transaction, fenced on the deadline it read."""
from unittest import mock

import pytest

from notifications.models import AckAuditRecord, Notification
from notifications.runtime import Conflict, InvalidRequest, NotFound
from rthelpers import counts, kinds, only_event, request, row, timeline

pytestmark = pytest.mark.django_db


def delivered(rt, clock, **fields):
    n = rt.accept("alice", request(require_ack=True, **fields)).notification
    clock.advance(5)
    [report] = rt.dispatch()
    assert report.status == "DELIVERED"
    return n.id


def test_snooze_moves_the_deadline_and_records_event_and_audit(rt, clock, channel):
    nid = delivered(rt, clock)
    old = row(nid).deadline
    clock.advance(100)
    r = rt.snooze(nid, "bob", 3600, metadata={"note": "after the deploy"})
    assert r.ack_status == "PENDING" and r.actor is None and r.responded_at is None
    assert r.deadline == clock.now + 3600
    ev = only_event(nid, "SNOOZED")
    assert ev.at == clock.now
    assert ev.payload == {"actor": "bob", "previous_deadline": old, "deadline": clock.now + 3600,
                          "seconds": 3600.0, "metadata": {"note": "after the deploy"}, "request_id": None}
    assert not ev.callback_pending  # only ACKED / DISMISSED / TIMED_OUT feed the callback outbox
    [audit] = AckAuditRecord.objects.filter(notification_id=nid)
    assert (audit.old_status, audit.new_status, audit.acked_by, audit.acked_at) == ("PENDING", "PENDING", "bob", clock.now)
    assert audit.ack_metadata["action"] == "snooze"
    assert audit.ack_metadata["previous_deadline"] == old and audit.ack_metadata["deadline"] == r.deadline
    assert audit.ack_metadata["metadata"] == {"note": "after the deploy"}


def test_a_snoozed_notification_times_out_at_the_new_deadline_not_the_old(rt, clock, channel):
    nid = delivered(rt, clock)
    old = row(nid).deadline
    rt.snooze(nid, "bob", 7200)
    clock.now = old + 1
    assert rt.expire() == []
    assert row(nid).ack_status == "PENDING"
    r = rt.acknowledge(nid, "bob")  # still answerable after the original deadline
    assert r.ack_status == "ACKED"


def test_expire_sweeps_at_the_snoozed_deadline(rt, clock, channel):
    nid = delivered(rt, clock)
    r = rt.snooze(nid, "bob", 60)
    clock.now = r.deadline
    assert rt.expire() == [nid]
    assert row(nid).ack_status == "TIMED_OUT"
    assert kinds(nid)[-2:] == ["SNOOZED", "TIMED_OUT"]


def test_snooze_can_shorten_the_deadline_it_means_ask_again_in_n_seconds(rt, clock, channel):
    nid = delivered(rt, clock)  # 15 minutes to answer
    r = rt.snooze(nid, "bob", 60)
    assert r.deadline == clock.now + 60 < only_event(nid, "SNOOZED").payload["previous_deadline"]


def test_repeated_snoozes_each_postpone_and_each_are_audited(rt, clock, channel):
    nid = delivered(rt, clock)
    rt.snooze(nid, "bob", 600)
    clock.advance(500)
    r = rt.snooze(nid, "carol", 600)
    assert r.deadline == clock.now + 600
    events = timeline(nid, "SNOOZED")
    assert [e.payload["actor"] for e in events] == ["bob", "carol"]
    assert events[1].payload["previous_deadline"] == events[0].payload["deadline"]
    assert AckAuditRecord.objects.filter(notification_id=nid, new_status="PENDING").count() == 2


def test_same_request_id_is_idempotent(rt, clock, channel):
    nid = delivered(rt, clock)
    first = rt.snooze(nid, "bob", 600, request_id="req-1")
    clock.advance(30)
    again = rt.snooze(nid, "bob", 600, request_id="req-1")
    assert again.deadline == first.deadline
    assert len(timeline(nid, "SNOOZED")) == 1
    # another request id, or another actor reusing the id, is a new snooze
    rt.snooze(nid, "carol", 600, request_id="req-1")
    rt.snooze(nid, "bob", 600, request_id="req-2")
    assert len(timeline(nid, "SNOOZED")) == 3


@pytest.mark.parametrize("seconds", [59, 59.9, 86401, 0, -60, True, "600", None, float("nan"), float("inf")])
def test_seconds_out_of_bounds_or_not_a_number_is_invalid_and_writes_nothing(rt, clock, channel, seconds):
    nid = delivered(rt, clock)
    before = counts()
    deadline = row(nid).deadline
    with pytest.raises(InvalidRequest) as err:
        rt.snooze(nid, "bob", seconds)
    # NaN and infinity are values UNS cannot store: the one refusal (core.json_values.check_value) names
    # them parse_error on every transport; the rest fail the snooze schema.
    assert err.value.code == ("parse_error" if seconds != seconds or seconds == float("inf") else "invalid_request")
    assert err.value.extra["errors"][0]["field"] == "seconds"
    assert counts() == before and row(nid).deadline == deadline


@pytest.mark.parametrize("seconds", [60, 86400, 90.5])
def test_bounds_are_inclusive(rt, clock, channel, seconds):
    nid = delivered(rt, clock)
    assert rt.snooze(nid, "bob", seconds).deadline == clock.now + seconds


def test_metadata_must_be_an_object(rt, clock, channel):
    nid = delivered(rt, clock)
    with pytest.raises(InvalidRequest):
        rt.snooze(nid, "bob", 600, metadata=["x"])


def test_unknown_notification_is_not_found(rt, channel):
    with pytest.raises(NotFound):
        rt.snooze("00000000-0000-4000-8000-000000000000", "bob", 600)


def test_not_yet_delivered_is_not_awaiting_ack(rt, clock, channel):
    n = rt.accept("alice", request(require_ack=True)).notification
    with pytest.raises(Conflict) as err:
        rt.snooze(n.id, "bob", 600)
    assert err.value.code == "not_awaiting_ack"


def test_without_require_ack_nothing_to_snooze(rt, clock, channel):
    n = rt.accept("alice", request()).notification
    rt.dispatch()
    with pytest.raises(Conflict) as err:
        rt.snooze(n.id, "bob", 600)
    assert err.value.code == "ack_not_required"


@pytest.mark.parametrize("dismiss", [False, True])
def test_settled_notification_cannot_be_snoozed(rt, clock, channel, dismiss):
    nid = delivered(rt, clock)
    rt.acknowledge(nid, "bob", dismiss=dismiss)
    before = counts()
    with pytest.raises(Conflict) as err:
        rt.snooze(nid, "bob", 600)
    assert err.value.code == "ack_conflict"
    assert counts() == before


def test_timed_out_notification_cannot_be_snoozed(rt, clock, channel):
    nid = delivered(rt, clock)
    clock.now = row(nid).deadline
    rt.expire()
    with pytest.raises(Conflict) as err:
        rt.snooze(nid, "bob", 600)
    assert err.value.code == "ack_timed_out"


def test_past_deadline_not_yet_swept_cannot_be_snoozed(rt, clock, channel):
    nid = delivered(rt, clock)
    clock.now = row(nid).deadline
    before = counts()
    with pytest.raises(Conflict) as err:
        rt.snooze(nid, "bob", 600)
    assert err.value.code == "ack_timed_out"
    assert counts() == before and row(nid).ack_status == "PENDING"


def test_conditional_update_names_the_deadline_it_read(rt, clock, channel):
    """A snooze that read the row before another snooze committed must not overwrite it blindly:
    its UPDATE names the old deadline, matches nothing, and it re-reads and snoozes again."""
    nid = delivered(rt, clock)
    stale = Notification.objects.get(id=nid)
    rt.snooze(nid, "carol", 600)  # commits in between
    fresh_reads = []

    def get(notification_id):
        if not fresh_reads:
            fresh_reads.append("stale")
            return stale
        return Notification.objects.get(id=notification_id)

    clock.advance(10)
    with mock.patch("notifications.runtime.rows.get", side_effect=get):
        r = rt.snooze(nid, "bob", 1200)
    events = timeline(nid, "SNOOZED")
    assert [e.payload["actor"] for e in events] == ["carol", "bob"]
    # bob's snooze saw carol's deadline, not the one it first read
    assert events[1].payload["previous_deadline"] == events[0].payload["deadline"]
    assert r.deadline == clock.now + 1200


def test_a_response_between_read_and_update_wins(rt, clock, channel):
    nid = delivered(rt, clock)
    stale = Notification.objects.get(id=nid)
    rt.acknowledge(nid, "carol")
    reads = iter([stale])
    with mock.patch("notifications.runtime.rows.get",
                    side_effect=lambda i: next(reads, None) or Notification.objects.get(id=i)):
        with pytest.raises(Conflict) as err:
            rt.snooze(nid, "bob", 600)
    assert err.value.code == "ack_conflict"
    assert timeline(nid, "SNOOZED") == [] and row(nid).ack_status == "ACKED"
