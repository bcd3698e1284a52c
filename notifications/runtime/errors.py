"""Typed runtime errors. Each carries a stable ``code`` and the HTTP status that one DRF
handler (``notifications.api.problems``) renders as RFC 9457 problem details. The runtime never
raises transport exceptions."""


class UNSError(Exception):
    """Base of every domain error: ``code`` is machine-readable and stable."""

    status = 400
    code = "uns_error"
    title = "UNS error"

    def __init__(self, detail: str, *, code: str | None = None, **extra):
        super().__init__(detail)
        self.detail = detail
        if code:
            self.code = code
        self.extra = extra


class InvalidRequest(UNSError):
    """The input is malformed; ``extra['errors']`` lists ``{"field", "message"}`` items."""

    status = 400
    code = "invalid_request"
    title = "Invalid request"


class UnknownChannel(UNSError):
    """A request named a channel that is not configured (or is disabled)."""

    status = 422
    code = "unknown_channel"
    title = "Unknown channel"


class NotFound(UNSError):
    status = 404
    code = "not_found"
    title = "Not found"


class Conflict(UNSError):
    """The current state forbids the transition (someone else won, or the state is terminal)."""

    status = 409
    code = "conflict"
    title = "Conflict"


class PolicyUnavailable(UNSError):
    """Policy authority state is missing; intake fails closed rather than guess."""

    status = 503
    code = "policy_unavailable"
    title = "Policy unavailable"


class ReplayBlocked(Conflict):
    """Replay would duplicate an obligation: a successor in its ``dedup_successor_id`` lineage is
    PENDING, DELIVERED or DEDUPLICATED, or another live owner holds its dedup window
    (architecture, "replay conflicts when a successor is pending/delivered")."""

    code = "replay_blocked"
    title = "Replay blocked"


class LineageUnknown(Conflict):
    """Replay cannot establish the lineage of the obligation: a ``dedup_successor_id`` link names a
    row that no longer exists, or the chain is longer than the runtime follows (architecture,
    "... or lineage cannot be established")."""

    code = "replay_lineage_unknown"
    title = "Replay lineage cannot be established"


class InvalidJSON(InvalidRequest):
    """A JSON value UNS cannot store (NUL, lone surrogate, non-finite number, too deep), refused
    the same on every transport with the HTTP parser's code ``parse_error``; ``extra['errors']``
    names the field (``notifications.api.parsers.check_value`` raises it)."""

    code = "parse_error"
    title = "Invalid JSON"


def database_unreachable(exc: BaseException) -> bool:
    """True when ``exc`` says the database connection is lost or cannot be made, so no row is at
    fault and a worker pass should fail as a whole (its loop backs off and ``OutageLog`` logs the
    outage once) instead of being retried row by row with a traceback per row.

    Django's ``InterfaceError`` (a closed connection) always; an ``OperationalError`` whose
    driver error is psycopg's with SQLSTATE class 08 (connection exception), 57P01..57P03
    (administrator/crash shutdown, cannot connect now), or no SQLSTATE at all (psycopg raises
    that when the server goes away or refuses the connection). Other operational errors
    (deadlock, serialization failure, SQLite's "database is locked") are row-level: False."""
    from django.db import InterfaceError, OperationalError

    if isinstance(exc, InterfaceError):
        return True
    if not isinstance(exc, OperationalError):
        return False
    cause = exc.__cause__
    try:
        import psycopg
    except ImportError:  # pragma: no cover - psycopg is a dependency
        return False
    if not isinstance(cause, psycopg.Error):
        return False
    state = cause.sqlstate
    return state is None or state.startswith("08") or state in {"57P01", "57P02", "57P03"}
