"""Time formatting: how UNS writes an instant for people and JSON."""
import math
from datetime import datetime, timezone

# The instants UNS accepts as input where a person names a time (a silence's start, an on-call
# shift): 1970-01-01 .. 3000-01-01, epoch seconds. Later values (milliseconds sent as seconds)
# are refused, so every stored instant renders with ``iso``.
MIN_EPOCH, MAX_EPOCH = 0.0, 32503680000.0


def iso(epoch: float | None) -> str | None:
    """ISO-8601 UTC with milliseconds (``2026-01-02T03:04:05.678Z``) of ``epoch`` (float seconds),
    or None."""
    if epoch is None:
        return None
    return datetime.fromtimestamp(epoch, tz=timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def parse_instant(raw: str) -> float:
    """Epoch seconds from ``raw``: epoch seconds (``1800000000`` or ``1800000000.5``) or ISO-8601
    (``2027-01-15T08:00:00Z``; without an offset the time is taken as UTC). ``ValueError``
    (its message says what is wrong) for anything else or a time that is not finite. The one
    parser of a time given as text (the listing's ``since``/``until``, the DLQ's
    ``failed_since``/``failed_until``)."""
    try:
        value = float(raw)
    except ValueError:
        try:
            parsed = datetime.fromisoformat(raw.strip())
        except ValueError:
            raise ValueError("must be epoch seconds or an ISO-8601 date-time") from None
        if parsed.tzinfo is None:
            parsed = parsed.replace(tzinfo=timezone.utc)
        value = parsed.timestamp()
    if not math.isfinite(value):
        raise ValueError("must be a finite time")
    return value
