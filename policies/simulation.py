"""Policy simulation: what intake would resolve and decide for a request, creating nothing.

Reads only: the current revision and snapshot in one SELECT without a lock
(``resolution.current_or_bootstrap``), then the idempotency and dedup rows intake would
consult. It never bootstraps, never locks and writes no notification, delivery,
acknowledgement, dedup or policy state.
"""
from notifications.runtime import intake

from . import escalation
from .resolution import current_or_bootstrap


def simulate(principal: str, request: dict, *, now: float) -> dict:
    """Resolve ``request`` (a SendNotificationRequest) for ``principal`` against the current
    revision and report what intake would freeze and decide: a dry run of ``accept``'s own
    decision (``intake.admit`` then ``intake.decide`` with the read-only ``current_or_bootstrap``
    and no lock), so the two cannot drift.

    Returns ``{"revision", "snapshot_hash", "initialized", "policy_id", "policy_version",
    "policy_hash", "rule", "effective", "effective_hash", "dedup": {"role": leader | follower |
    deduplicated, ...}, "idempotency": {"outcome": new | repeat | conflict, ...},
    "escalation_chain": {"levels": [{"level", "channels", "wait_seconds", "repeat"}], "schedule":
    [{"level", "repetition", "channels", "after_timeout_seconds"}, ..., {"exhausted": true,
    "after_timeout_seconds"}]}}``: the frozen chain and, when nobody responds, when each step
    fires counted from the acknowledgement deadline (``policies.escalation.schedule``).
    Raises what intake would: ``InvalidRequest``, ``UnknownChannel`` or ``PolicyUnavailable``.
    ``now`` (epoch seconds) decides whether a delivered leader's window is still open.
    """
    req, idem = intake.admit(principal, request)
    decision = intake.decide(principal, req, now, current=current_or_bootstrap, lock=False)
    current = decision.current
    chain = escalation.levels(decision.resolution.effective.get("escalation"))
    return {
        "revision": current.revision,
        "snapshot_hash": current.snapshot_hash,
        "initialized": bool(current.snapshot_id),
        **{k: v for k, v in decision.resolution.as_dict().items() if k not in ("revision", "snapshot_hash")},
        "dedup": decision.dedup.as_dict(),
        "idempotency": {"outcome": idem.outcome,
                        "notification_id": idem.existing.id if idem.existing is not None else None},
        "escalation_chain": {"levels": [lv.as_dict() for lv in chain], "schedule": escalation.schedule(chain)},
    }


def simulate_governance(principal: str, request: dict) -> dict:
    """What ``POST /api/v1/governance/decisions`` would decide for ``request`` (a
    ``GovernanceRequest``) sent by ``principal`` now, creating nothing: the same
    ``DecisionEngine`` over the current revision read with one SELECT and no lock
    (``current_or_bootstrap``), and the idempotency outcome of its key.

    Returns ``{"revision", "snapshot_hash", "initialized", "outcome", "rule", "reason",
    "policy_id", "policy_version", "policy_hash", "approval", "idempotency": {"outcome": new |
    repeat | conflict, "decision_id"}}``. Raises ``InvalidRequest`` / ``InvalidJSON`` (bad body,
    ``principal_required``) or ``PolicyUnavailable``.
    """
    from dataclasses import asdict

    from notifications.runtime import schemas
    from notifications.runtime.errors import InvalidRequest
    from notifications.runtime.keys import idempotency_key, sha256_hex

    from .governance.bridge import SOURCE
    from .governance.engine import DecisionEngine
    from .governance.models import GovernanceDecision
    from .governance.schema import GovernanceRequest

    req = schemas.parse_dict(GovernanceRequest, request, detail="the governance request is invalid")
    if not principal:
        raise InvalidRequest("a principal is required", code="principal_required")
    current = current_or_bootstrap()
    verdict = DecisionEngine.for_current(current).evaluate(req)
    stored = None
    if req["idempotency_key"]:
        stored = GovernanceDecision.objects.filter(
            key=idempotency_key(principal, SOURCE, req["idempotency_key"])).only("id", "fingerprint").first()
    outcome = intake.NEW if stored is None else (
        intake.REPEAT if stored.fingerprint == sha256_hex(req) else intake.CONFLICT)
    return {"revision": current.revision, "snapshot_hash": current.snapshot_hash,
            "initialized": bool(current.snapshot_id), **asdict(verdict),
            "idempotency": {"outcome": outcome, "decision_id": stored.id if stored is not None else None}}
