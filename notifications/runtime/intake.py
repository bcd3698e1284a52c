"""``accept``: validate, resolve policy, coalesce and store one obligation exactly once."""
from dataclasses import dataclass

from django.db import IntegrityError, transaction

from policies import resolution as policy_resolution

from ..models import Channel, Dedup, Notification
from . import dedup, records
from .errors import Conflict, InvalidRequest, UnknownChannel
from .identity import canonical_json, dedup_digest, idempotency_key, new_id, sha256_hex
from .transitions import DEDUPLICATED, PENDING

SEVERITIES = ("info", "warning", "error", "critical")
MAX_CHANNELS = 16
MAX_METADATA_BYTES = 16 * 1024

# field -> (types, required, max_length, default)
_STRING_FIELDS = {
    "source": (True, 255),
    "title": (True, 500),
    "body": (False, 20000),
    "intent": (False, 64),
    "idempotency_key": (False, 255),
    "dedup_key": (False, 255),
    "agent_id": (False, 255),
    "autonomy_mode": (False, 64),
}
FIELDS = frozenset(_STRING_FIELDS) | {"severity", "channels", "require_ack", "metadata"}


def validate_request(data) -> dict:
    """Validate a SendNotificationRequest and return it normalised (every field present).

    Shape: ``source`` and ``title`` (required strings), ``body``, ``severity`` (info | warning |
    error | critical, default info), ``intent``, ``channels`` (list of channel names, at most 16),
    ``idempotency_key``, ``dedup_key``, ``require_ack`` (bool), ``metadata`` (object, at most
    16 KiB as JSON, key ``uns_resolution`` reserved), ``agent_id``, ``autonomy_mode``.
    Raises ``InvalidRequest`` listing every ``{"field", "message"}`` problem; unknown fields
    are refused so a typo never passes silently.
    """
    if not isinstance(data, dict):
        raise InvalidRequest("the request body must be a JSON object", errors=[{"field": "", "message": "must be an object"}])
    errors = [{"field": k, "message": "unknown field"} for k in sorted(set(data) - FIELDS)]
    out = {}
    for name, (required, max_length) in _STRING_FIELDS.items():
        value = data.get(name)
        if value is None:
            if required:
                errors.append({"field": name, "message": "is required"})
            out[name] = "" if name == "body" else None
        elif not isinstance(value, str):
            errors.append({"field": name, "message": "must be a string"})
        elif required and not value.strip():
            errors.append({"field": name, "message": "must not be blank"})
        elif len(value) > max_length:
            errors.append({"field": name, "message": f"must be at most {max_length} characters"})
        else:
            out[name] = value
    severity = data.get("severity", "info")
    if severity not in SEVERITIES:
        errors.append({"field": "severity", "message": f"must be one of {list(SEVERITIES)}"})
    out["severity"] = severity
    channels = data.get("channels", [])
    if channels is None:
        channels = []
    if not isinstance(channels, list) or not all(isinstance(c, str) and 0 < len(c) <= 64 for c in channels):
        errors.append({"field": "channels", "message": "must be a list of channel names"})
    elif len(channels) > MAX_CHANNELS:
        errors.append({"field": "channels", "message": f"must name at most {MAX_CHANNELS} channels"})
    out["channels"] = channels
    require_ack = data.get("require_ack", False)
    if not isinstance(require_ack, bool):
        errors.append({"field": "require_ack", "message": "must be a boolean"})
    out["require_ack"] = require_ack
    metadata = data.get("metadata", {})
    if metadata is None:
        metadata = {}
    if not isinstance(metadata, dict):
        errors.append({"field": "metadata", "message": "must be an object"})
    elif "uns_resolution" in metadata:
        errors.append({"field": "metadata.uns_resolution", "message": "is reserved for UNS"})
    elif len(canonical_json(metadata)) > MAX_METADATA_BYTES:
        errors.append({"field": "metadata", "message": f"must be at most {MAX_METADATA_BYTES} bytes as JSON"})
    out["metadata"] = metadata
    if not errors:
        errors.extend({"field": f, "message": "must not contain U+0000 (NUL)"} for f in _fields_with_nul(out))
    if errors:
        raise InvalidRequest("the notification request is invalid", errors=errors)
    return out


def _fields_with_nul(request: dict) -> list[str]:
    """Top-level fields holding a NUL character in any string or key (PostgreSQL cannot store
    U+0000 in text or jsonb, so it is refused on every backend alike)."""
    found = []
    for name, value in request.items():
        stack = [value]
        while stack:
            item = stack.pop()
            if isinstance(item, str):
                if "\x00" in item:
                    found.append(name)
                    break
            elif isinstance(item, dict):
                if any(isinstance(k, str) and "\x00" in k for k in item):
                    found.append(name)
                    break
                stack.extend(item.values())
            elif isinstance(item, list):
                stack.extend(item)
    return found


