"""Time formatting: how UNS writes an instant for people and JSON."""
from datetime import datetime, timezone


def iso(epoch: float | None) -> str | None:
    """ISO-8601 UTC with milliseconds (``2026-01-02T03:04:05.678Z``) of ``epoch`` (float seconds),
    or None."""
    if epoch is None:
        return None
    return datetime.fromtimestamp(epoch, tz=timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
