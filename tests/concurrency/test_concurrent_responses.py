"""Concurrent responses on PostgreSQL (reference 1.2; architecture "ACK, DISMISS and TIMEOUT use
conditional transitions with atomic audit"): racing ACKs, dismissals and the timeout sweep leave
exactly one terminal response, one event and one audit row."""
import pytest

from notifications.models import AckAuditRecord, Event, Notification
from notifications.runtime import Conflict, Runtime

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def _delivered_awaiting_ack(rt):
    nid = rt.accept("alice", {"source": "pager", "title": "page", "channels": ["ops-hook"],
                              "require_ack": True}).notification.id
    assert [r.status for r in rt.dispatch()] == ["DELIVERED"]
    return Notification.objects.get(id=nid)


def test_racing_responders_leave_exactly_one_response(rt, channel, race):
    row = _delivered_awaiting_ack(rt)
    actors = ["bob", "carol", "dave", "erin"]

    def respond(i):
        try:
            return rt.acknowledge(row.id, actors[i % 4], dismiss=i % 4 == 3)
        except Conflict as exc:
            return exc

    # 12 racers: each holds its own pooled connection at the barrier, and the process pool is at
    # most UNS_DB_POOL_MAX (16 by default) including the test's own connection.
    results, pids = race(12, respond)

    assert len(set(pids)) == 12
    final = Notification.objects.get(id=row.id)
    assert final.ack_status in ("ACKED", "DISMISSED")
    winner = final.actor
    for i, r in enumerate(results):
        if actors[i % 4] == winner:
            assert isinstance(r, Notification) and (r.ack_status, r.actor) == (final.ack_status, winner)
        else:
            assert isinstance(r, Conflict) and r.code == "ack_conflict", r
    assert AckAuditRecord.objects.filter(notification_id=row.id).count() == 1
    assert Event.objects.filter(notification_id=row.id, kind__in=["ACKED", "DISMISSED", "TIMED_OUT"]).count() == 1


def test_acks_racing_the_timeout_sweep_leave_exactly_one_terminal_state(rt, channel, clock, race):
    """Responders whose clock is just before the deadline race a sweeper whose clock is just after
    it: both are valid in isolation, exactly one may win."""
    outcomes = set()
    for _ in range(5):
        row = _delivered_awaiting_ack(rt)
        sweeper = Runtime(clock=lambda d=row.deadline: d + 0.5, adapters={}, callback=None)
        responder = Runtime(clock=lambda d=row.deadline: d - 0.5, adapters={}, callback=None)

        def act(i):
            if i == 0:
                return sweeper.expire()
            try:
                return responder.acknowledge(row.id, "bob")
            except Conflict as exc:
                return exc

        results, _ = race(6, act)

        final = Notification.objects.get(id=row.id)
        outcomes.add(final.ack_status)
        assert AckAuditRecord.objects.filter(notification_id=row.id).count() == 1
        assert Event.objects.filter(notification_id=row.id, kind__in=["ACKED", "TIMED_OUT"]).count() == 1
        if final.ack_status == "TIMED_OUT":
            assert results[0] == [row.id]
            assert all(isinstance(r, Conflict) and r.code == "ack_timed_out" for r in results[1:])
        else:
            assert final.ack_status == "ACKED" and results[0] == []
            assert all(isinstance(r, Notification) and r.ack_status == "ACKED" for r in results[1:])
    assert outcomes <= {"ACKED", "TIMED_OUT"}