@dataclass(frozen=True)
class AcceptResult:
    """``notification`` is the stored row; ``created`` is False for an idempotent repeat."""

    notification: Notification
    created: bool


@dataclass(frozen=True)
class Idempotency:
    """What the idempotency key makes of a request: ``outcome`` ``new`` | ``repeat`` (same key,
    same fingerprint: ``existing`` is that row) | ``conflict`` (same key, other fingerprint).
    ``key`` is the row key the notification is stored under, ``fingerprint`` the request's hash."""

    outcome: str
    key: str
    fingerprint: str
    existing: Notification | None


def idempotency(principal: str, req: dict) -> Idempotency:
    """The idempotency outcome of a validated request (one read of ``uns_notifications`` when it
    carries an ``idempotency_key``; none otherwise, its key being a fresh id). Writes nothing."""
    fingerprint = sha256_hex(req)
    if not req["idempotency_key"]:
        return Idempotency("new", idempotency_key(principal, req["source"], new_id()), fingerprint, None)
    key = idempotency_key(principal, req["source"], req["idempotency_key"])
    row = Notification.objects.filter(key=key).first()
    if row is None:
        return Idempotency("new", key, fingerprint, None)
    return Idempotency("repeat" if row.fingerprint == fingerprint else "conflict", key, fingerprint, row)


def _raise_conflict(idem: Idempotency) -> None:
    raise Conflict("this idempotency key was already used with a different request",
                   code="idempotency_conflict", notification_id=idem.existing.id)


def check_channels(names: list[str]) -> None:
    """Raise ``UnknownChannel`` (field ``channels``) unless every name is an enabled channel."""
    known = set(Channel.objects.filter(name__in=names, enabled=True).values_list("name", flat=True))
    unknown = [n for n in names if n not in known]
    if unknown:
        raise UnknownChannel(
            f"unknown or disabled channel(s): {unknown}",
            errors=[{"field": "channels", "message": f"not configured: {unknown}"}],
        )


@dataclass(frozen=True)
class DedupPlan:
    """The dedup role of a request (``dedup.decide`` applied to its window).

    ``key``: the ``uns_dedup`` key, None when the request does not coalesce (no ``dedup_key`` or
    a zero window); ``window_seconds``: the effective ``dedup_window_seconds``; ``role``,
    ``owner_id``, ``owner_status``, ``generation`` (None when not coalescing) and
    ``new_generation`` as in ``dedup.DedupDecision``."""

    key: str | None
    window_seconds: float
    role: str
    owner_id: str | None
    owner_status: str | None
    generation: int | None
    new_generation: bool

    def as_dict(self) -> dict:
        """The simulation's ``dedup`` member."""
        if self.key is None:
            return {"role": self.role, "coalescing": False, "dedup_key": None, "owner_id": None, "generation": None}
        return {"role": self.role, "coalescing": True, "dedup_key": self.key, "owner_id": self.owner_id,
                "generation": self.generation, "window_seconds": self.window_seconds}


def dedup_plan(principal: str, req: dict, resolution, now: float, *, lock: bool) -> DedupPlan:
    """Read the request's dedup window and decide its role (``dedup.decide``) at ``now`` (epoch
    seconds). ``lock=True`` (intake, inside its transaction): create the window row if absent
    and lock it, so concurrent duplicates serialise on it. ``lock=False`` (simulation): a plain
    read that writes nothing. The caller applies a ``new_generation`` to the window."""
    window = float(resolution.effective["dedup_window_seconds"])
    if not req["dedup_key"] or window <= 0:
        return DedupPlan(None, window, dedup.LEADER, None, None, None, False)
    dkey = dedup_digest(principal, req["source"], req["dedup_key"], resolution.effective_hash)
    if lock:
        Dedup.objects.bulk_create([Dedup(key=dkey, until=0.0, owner_id=None, generation=0)], ignore_conflicts=True)
        window_row = Dedup.objects.select_for_update().get(key=dkey)
    else:
        window_row = Dedup.objects.filter(key=dkey).first()
    owner_id = window_row.owner_id if window_row is not None else None
    owner_status = Notification.objects.filter(id=owner_id).values_list(
        "status", flat=True).first() if owner_id else None
    decision = dedup.decide(owner_id=owner_id, owner_status=owner_status,
                            generation=window_row.generation if window_row is not None else 0,
                            until=window_row.until if window_row is not None else 0.0, now=now)
    return DedupPlan(dkey, window, decision.role, decision.owner_id, decision.owner_status, decision.generation,
                     decision.new_generation)


@dataclass(frozen=True)
class Decision:
    """What intake decides for a validated request: the policy revision it resolved against
    (``current``), the frozen ``resolution`` and the ``dedup`` plan."""

    current: object
    resolution: object
    dedup: DedupPlan


