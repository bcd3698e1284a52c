"""``GovernanceApprovalBridge``: a REQUIRE_APPROVAL decision becomes ``require_ack``
notifications, and their responses settle the decision.

Approvals ARE notifications: ``open`` accepts one ``require_ack`` notification per approval
needed through the one intake (``notifications.runtime.intake.accept``), source
``uns-governance``, intent ``governance.approval``, sent to the approvers' channels, carrying the
action and context in ``metadata.uns_governance``, its response deadline the approval timeout
(``ack_timeout_minutes`` frozen at acceptance through intake's ``override``). So an approval has
the notification's durability, retries, timeline, console, WebSocket/HTTP/MCP respond paths and
callbacks.

``settle`` is called by the runtime's response transitions (``responses.acknowledge`` and the
timeout pass ``responses.time_out``) *inside* the transaction that wins the notification's ack
edge, so the decision's state commits (or rolls back) with the response that settles it: ACK
counts an approval (``approved`` once ``approvals_required`` distinct approvers ACKed), DISMISS
denies, TIMED_OUT expires (deny: fail closed). The decision row is locked (``FOR UPDATE`` on
PostgreSQL; SQLite's IMMEDIATE transactions serialise writers), its UPDATE names ``state =
pending`` (``core.transitions.transition``), and only the one response that won the
notification's conditional ack edge reaches here: whatever races between approve, deny and
timeout, a decision settles exactly once.
"""
from django.db import transaction

from core import codes
from core.errors import Conflict
from core.keys import new_id
from core.transitions import RECORD_APPROVAL, transition
from notifications.runtime import intake, schemas, timeline

from .models import APPROVED, DENIED, EXPIRED, PENDING, GovernanceAuditRecord, GovernanceDecision

SOURCE = "uns-governance"
INTENT = "governance.approval"
METADATA_KEY = schemas.GOVERNANCE_METADATA_KEY
APPROVAL_SETTLED = timeline.APPROVAL_SETTLED
SEVERITY_OF_RISK = {"low": "info", "medium": "warning", "high": "error", "critical": "critical"}


def audit(decision: GovernanceDecision, kind: str, *, old: str | None, new: str, actor: str, at: float,
          notification_id: str | None = None) -> GovernanceAuditRecord:
    """An unsaved ``uns_governance_audit_records`` row for ``decision``."""
    return GovernanceAuditRecord(
        id=new_id(), decision_id=decision.id, kind=kind, old_state=old, new_state=new, actor=actor,
        agent_id=decision.agent_id, action=decision.action, outcome=decision.outcome, revision=decision.revision,
        policy_hash=decision.policy_hash, snapshot_hash=decision.snapshot_hash, notification_id=notification_id, at=at)


def _body(decision: GovernanceDecision) -> str:
    req = decision.request
    lines = [f"Agent {decision.agent_id or decision.principal} asks to perform {decision.action!r}"
             + (f" on {decision.resource!r}" if decision.resource else "") + f" (declared risk: {decision.risk})."]
    if req.get("reason"):
        lines.append(f"Reason: {req['reason']}")
    lines.append(f"Decision {decision.id}: an ACK with approve=true approves, DISMISS denies; "
                 "no answer in time denies.")
    return "\n".join(lines)


def approval_summary(notification: dict) -> dict | None:
    """What a responder needs to see of an approval notification's request (its
    ``metadata.uns_governance``): ``{decision_id, action, resource, risk, agent_id, reason,
    context}``, or None for any other notification. For read models (the console's inbox)."""
    meta = schemas.approval_request(notification)
    if meta is None:
        return None
    return {k: meta.get(k) for k in ("decision_id", "action", "resource", "risk", "agent_id", "reason", "context")}


