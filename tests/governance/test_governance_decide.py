"""``decide`` and the approval bridge on the runtime (fake clock, console channel): ALLOW and
DENY at once, REQUIRE_APPROVAL as require_ack notifications whose ACK approves, DISMISS denies
and timeout expires, each settled in the response's own transaction, audited with the policy
identity; idempotency; bad input."""
import pytest

from notifications.models import AckAuditRecord, Event, Notification
from notifications.runtime import Conflict, InvalidRequest, UnknownChannel
from policies.governance import decide, get_decision
from policies.governance.models import GovernanceAuditRecord, GovernanceDecision
from policies.models import PolicyRevision

pytestmark = pytest.mark.django_db


def _deliver(rt, decision):
    reports = rt.dispatch()
    assert {r.id for r in reports if r.status == "DELIVERED"} >= set(
        decision.as_dict()["approval_notification_ids"])


def test_allow_and_deny_are_settled_at_once_and_audited(rt, governed):
    governed()
    allowed = decide("read.logs", {"agent_id": "bot-1", "risk": "low"}, principal="agent", runtime=rt)
    assert (allowed.outcome, allowed.state, allowed.allowed, allowed.approval_id) == ("ALLOW", "approved", True, None)
    assert allowed.row.rule == "reads-are-fine"
    denied = decide("db.delete_rows", {"agent_id": "bot-1", "autonomy_mode": "autonomous", "risk": "low"},
                    principal="agent", runtime=rt)
    assert (denied.outcome, denied.state, denied.allowed) == ("DENY", "denied", False)
    revision = PolicyRevision.objects.get()
    body = denied.as_dict()
    assert body["revision"] == revision.revision and body["policy_id"] == "uns-default"
    assert body["policy_hash"] and body["snapshot_hash"]
    audits = GovernanceAuditRecord.objects.filter(decision_id=denied.id)
    assert [(a.kind, a.new_state, a.actor, a.agent_id, a.action, a.outcome, a.revision) for a in audits] == [
        ("DECIDED", "denied", "agent", "bot-1", "db.delete_rows", "DENY", revision.revision)]
    assert Notification.objects.count() == 0  # no approval needed, no notification


def test_unmatched_high_risk_fails_closed(rt, governed):
    governed()
    decision = decide("launch.rockets", {}, principal="agent", runtime=rt)  # undeclared risk: high
    assert (decision.outcome, decision.state, decision.row.rule) == ("DENY", "denied", None)


def test_ack_approves_in_the_same_transaction_and_writes_the_settled_event(rt, governed, clock):
    governed()
    decision = decide("deploy.release", {"agent_id": "bot-1", "resource": "prod/api", "risk": "medium",
                                         "reason": "ship 1.2", "context": {"version": "1.2"}},
                      principal="agent", runtime=rt)
    assert (decision.outcome, decision.state, decision.approval_id) == ("REQUIRE_APPROVAL", "pending", decision.id)
    [nid] = decision.as_dict()["approval_notification_ids"]
    note = Notification.objects.get(id=nid)
    assert note.principal == "agent" and note.notification["require_ack"] is True
    assert note.notification["source"] == "uns-governance" and note.notification["channels"] == ["console"]
    meta = note.notification["metadata"]["uns_governance"]
    assert (meta["decision_id"], meta["action"], meta["context"]) == (decision.id, "deploy.release", {"version": "1.2"})
    assert note.notification["metadata"]["uns_resolution"]["effective"]["ack_timeout_minutes"] == 10.0
    _deliver(rt, decision)
    assert Notification.objects.get(id=nid).deadline == pytest.approx(clock.now + 600)

    rt.acknowledge(nid, "alice", approve=True)
    settled = get_decision(decision.id)
    assert (settled.state, settled.row.decided_by, settled.row.approved_by, settled.allowed) == (
        "approved", "alice", ["alice"], True)
    [ev] = Event.objects.filter(notification_id=nid, kind="APPROVAL_SETTLED")
    assert ev.payload["state"] == "approved" and ev.payload["decision_id"] == decision.id
    kinds = list(GovernanceAuditRecord.objects.filter(decision_id=decision.id).order_by("at", "kind")
                 .values_list("kind", "new_state", "actor"))
    assert sorted(kinds) == sorted([("DECIDED", "pending", "agent"), ("APPROVAL_RECORDED", "approved", "alice"),
                                    ("SETTLED", "approved", "alice")])
    # A repeated ACK is the runtime's idempotent answer and settles nothing again.
    rt.acknowledge(nid, "alice", approve=True)
    assert Event.objects.filter(notification_id=nid, kind="APPROVAL_SETTLED").count() == 1