def decide(principal: str, req: dict, now: float, *, current, lock: bool) -> Decision:
    """The one intake decision, for ``accept`` (writes follow) and ``policies.simulation`` (a dry
    run): check the requested channels, resolve policy against ``current()`` (a callable
    returning ``policies.resolution.Current``: the locked, bootstrapping ``current_for_intake``
    for accept, the read-only ``current_or_bootstrap`` for simulation), check the effective
    channels when none were requested, then ``dedup_plan`` (``lock`` as there).

    Raises ``UnknownChannel``, ``InvalidRequest`` (channel not allowed) or ``PolicyUnavailable``.
    """
    if req["channels"]:
        check_channels(req["channels"])
    revision = current()
    resolution = policy_resolution.resolve_against(revision, req)
    if not req["channels"]:
        check_channels(resolution.effective["channels"])
    return Decision(revision, resolution, dedup_plan(principal, req, resolution, now, lock=lock))


def admit(principal: str, request) -> tuple[dict, Idempotency]:
    """Validate a request for ``principal`` and read its idempotency outcome (shared by accept and
    simulation). Raises ``InvalidRequest`` (including ``principal_required``)."""
    req = validate_request(request)
    if not principal:
        raise InvalidRequest("a principal is required", code="principal_required")
    return req, idempotency(principal, req)


def accept(runtime, principal: str, request: dict) -> AcceptResult:
    """Accept one obligation durably, exactly once (DESIGN.md rule 5; reference 1.1 intake).

    In one transaction: resolve policy, freeze the resolution on the row, decide the dedup role
    (``decide``: leader, follower behind a live PENDING leader, or DEDUPLICATED behind a
    DELIVERED leader inside its window), insert the row and its ACCEPTED (and DEDUP_LINKED) events.

    Raises ``InvalidRequest``, ``UnknownChannel``, ``Conflict`` (``idempotency_conflict``: same
    key, other fingerprint) or ``PolicyUnavailable``. Nothing is written when it raises.
    """
    req, idem = admit(principal, request)
    if idem.outcome == "conflict":
        _raise_conflict(idem)
    if idem.outcome == "repeat":
        return AcceptResult(idem.existing, False)
    try:
        with transaction.atomic():
            row = _insert(runtime, principal, req, idem.key, idem.fingerprint)
    except IntegrityError:
        # A concurrent duplicate won the unique index on ``key``: return its result.
        again = idempotency(principal, req)
        if again.outcome == "conflict":
            _raise_conflict(again)
        if again.existing is None:
            raise
        return AcceptResult(again.existing, False)
    return AcceptResult(row, True)


def _insert(runtime, principal, req, key, fingerprint) -> Notification:
    now = runtime.clock()
    decision = decide(principal, req, now, current=policy_resolution.current_for_intake, lock=True)
    resolution, plan = decision.resolution, decision.dedup
    effective = resolution.effective
    nid = new_id()
    status = DEDUPLICATED if plan.role == dedup.DEDUPLICATED else PENDING
    owner_id, owner_status, generation, dkey = plan.owner_id, plan.owner_status, plan.generation, plan.key
    if plan.new_generation:
        # No live owner (none, FAILED, or a delivered window that expired): lead a new generation.
        Dedup.objects.filter(key=dkey).update(owner_id=nid, generation=generation, until=now + plan.window_seconds)
    notification = {
        "id": nid,
        "source": req["source"],
        "title": req["title"],
        "body": req["body"],
        "severity": req["severity"],
        "intent": req["intent"],
        "channels": effective["channels"],
        "requested_channels": req["channels"],
        "require_ack": effective["require_ack"],
        "idempotency_key": req["idempotency_key"],
        "dedup_key": req["dedup_key"],
        "agent_id": req["agent_id"],
        "autonomy_mode": req["autonomy_mode"],
        "metadata": {**req["metadata"], "uns_resolution": resolution.as_dict()},
        "created_at": now,
    }
    row = Notification(
        id=nid,
        key=key,
        fingerprint=fingerprint,
        principal=principal,
        notification=notification,
        status=status,
        outcome={"channels_attempted": [], "channels_succeeded": [], "channels_failed": [], "error_message": None},
        attempts=0,
        cycle=1,
        cycle_attempts=0,
        dedup_key=dkey,
        dedup_owner_id=owner_id,
        dedup_generation=generation,
        dedup_successor_id=None,
        next_attempt=now,
        lease_until=0.0,
        lease_token=None,
        dead_letter=False,
    )
    row.save(force_insert=True)
    events = [
        records.event(nid, records.ACCEPTED, {
            "policy_id": resolution.policy_id,
            "policy_hash": resolution.policy_hash,
            "revision": resolution.revision,
            "effective": effective,
            "effective_hash": resolution.effective_hash,
        }, now),
    ]
    if owner_id is not None:
        events.append(records.event(nid, records.DEDUP_LINKED, {
            "owner_id": owner_id, "generation": generation, "owner_status": owner_status,
        }, now))
    records.insert_events(runtime, events)
    return row