class GovernanceApprovalBridge:
    """Turns REQUIRE_APPROVAL into ``require_ack`` notifications (``open``) and settles the
    decision from their responses (``settle``). ``runtime``: the ``notifications.runtime.Runtime``
    whose intake, clock and callback setting the notifications use."""

    def __init__(self, runtime):
        self.runtime = runtime

    def open(self, decision: GovernanceDecision, now: float) -> list[str]:
        """Accept the approval notifications of a pending ``decision`` (inside the decision's
        transaction: they commit with it or not at all) and record their ids on it. Returns the
        notification ids. Raises what intake raises (``UnknownChannel`` for an approver channel
        that is not configured, ``InvalidRequest`` when a policy does not allow it)."""
        ids = []
        for slot in range(decision.approvals_required):
            request = {
                "source": SOURCE,
                "title": f"Approval needed: {decision.action}"[:500],
                "body": _body(decision),
                "severity": SEVERITY_OF_RISK.get(decision.risk, "error"),
                "intent": INTENT,
                "channels": decision.approver_channels,
                "require_ack": True,
                "idempotency_key": f"{decision.id}:{slot}",
                "agent_id": decision.agent_id,
                "autonomy_mode": decision.autonomy_mode,
            }
            approval = {
                "decision_id": decision.id, "slot": slot, "action": decision.action,
                "resource": decision.resource, "risk": decision.risk, "intent": decision.intent,
                "agent_id": decision.agent_id, "reason": decision.request.get("reason"),
                "context": decision.request.get("context") or {},
                "approvals_required": decision.approvals_required, "rule": decision.rule,
            }
            result = intake.accept(self.runtime, decision.principal, request, approval=approval, override={
                "require_ack": True, "ack_timeout_minutes": float(decision.approval_timeout_seconds) / 60.0})
            ids.append(result.notification.id)
        GovernanceDecision.objects.filter(id=decision.id).update(approval_ids=ids)
        decision.approval_ids = ids
        return ids

    def settle(self, row, ack_status: str, actor: str, now: float) -> None:
        """Count the response ``ack_status`` (ACKED | DISMISSED | TIMED_OUT) by ``actor`` to the
        notification ``row`` at ``now`` toward its decision, if ``row`` is one of a pending
        decision's approval notifications; a no-op for any other notification. Must run inside
        the transaction that won the notification's ack edge. A settlement writes a SETTLED
        audit row and an ``APPROVAL_SETTLED`` event on ``row`` (callback outbox included).

        Raises ``Conflict`` (``self_approval``) when the requesting principal ACKs its own
        approval: the caller's transaction rolls back and the ACK is refused."""
        meta = schemas.approval_request(row.notification)
        if meta is None:
            return
        if not transaction.get_connection().in_atomic_block:
            raise RuntimeError("GovernanceApprovalBridge.settle must run inside the response's transaction")
        decision = GovernanceDecision.objects.select_for_update().filter(id=meta["decision_id"]).first()
        # A producer may put anything in its metadata: only the decision's own notifications count.
        if decision is None or row.id not in (decision.approval_ids or []) or decision.state != PENDING:
            return
        approved_by = list(decision.approved_by or [])
        if ack_status == "ACKED":
            if actor == decision.principal:
                raise Conflict("the principal that asked for an approval cannot approve it",
                               code=codes.SELF_APPROVAL, decision_id=decision.id)
            if actor not in approved_by:
                approved_by.append(actor)
            new = APPROVED if len(approved_by) >= decision.approvals_required else PENDING
        elif ack_status == "DISMISSED":
            new = DENIED
        elif ack_status == "TIMED_OUT":
            new = EXPIRED
        else:
            return
        settled = new != PENDING
        changes = {"approved_by": approved_by}
        if settled:
            changes.update(decided_by=actor, decided_at=now)
        if not transition(GovernanceDecision.objects.filter(id=decision.id), state=(PENDING, new),
                          edge=RECORD_APPROVAL, set=changes):
            return  # cannot happen under the row lock; never settle twice
        records = []
        if ack_status == "ACKED":
            records.append(audit(decision, "APPROVAL_RECORDED", old=PENDING, new=new, actor=actor, at=now,
                                 notification_id=row.id))
        if settled:
            records.append(audit(decision, "SETTLED", old=PENDING, new=new, actor=actor, at=now,
                                 notification_id=row.id))
            timeline.insert_events(self.runtime, [timeline.event(row.id, APPROVAL_SETTLED, {
                "decision_id": decision.id, "state": new, "decided_by": actor, "approved_by": approved_by,
                "action": decision.action, "agent_id": decision.agent_id,
            }, now)])
        GovernanceAuditRecord.objects.bulk_create(records)


def settle_response(runtime, row, ack_status: str, actor: str, now: float) -> None:
    """The runtime's ``response_settled`` hook (``core.hooks``, registered by
    ``PoliciesConfig.ready``), called in the transaction of every won response: a governance
    approval notification settles its decision (``GovernanceApprovalBridge(runtime).settle``,
    which decides through ``schemas.approval_request``); any other notification: nothing."""
    GovernanceApprovalBridge(runtime).settle(row, ack_status, actor, now)
