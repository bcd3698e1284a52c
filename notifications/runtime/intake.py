"""``accept``: validate, resolve policy, coalesce and store one obligation exactly once."""
from dataclasses import dataclass

from django.db import IntegrityError, transaction

from policies import resolution as policy_resolution

from ..models import Channel, Dedup, Notification
from . import records
from .errors import Conflict, InvalidRequest, UnknownChannel
from .identity import canonical_json, dedup_digest, idempotency_key, new_id, sha256_hex
from .transitions import DEDUPLICATED, DELIVERED, PENDING

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


def _existing(key: str, fingerprint: str) -> Notification | None:
    row = Notification.objects.filter(key=key).first()
    if row is not None and row.fingerprint != fingerprint:
        raise Conflict(
            "this idempotency key was already used with a different request",
            code="idempotency_conflict",
            notification_id=row.id,
        )
    return row


def _check_channels(names: list[str]) -> None:
    known = set(Channel.objects.filter(name__in=names, enabled=True).values_list("name", flat=True))
    unknown = [n for n in names if n not in known]
    if unknown:
        raise UnknownChannel(
            f"unknown or disabled channel(s): {unknown}",
            errors=[{"field": "channels", "message": f"not configured: {unknown}"}],
        )


def accept(runtime, principal: str, request: dict) -> AcceptResult:
    """Accept one obligation durably, exactly once (DESIGN.md rule 5; reference 1.1 intake).

    In one transaction: resolve policy, freeze the resolution on the row, decide the dedup role
    (leader, follower behind a live PENDING leader, or DEDUPLICATED behind a DELIVERED leader
    inside its window), insert the row and its ACCEPTED (and DEDUP_LINKED) events.

    Raises ``InvalidRequest``, ``UnknownChannel``, ``Conflict`` (``idempotency_conflict``: same
    key, other fingerprint) or ``PolicyUnavailable``. Nothing is written when it raises.
    """
    req = validate_request(request)
    if not principal:
        raise InvalidRequest("a principal is required", code="principal_required")
    key = idempotency_key(principal, req["source"], req["idempotency_key"] or new_id())
    fingerprint = sha256_hex(req)
    existing = _existing(key, fingerprint)
    if existing is not None:
        return AcceptResult(existing, False)
    if req["channels"]:
        _check_channels(req["channels"])
    try:
        with transaction.atomic():
            row = _insert(runtime, principal, req, key, fingerprint)
    except IntegrityError:
        # A concurrent duplicate won the unique index on ``key``: return its result.
        existing = _existing(key, fingerprint)
        if existing is None:
            raise
        return AcceptResult(existing, False)
    return AcceptResult(row, True)


def _insert(runtime, principal, req, key, fingerprint) -> Notification:
    resolution = policy_resolution.resolve(req)
    effective = resolution.effective
    if not req["channels"]:
        _check_channels(effective["channels"])
    now = runtime.clock()
    nid = new_id()
    status, owner_id, generation, dkey, owner_status = PENDING, None, None, None, None
    window = float(effective["dedup_window_seconds"])
    if req["dedup_key"] and window > 0:
        dkey = dedup_digest(principal, req["source"], req["dedup_key"], resolution.effective_hash)
        # Concurrent duplicates serialise on the uns_dedup row: create it if absent, then lock it.
        Dedup.objects.bulk_create([Dedup(key=dkey, until=0.0, owner_id=None, generation=0)], ignore_conflicts=True)
        window_row = Dedup.objects.select_for_update().get(key=dkey)
        owner = None
        if window_row.owner_id:
            owner = Notification.objects.filter(id=window_row.owner_id).values("id", "status").first()
        generation = window_row.generation
        if owner is not None and owner["status"] == PENDING:
            owner_id, owner_status = owner["id"], PENDING
        elif owner is not None and owner["status"] == DELIVERED and now < window_row.until:
            status, owner_id, owner_status = DEDUPLICATED, owner["id"], DELIVERED
        else:
            # No live owner (none, FAILED, or a delivered window that expired): lead a new generation.
            generation = window_row.generation + 1
            Dedup.objects.filter(key=dkey).update(owner_id=nid, generation=generation, until=now + window)
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
