"""Governance races on PostgreSQL with real parallel connections (``tests/concurrency``'s
``race``): an approval settles exactly once whatever races between approve, deny and timeout,
and concurrent duplicates of one idempotent request make one decision."""
import pytest

from concurrency.conftest import race
from notifications.models import Event, Notification
from notifications.runtime import Conflict, Runtime
from policies.governance import decide, get_decision
from policies.governance.models import GovernanceAuditRecord, GovernanceDecision

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def _pending(rt, action="deploy.release", resource="prod/api"):
    decision = decide(action, {"resource": resource, "risk": "low"}, principal="agent", runtime=rt)
    rt.dispatch()
    rows = list(Notification.objects.filter(id__in=decision.row.approval_ids))
    assert rows and all(r.ack_status == "PENDING" for r in rows)
    return decision, rows


def _settled_once(decision_id):
    assert GovernanceAuditRecord.objects.filter(decision_id=decision_id, kind="SETTLED").count() == 1
    ids = GovernanceDecision.objects.get(id=decision_id).approval_ids
    assert Event.objects.filter(notification_id__in=ids, kind="APPROVAL_SETTLED").count() == 1


def test_approve_deny_and_timeout_racing_settle_the_approval_once(rt, governed):
    governed()
    states = set()
    for _ in range(4):
        decision, [row] = _pending(rt)
        sweeper = Runtime(clock=lambda d=row.deadline: d + 0.5, adapters={}, callback=None)
        responder = Runtime(clock=lambda d=row.deadline: d - 0.5, adapters={}, callback=None)

        def act(i):
            if i == 0:
                return sweeper.expire()
            try:
                return responder.acknowledge(row.id, f"approver-{i}", dismiss=i % 3 == 0, approve=i % 3 != 0)
            except Conflict as exc:
                return exc

        results, pids = race(7, act)
        assert len(set(pids)) == 7
        final = get_decision(decision.id)
        note = Notification.objects.get(id=row.id)
        expected = {"ACKED": "approved", "DISMISSED": "denied", "TIMED_OUT": "expired"}[note.ack_status]
        assert final.state == expected and final.row.decided_by == note.actor
        _settled_once(decision.id)
        states.add(final.state)
    assert states <= {"approved", "denied", "expired"}


def test_two_approvers_and_a_denier_racing_on_a_two_person_rule_settle_once(rt, governed):
    governed()
    for _ in range(4):
        decision, rows = _pending(rt, action="db.drop", resource="prod/db")
        first, second = (r.id for r in rows)
        plan = [(first, "alice", False), (second, "carol", False), (first, "dave", True), (second, "erin", True)]

        def act(i):
            nid, actor, dismiss = plan[i]
            try:
                return rt.acknowledge(nid, actor, dismiss=dismiss, approve=not dismiss)
            except Conflict as exc:
                return exc

        race(4, act)
        final = get_decision(decision.id)
        acks = dict(Notification.objects.filter(id__in=[first, second]).values_list("id", "ack_status"))
        if set(acks.values()) == {"ACKED"}:
            assert final.state == "approved" and sorted(final.row.approved_by) == ["alice", "carol"]
        else:
            assert final.state == "denied"
        _settled_once(decision.id)


def test_concurrent_duplicates_of_one_keyed_request_make_one_decision(rt, governed):
    governed()
    results, _ = race(6, lambda i: decide("deploy.release", {"resource": "prod/api", "risk": "low"},
                                          principal="agent", idempotency_key="same", runtime=rt))
    assert len({r.id for r in results}) == 1
    assert sorted(r.created for r in results) == [False] * 5 + [True]
    assert GovernanceDecision.objects.count() == 1
    assert Notification.objects.filter(notification__source="uns-governance").count() == 1
