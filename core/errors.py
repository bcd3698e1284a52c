"""Typed domain errors. Each carries a stable ``code`` from the catalog (``core.codes``), whose
HTTP status and title every transport renders as RFC 9457 problem details (``core.problems``).
Nothing below the transports raises a transport's exceptions."""
from django.db import InterfaceError, OperationalError

from . import codes
from .codes import CATALOG


class UNSError(Exception):
    """Base of every domain error: ``code`` is machine-readable and stable."""

    code = codes.UNS_ERROR
    status, title = CATALOG[code]

    def __init_subclass__(cls, **kwargs):
        """A subclass's ``status`` and ``title`` are its ``code``'s in the catalog."""
        super().__init_subclass__(**kwargs)
        cls.status, cls.title = CATALOG[cls.code]

    def __init__(self, detail: str, *, code: str | None = None, **extra):
        super().__init__(detail)
        self.detail = detail
        if code:
            self.code = code
        self.extra = extra


class InvalidRequest(UNSError):
    """The input is malformed; ``extra['errors']`` lists ``{"field", "message"}`` items."""

    code = codes.INVALID_REQUEST


class UnknownChannel(UNSError):
    """A request named a channel that is not configured (or is disabled)."""

    code = codes.UNKNOWN_CHANNEL


class NotFound(UNSError):
    code = codes.NOT_FOUND


class Conflict(UNSError):
    """The current state forbids the transition (someone else won, or the state is terminal)."""

    code = codes.CONFLICT


class PolicyUnavailable(UNSError):
    """Policy authority state is missing; intake fails closed rather than guess."""

    code = codes.POLICY_UNAVAILABLE


class ReplayBlocked(Conflict):
    """Replay would duplicate an obligation: a successor in its ``dedup_successor_id`` lineage is
    PENDING, DELIVERED or DEDUPLICATED, or another live owner holds its dedup window
    (architecture, "replay conflicts when a successor is pending/delivered")."""

    code = codes.REPLAY_BLOCKED


class LineageUnknown(Conflict):
    """Replay cannot establish the lineage of the obligation: a ``dedup_successor_id`` link names a
    row that no longer exists, or the chain is longer than the runtime follows (architecture,
    "... or lineage cannot be established")."""

    code = codes.REPLAY_LINEAGE_UNKNOWN


class InvalidJSON(InvalidRequest):
    """A JSON value UNS cannot store (NUL, lone surrogate, non-finite number, too deep), refused
    the same on every transport with the HTTP parser's code ``parse_error``; ``extra['errors']``
    names the field (``core.json_values.check_value`` raises it)."""

    code = codes.PARSE_ERROR


def database_unreachable(exc: BaseException) -> bool:
    """True when ``exc`` says the database connection is lost or cannot be made, so no row is at
    fault and a worker pass should fail as a whole (its loop backs off and ``OutageLog`` logs the
    outage once) instead of being retried row by row with a traceback per row.

    Django's ``InterfaceError`` (a closed connection) always; an ``OperationalError`` whose
    driver error is psycopg's with SQLSTATE class 08 (connection exception), 57P01..57P03
    (administrator/crash shutdown, cannot connect now), or no SQLSTATE at all (psycopg raises
    that when the server goes away or refuses the connection). Other operational errors
    (deadlock, serialization failure, SQLite's "database is locked") are row-level: False."""
    if isinstance(exc, InterfaceError):
        return True
    if not isinstance(exc, OperationalError):
        return False
    import psycopg  # here, not at the top: a process on SQLite never loads the PostgreSQL driver

    cause = exc.__cause__
    if not isinstance(cause, psycopg.Error):
        return False
    state = cause.sqlstate
    return state is None or state.startswith("08") or state in {"57P01", "57P02", "57P03"}
