"""Keys and ids: canonical JSON, SHA-256 digests, the idempotency key, the dedup digest, new ids
(DESIGN.md, write-path rule 5) and the one rule of what a notification id looks like."""
import hashlib
import json
import re
import uuid

import uuid6


def canonical_json(value) -> bytes:
    """Canonical JSON: sorted keys, compact separators, UTF-8 (not ASCII-escaped)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def sha256_hex(value) -> str:
    """SHA-256 hex digest (64 chars) of ``canonical_json(value)``."""
    return hashlib.sha256(canonical_json(value)).hexdigest()


def idempotency_key(principal: str, source: str, key: str) -> str:
    """``uns_notifications.key``: SHA-256 of ``[principal, source, idempotency_key]``."""
    return sha256_hex([principal, source, key])


def dedup_digest(principal: str, source: str, dedup_key: str, effective_hash: str) -> str:
    """``uns_dedup.key``: SHA-256 of ``[principal, source, n.dedup_key, effective_hash]``."""
    return sha256_hex([principal, source, dedup_key, effective_hash])


def new_id() -> str:
    """A 36-character UUID4 string, the id type of every UNS table."""
    return str(uuid.uuid4())


def new_event_id() -> str:
    """A time-ordered UUIDv7 (RFC 9562) string: events sort by id in the order a process wrote
    them, so a timeline is ordered by ``(at, id)`` even when the clock gives equal times."""
    return str(uuid6.uuid7())


# A notification id is the canonical lower-case UUID string ``new_id`` makes (support-reference:
# ``id String(36)``, "Notification UUID string"). Nothing else names a notification: an upper-case
# or braced spelling is not an id, and is answered as any other malformed id is.
NOTIFICATION_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def is_notification_id(value) -> bool:
    """True when ``value`` is a string in the form of ``NOTIFICATION_ID`` (whole string)."""
    return isinstance(value, str) and NOTIFICATION_ID.fullmatch(value) is not None
