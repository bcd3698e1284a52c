"""The governance write path: ``decide`` (one request, one durable decision, exactly once) and the
reads of a decision (``get_decision``, ``wait_for``).

``decide`` runs in one transaction under the policy revision lock intake takes
(``policies.resolution.current_for_intake``: FOR SHARE on PostgreSQL, an IMMEDIATE transaction on
SQLite), so a decision is made under exactly one revision and an activation is ordered against
it; the decision row, its DECIDED audit row and, for REQUIRE_APPROVAL, the approval notifications
(``GovernanceApprovalBridge.open``) commit together or not at all.

Idempotent like intake (DESIGN.md rule 5): ``key`` = SHA-256 of ``[principal, "uns-governance",
idempotency_key]``, ``fingerprint`` = SHA-256 of the canonical request; same key and fingerprint
return the stored decision (``created`` false), same key with another request is 409
``idempotency_conflict``; concurrent duplicates resolve through the unique index.
"""
from dataclasses import dataclass

from django.apps import apps
from django.db import IntegrityError, transaction

from core import codes
from core.errors import Conflict, InvalidRequest, NotFound
from core.keys import idempotency_key, new_id, sha256_hex
from core.schema import parse_dict
from core.times import iso
from core.transitions import DECISION_STATE
from policies import resolution as policy_resolution

from .bridge import SOURCE, GovernanceApprovalBridge, audit
from .engine import DecisionEngine
from .models import APPROVED, DENIED, PENDING, GovernanceDecision
from .schema import ALLOW, DENY, REQUIRE_APPROVAL, GovernanceRequest

DEFAULT_PRINCIPAL = "uns-embedded"


@dataclass(frozen=True)
class Decision:
    """A stored decision as callers see it. ``outcome``: ALLOW | DENY | REQUIRE_APPROVAL (what
    the rules said); ``state``: pending | approved | denied | expired (where it stands now);
    ``allowed``: the action may go ahead now (``state == "approved"``). ``approval_id`` is the
    decision id for REQUIRE_APPROVAL (what ``check_approval`` and ``GET
    /api/v1/governance/decisions/{id}`` take), None otherwise; ``approval_notification_ids`` are
    the ``require_ack`` notifications approvers answer. ``created`` is False for an idempotent
    repeat."""

    row: GovernanceDecision
    created: bool = True

    @property
    def id(self) -> str:
        return self.row.id

    @property
    def outcome(self) -> str:
        return self.row.outcome

    @property
    def state(self) -> str:
        return self.row.state

    @property
    def allowed(self) -> bool:
        return self.row.state == APPROVED

    @property
    def approval_id(self) -> str | None:
        return self.row.id if self.row.outcome == REQUIRE_APPROVAL else None

    def as_dict(self) -> dict:
        """The body every transport answers (``policies.governance.payloads.GovernanceDecision``)."""
        r = self.row
        return {
            "id": r.id, "outcome": r.outcome, "state": r.state, "allowed": self.allowed,
            "approval_id": self.approval_id, "approval_notification_ids": list(r.approval_ids or []),
            "action": r.action, "agent_id": r.agent_id, "autonomy_mode": r.autonomy_mode, "intent": r.intent,
            "resource": r.resource, "risk": r.risk, "reason": r.reason, "context": r.request.get("context") or {},
            "rule": r.rule, "policy_id": r.policy_id, "policy_version": r.policy_version,
            "policy_hash": r.policy_hash, "revision": r.revision, "snapshot_hash": r.snapshot_hash,
            "approvals_required": r.approvals_required, "approval_timeout_seconds": r.approval_timeout_seconds,
            "approver_channels": list(r.approver_channels or []), "approved_by": list(r.approved_by or []),
            "decided_by": r.decided_by, "decided_at": r.decided_at, "decided_at_iso": iso(r.decided_at),
            "principal": r.principal, "created_at": r.created_at, "created_at_iso": iso(r.created_at),
            "created": self.created,
        }


def _repeat(row: GovernanceDecision, fingerprint: str) -> Decision:
    if row.fingerprint != fingerprint:
        raise Conflict("this idempotency key was already used with a different governance request",
                       code=codes.IDEMPOTENCY_CONFLICT, decision_id=row.id)
    return Decision(row, created=False)


