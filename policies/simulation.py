"""Policy simulation: what intake would resolve and decide for a request, creating nothing.

Reads only: the current revision and snapshot in one SELECT without a lock
(``resolution.current_or_bootstrap``), then the idempotency and dedup rows intake would
consult. It never bootstraps, never locks and writes no notification, delivery,
acknowledgement, dedup or policy state.
"""
from notifications.models import Channel, Dedup, Notification
from notifications.runtime.errors import InvalidRequest, UnknownChannel
from notifications.runtime.identity import dedup_digest, idempotency_key, sha256_hex
from notifications.runtime.intake import validate_request
from notifications.runtime.transitions import DELIVERED, PENDING

from .resolution import current_or_bootstrap, resolve_against


def _unknown_channels(names: list[str]) -> list[str]:
    known = set(Channel.objects.filter(name__in=names, enabled=True).values_list("name", flat=True))
    return [n for n in names if n not in known]


def _idempotency(principal: str, req: dict) -> dict:
    if not req["idempotency_key"]:
        return {"outcome": "new", "notification_id": None}
    key = idempotency_key(principal, req["source"], req["idempotency_key"])
    row = Notification.objects.filter(key=key).values("id", "fingerprint").first()
    if row is None:
        return {"outcome": "new", "notification_id": None}
    outcome = "repeat" if row["fingerprint"] == sha256_hex(req) else "conflict"
    return {"outcome": outcome, "notification_id": row["id"]}


def _dedup(principal: str, req: dict, effective: dict, effective_hash: str, now: float) -> dict:
    """The dedup role intake would give the request now (support reference 1.1, intake)."""
    window = float(effective["dedup_window_seconds"])
    if not req["dedup_key"] or window <= 0:
        return {"role": "leader", "coalescing": False, "dedup_key": None, "owner_id": None, "generation": None}
    dkey = dedup_digest(principal, req["source"], req["dedup_key"], effective_hash)
    window_row = Dedup.objects.filter(key=dkey).first()
    owner = None
    if window_row is not None and window_row.owner_id:
        owner = Notification.objects.filter(id=window_row.owner_id).values("id", "status").first()
    generation = window_row.generation if window_row is not None else 0
    if owner is not None and owner["status"] == PENDING:
        role, owner_id = "follower", owner["id"]
    elif owner is not None and owner["status"] == DELIVERED and now < window_row.until:
        role, owner_id = "deduplicated", owner["id"]
    else:
        role, owner_id, generation = "leader", None, generation + 1
    return {"role": role, "coalescing": True, "dedup_key": dkey, "owner_id": owner_id, "generation": generation,
            "window_seconds": window}


def simulate(principal: str, request: dict, *, now: float) -> dict:
    """Resolve ``request`` (a SendNotificationRequest) for ``principal`` against the current
    revision and report what intake would freeze and decide.

    Returns ``{"revision", "snapshot_hash", "initialized", "policy_id", "policy_version",
    "policy_hash", "rule", "effective", "effective_hash", "dedup": {"role": leader | follower |
    deduplicated, ...}, "idempotency": {"outcome": new | repeat | conflict, ...}}``.
    Raises what intake would: ``InvalidRequest``, ``UnknownChannel`` or ``PolicyUnavailable``.
    ``now`` (epoch seconds) decides whether a delivered leader's window is still open.
    """
    req = validate_request(request)
    if not principal:
        raise InvalidRequest("a principal is required", code="principal_required")
    if req["channels"]:
        unknown = _unknown_channels(req["channels"])
        if unknown:
            raise UnknownChannel(f"unknown or disabled channel(s): {unknown}",
                                 errors=[{"field": "channels", "message": f"not configured: {unknown}"}])
    current = current_or_bootstrap()
    resolution = resolve_against(current, req)
    if not req["channels"]:
        unknown = _unknown_channels(resolution.effective["channels"])
        if unknown:
            raise UnknownChannel(f"unknown or disabled channel(s): {unknown}",
                                 errors=[{"field": "channels", "message": f"not configured: {unknown}"}])
    return {
        "revision": current.revision,
        "snapshot_hash": current.snapshot_hash,
        "initialized": bool(current.snapshot_id),
        **{k: v for k, v in resolution.as_dict().items() if k not in ("revision", "snapshot_hash")},
        "dedup": _dedup(principal, req, resolution.effective, resolution.effective_hash, now),
        "idempotency": _idempotency(principal, req),
    }