def test_dismiss_denies(rt, governed):
    governed()
    decision = decide("deploy.release", {"resource": "prod/api", "risk": "low"}, principal="agent", runtime=rt)
    _deliver(rt, decision)
    rt.acknowledge(decision.row.approval_ids[0], "bob", dismiss=True)
    settled = get_decision(decision.id)
    assert (settled.state, settled.row.decided_by, settled.allowed) == ("denied", "bob", False)


def test_timeout_expires_and_a_late_ack_changes_nothing(rt, governed, clock):
    governed()
    decision = decide("deploy.release", {"resource": "prod/api", "risk": "low"}, principal="agent", runtime=rt)
    _deliver(rt, decision)
    clock.advance(599)
    assert rt.expire() == []
    assert get_decision(decision.id).state == "pending"
    clock.advance(2)
    assert rt.expire() == decision.row.approval_ids
    settled = get_decision(decision.id)
    assert (settled.state, settled.row.decided_by, settled.allowed) == ("expired", "uns-timeout-worker", False)
    with pytest.raises(Conflict) as exc:
        rt.acknowledge(decision.row.approval_ids[0], "alice", approve=True)
    assert exc.value.code == "ack_timed_out"
    assert get_decision(decision.id).state == "expired"


def test_self_approval_is_refused_and_rolls_the_ack_back(rt, governed):
    governed()
    decision = decide("deploy.release", {"resource": "prod/api", "risk": "low"}, principal="agent", runtime=rt)
    _deliver(rt, decision)
    nid = decision.row.approval_ids[0]
    with pytest.raises(Conflict) as exc:
        rt.acknowledge(nid, "agent", approve=True)
    assert exc.value.code == "self_approval"
    assert Notification.objects.get(id=nid).ack_status == "PENDING"
    assert AckAuditRecord.objects.filter(notification_id=nid).count() == 0
    assert get_decision(decision.id).state == "pending"
    rt.acknowledge(nid, "agent", dismiss=True)  # withdrawing its own request is allowed: denied
    assert get_decision(decision.id).state == "denied"


def test_two_approvals_need_two_distinct_approvers(rt, governed):
    governed()
    decision = decide("db.drop", {"resource": "prod/db", "risk": "low"}, principal="agent", runtime=rt)
    first, second = decision.row.approval_ids
    _deliver(rt, decision)
    rt.acknowledge(first, "alice", approve=True)
    assert get_decision(decision.id).state == "pending"
    rt.acknowledge(second, "alice", approve=True)  # the same approver twice counts once
    assert get_decision(decision.id).row.approved_by == ["alice"] and get_decision(decision.id).state == "pending"


def test_two_approvals_settle_on_the_second_approver(rt, governed):
    governed()
    decision = decide("db.drop", {"resource": "prod/db", "risk": "low"}, principal="agent", runtime=rt)
    first, second = decision.row.approval_ids
    _deliver(rt, decision)
    rt.acknowledge(first, "alice", approve=True)
    rt.acknowledge(second, "carol", approve=True)
    settled = get_decision(decision.id)
    assert (settled.state, settled.row.approved_by, settled.row.decided_by) == ("approved", ["alice", "carol"],
                                                                               "carol")