def decide_request(runtime, principal: str, body) -> Decision:
    """Decide ``body`` (a ``GovernanceRequest`` JSON object) for ``principal`` (the authenticated
    identity, never a body member) with ``runtime``'s clock and intake.

    ALLOW is ``approved`` and DENY ``denied`` at once; REQUIRE_APPROVAL is ``pending`` with its
    approval notifications accepted in the same transaction. Raises ``InvalidRequest`` (bad body;
    ``principal_required``), ``InvalidJSON``, ``Conflict`` (``idempotency_conflict``),
    ``UnknownChannel`` (an approver channel is not configured), ``PolicyUnavailable`` (no usable
    policy revision: fails closed). Nothing is written when it raises.
    """
    req = parse_dict(GovernanceRequest, body, detail="the governance request is invalid")
    if not principal:
        raise InvalidRequest("a principal is required", code=codes.PRINCIPAL_REQUIRED)
    fingerprint = sha256_hex(req)
    keyed = bool(req["idempotency_key"])
    key = idempotency_key(principal, SOURCE, req["idempotency_key"] if keyed else new_id())
    if keyed:
        stored = GovernanceDecision.objects.filter(key=key).first()
        if stored is not None:
            return _repeat(stored, fingerprint)
    try:
        with transaction.atomic():
            return Decision(_decide(runtime, principal, req, key, fingerprint))
    except IntegrityError:
        stored = GovernanceDecision.objects.filter(key=key).first() if keyed else None
        if stored is None:
            raise
        return _repeat(stored, fingerprint)  # a concurrent duplicate committed first


def _decide(runtime, principal: str, req: dict, key: str, fingerprint: str) -> GovernanceDecision:
    current = policy_resolution.current_for_intake()  # the revision lock, as intake
    verdict = DecisionEngine.for_current(current).evaluate(req)
    now = runtime.clock()
    approval = verdict.approval or {}
    state = {ALLOW: APPROVED, DENY: DENIED, REQUIRE_APPROVAL: PENDING}[verdict.outcome]
    row = GovernanceDecision(
        id=new_id(), key=key, fingerprint=fingerprint, principal=principal, action=req["action"],
        agent_id=req["agent_id"], autonomy_mode=req["autonomy_mode"], intent=req["intent"],
        resource=req["resource"], risk=req["risk"], request=req, outcome=verdict.outcome, rule=verdict.rule,
        reason=verdict.reason, policy_id=verdict.policy_id, policy_version=verdict.policy_version,
        policy_hash=verdict.policy_hash, revision=current.revision, snapshot_hash=current.snapshot_hash,
        state=DECISION_STATE.initial(state), approvals_required=approval.get("approvals_required", 0),
        approval_timeout_seconds=approval.get("timeout_seconds"), approver_channels=approval.get("channels", []),
        approval_ids=[], approved_by=[], decided_by=None if state == PENDING else "uns-policy",
        decided_at=None if state == PENDING else now, created_at=now)
    with transaction.atomic():  # a savepoint: a duplicate key's IntegrityError leaves nothing
        row.save(force_insert=True)
    audit(row, "DECIDED", old=None, new=state, actor=principal, at=now).save(force_insert=True)
    if verdict.outcome == REQUIRE_APPROVAL:
        GovernanceApprovalBridge(runtime).open(row, now)
    return row


def decide(action: str, context: dict | None = None, *, principal: str = DEFAULT_PRINCIPAL,
           idempotency_key: str | None = None, runtime=None) -> Decision:
    """The Python API for hosts that embed UNS: may ``action`` be performed now?

    ``context``: the other ``GovernanceRequest`` members (``agent_id``, ``autonomy_mode``,
    ``intent``, ``resource``, ``risk`` (low | medium | high | critical, default high),
    ``reason``, ``context`` (free JSON shown to approvers)). ``principal``: whose request it is
    (default ``uns-embedded``). ``runtime``: default the process's
    (the notifications app's, ``NotificationsConfig.runtime``). Returns a ``Decision`` (``decision.allowed`` says go;
    ``decision.state`` pending means ask again later with ``get_decision(decision.id)``).
    Raises ``InvalidRequest``, ``Conflict``, ``UnknownChannel`` or ``PolicyUnavailable``.
    """
    if runtime is None:
        runtime = apps.get_app_config("notifications").runtime()
    body = {"action": action, **(context or {})}
    if idempotency_key is not None:
        body["idempotency_key"] = idempotency_key
    return decide_request(runtime, principal, body)


def get_decision(decision_id: str) -> Decision:
    """The stored decision ``decision_id``. Raises ``NotFound``."""
    row = GovernanceDecision.objects.filter(id=decision_id).first() if isinstance(decision_id, str) else None
    if row is None:
        raise NotFound(f"governance decision {decision_id} does not exist", decision_id=decision_id)
    return Decision(row, created=False)
