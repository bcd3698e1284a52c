"""Policy simulation: what intake would resolve and decide for a request, creating nothing.

Reads only: the current revision and snapshot in one SELECT without a lock
(``resolution.current_or_bootstrap``), then the idempotency and dedup rows intake would
consult. It never bootstraps, never locks and writes no notification, delivery,
acknowledgement, dedup or policy state.
"""
import dataclasses
from dataclasses import asdict

from core import codes
from core.errors import InvalidRequest, UNSError
from core.keys import idempotency_key, sha256_hex
from core.schema import parse_dict
from notifications.models import AcceptedAt, Notification
from notifications.runtime import intake

from . import escalation
from .content import snapshot_body
from .governance.bridge import SOURCE
from .governance.engine import DecisionEngine
from .governance.models import GovernanceDecision
from .governance.schema import GovernanceRequest
from .resolution import current_or_bootstrap, resolve_against


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
    req = parse_dict(GovernanceRequest, request, detail="the governance request is invalid")
    if not principal:
        raise InvalidRequest("a principal is required", code=codes.PRINCIPAL_REQUIRED)
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


SAMPLE_REQUESTS = 10  # recent distinct requests an activation preview resolves
SAMPLE_SCAN = 500  # recent notifications read to find them


def _sample_requests() -> list[dict]:
    """Up to ``SAMPLE_REQUESTS`` recent requests, one per (source, severity, intent, title):
    the stored request without its frozen resolution. 1 query."""
    seen, out = set(), []
    for n in (Notification.objects.annotate(accepted=AcceptedAt()).order_by("-accepted", "-id")
              .values_list("notification", flat=True)[:SAMPLE_SCAN]):
        key = (n.get("source"), n.get("severity"), n.get("intent"), n.get("title"))
        if key in seen:
            continue
        seen.add(key)
        out.append({**n, "metadata": {k: v for k, v in (n.get("metadata") or {}).items() if k != "uns_resolution"}})
        if len(out) == SAMPLE_REQUESTS:
            break
    return out


def _outcome(current, request: dict) -> dict:
    try:
        r = resolve_against(current, request).as_dict()
    except UNSError as exc:
        return {"error": exc.code, "detail": exc.detail}
    return {"policy_id": r["policy_id"], "policy_version": r["policy_version"], "rule": r["rule"],
            "effective": r["effective"], "effective_hash": r["effective_hash"]}


def activation_preview(policy_id: str, version: int, content: dict, content_hash_: str) -> dict:
    """What activating ``policy_id`` v``version`` (``content``, its SHA-256 ``content_hash_``)
    would change for recent traffic, creating nothing: each sample request (``_sample_requests``)
    resolved against the current ACTIVE set and against that set with this version in place of
    the policy's ACTIVE one (``content.snapshot_body`` orders it as ``store.activate``'s new
    snapshot would be). Returns ``{"revision", "samples": [{"request": {source, title,
    severity, intent}, "before", "after", "changed"}], "changed"}`` (``changed``: another policy,
    rule, effective settings or error; a new version number alone is no change); ``before``/``after`` are
    ``{policy_id, policy_version, rule, effective, effective_hash}`` or ``{error, detail}``.
    2 queries."""
    current = current_or_bootstrap()
    entries = [e for e in current.policies if e["policy_id"] != policy_id]
    entries.append({"policy_id": policy_id, "version": version, "content_hash": content_hash_, "content": content})
    candidate = dataclasses.replace(current, policies=snapshot_body(entries)["policies"])
    samples = []
    for req in _sample_requests():
        before, after = _outcome(current, req), _outcome(candidate, req)
        samples.append({"request": {k: req.get(k) for k in ("source", "title", "severity", "intent")},
                        "before": before, "after": after,
                        "changed": any(before.get(k) != after.get(k) for k in ("policy_id", "rule", "effective_hash",
                                                                              "error"))})
    return {"revision": current.revision, "samples": samples, "changed": sum(s["changed"] for s in samples)}