def test_no_producer_can_make_a_notification_that_looks_like_an_approval(rt, governed):
    """``metadata.uns_governance`` is reserved: only the bridge writes it (through intake), so a
    forged approval is refused at intake and nothing is stored."""
    governed()
    decision = decide("deploy.release", {"resource": "prod/api", "risk": "low"}, principal="agent", runtime=rt)
    before = Notification.objects.count()
    with pytest.raises(InvalidRequest) as exc:
        rt.accept("mallory", {"source": "uns-governance", "title": "t", "require_ack": True,
                              "metadata": {"uns_governance": {"decision_id": decision.id, "action": "db.drop"}}})
    assert exc.value.extra["errors"][0]["field"] == "metadata.uns_governance"
    assert Notification.objects.count() == before
    assert get_decision(decision.id).state == "pending"


def test_idempotent_repeat_and_conflict(rt, governed):
    governed()
    first = decide("deploy.release", {"resource": "prod/api", "risk": "low"}, principal="agent",
                   idempotency_key="k1", runtime=rt)
    again = decide("deploy.release", {"resource": "prod/api", "risk": "low"}, principal="agent",
                   idempotency_key="k1", runtime=rt)
    assert (again.id, again.created, first.created) == (first.id, False, True)
    assert GovernanceDecision.objects.count() == 1 and Notification.objects.count() == 1
    other = decide("deploy.release", {"resource": "prod/api", "risk": "low"}, principal="someone-else",
                   idempotency_key="k1", runtime=rt)  # keys are scoped by principal
    assert other.id != first.id
    with pytest.raises(Conflict) as exc:
        decide("deploy.release", {"resource": "prod/web", "risk": "low"}, principal="agent",
               idempotency_key="k1", runtime=rt)
    assert exc.value.code == "idempotency_conflict"


@pytest.mark.parametrize(("action", "context", "field"), [
    ("", {}, "action"),
    ("x", {"risk": "enormous"}, "risk"),
    ("x", {"colour": "red"}, "colour"),
    ("x", {"context": "not an object"}, "context"),
    ("x", {"context": {"blob": "x" * 9000}}, "context"),
])
def test_bad_requests_are_typed_errors_and_write_nothing(rt, governed, action, context, field):
    governed()
    with pytest.raises(InvalidRequest) as exc:
        decide(action, context, principal="agent", runtime=rt)
    assert field in [e["field"] for e in exc.value.extra["errors"]]
    assert GovernanceDecision.objects.count() == 0


def test_an_unknown_approver_channel_fails_and_writes_nothing(rt, governed):
    governed({"rules": [{"name": "r", "match": {}, "decision": "REQUIRE_APPROVAL",
                         "approval": {"channels": ["nowhere"]}}]})
    with pytest.raises(UnknownChannel):
        decide("x", {"risk": "low"}, principal="agent", runtime=rt)
    assert GovernanceDecision.objects.count() == 0 and Notification.objects.count() == 0


def test_the_settlement_reaches_the_callback_outbox(governed, clock):
    from notifications.adapters.console import ConsoleAdapter
    from notifications.runtime import Runtime

    governed()
    bodies = []
    rt = Runtime(clock=clock, adapters={"console": ConsoleAdapter(clock)}, callback=bodies.append, concurrency=1)
    decision = decide("deploy.release", {"resource": "prod/api", "risk": "low"}, principal="agent", runtime=rt)
    rt.dispatch()
    rt.acknowledge(decision.row.approval_ids[0], "alice", approve=True)
    assert rt.deliver_callbacks()["delivered"] == 2
    settled = next(b for b in bodies if b["kind"] == "APPROVAL_SETTLED")
    assert settled["payload"]["decision_id"] == decision.id and settled["payload"]["state"] == "approved"
    assert settled["notification"]["id"] == decision.row.approval_ids[0]
    assert {b["kind"] for b in bodies} == {"ACKED", "APPROVAL_SETTLED"}
