"""The two orthogonal state machines of the support reference (section 1), as data.

Pure functions, unit-tested without a database, and ``transition()``: the one helper that
turns an edge of these tables into a conditional UPDATE (prior state in WHERE, new state in
SET), so the runtime cannot write an edge the tables lack.
"""
from dataclasses import dataclass

PENDING = "PENDING"
DELIVERED = "DELIVERED"
FAILED = "FAILED"
DEDUPLICATED = "DEDUPLICATED"
STATUSES = (PENDING, DELIVERED, FAILED, DEDUPLICATED)

ACK_PENDING = "PENDING"
ACKED = "ACKED"
DISMISSED = "DISMISSED"
TIMED_OUT = "TIMED_OUT"
ACK_TERMINAL = (ACKED, DISMISSED, TIMED_OUT)

GUARANTEED = "GUARANTEED"
BEST_EFFORT = "BEST_EFFORT"
DELIVERY_MODES = (GUARANTEED, BEST_EFFORT)

# uns_notifications.status: allowed (from -> to). None is "no row yet" (intake's INSERT: a new
# leader or follower is PENDING, a duplicate inside a delivered owner's window is DEDUPLICATED).
# The self-edges PENDING -> PENDING and FAILED -> FAILED are writes that keep the state; each
# must be named from SELF_EDGES by the code that writes it.
STATUS_TRANSITIONS = {
    None: frozenset({PENDING, DEDUPLICATED}),
    PENDING: frozenset({PENDING, DELIVERED, FAILED, DEDUPLICATED}),
    FAILED: frozenset({PENDING, FAILED}),
    DELIVERED: frozenset(),
    DEDUPLICATED: frozenset(),
}

# uns_notifications.ack_status: None is "not required or not yet delivered". PENDING -> PENDING
# is the snooze self-edge (the deadline moves, the ack state stays).
ACK_TRANSITIONS = {
    None: frozenset({ACK_PENDING}),
    ACK_PENDING: frozenset({ACK_PENDING, ACKED, DISMISSED, TIMED_OUT}),
    ACKED: frozenset(),
    DISMISSED: frozenset(),
    TIMED_OUT: frozenset(),
}

# Names of the self-edges (reference 1.1 and 1.2). A write that keeps a state must say which of
# these it is; any other name (or none) is refused.
RETRY = "retry"            # status PENDING -> PENDING: a failed attempt backs off
LEASE = "lease"            # status PENDING -> PENDING: claim, renew or release a lease
PROMOTE = "promote"        # status PENDING -> PENDING: a follower becomes the leader (handoff)
RELINK = "relink"          # status PENDING -> PENDING: a follower follows a new leader
RESOLVE = "resolve"        # status FAILED -> FAILED: an operator clears dead_letter
SNOOZE = "snooze"          # ack_status PENDING -> PENDING: the ack deadline moves
SELF_EDGES = {
    ("status", PENDING): frozenset({RETRY, LEASE, PROMOTE, RELINK}),
    ("status", FAILED): frozenset({RESOLVE}),
    ("ack_status", ACK_PENDING): frozenset({SNOOZE}),
}
_TABLES = {"status": STATUS_TRANSITIONS, "ack_status": ACK_TRANSITIONS}


class IllegalTransition(AssertionError):
    """A code path tried a transition the reference does not allow (a bug, not bad input)."""


def check(field: str, old: str | None, new: str, *, edge: str | None = None) -> None:
    """Refuse ``field`` (``"status"`` or ``"ack_status"``) going ``old -> new`` unless the table
    has the edge; a self-edge (``old == new``) must also be named by ``edge`` from
    ``SELF_EDGES``. Raises ``IllegalTransition``. Pure: no database. Spec: support reference 1.1
    (status) and 1.2 (ack_status)."""
    if new not in _TABLES[field].get(old, ()):
        raise IllegalTransition(f"{field} {old} -> {new} is not in the reference state machine")
    if old == new and edge not in SELF_EDGES.get((field, old), ()):
        raise IllegalTransition(f"{field} {old} -> {new} is a self-edge; name it from "
                                f"{sorted(SELF_EDGES.get((field, old), ()))}, not {edge!r}")


def check_status(old: str | None, new: str, *, edge: str | None = None) -> None:
    """``check("status", ...)`` for a caller asking whether an edge exists at all: without
    ``edge``, the status self-edges are accepted unnamed. The runtime's writes never use it:
    ``transition``, ``sql_guard`` and ``initial`` check with ``check``, names required."""
    if old == new and edge is None and new in STATUS_TRANSITIONS.get(old, ()):
        return
    check("status", old, new, edge=edge)


def check_ack(old: str | None, new: str, *, edge: str | None = None) -> None:
    """``check("ack_status", ...)``: PENDING -> PENDING only as ``edge=SNOOZE``."""
    check("ack_status", old, new, edge=edge)


def _olds(pair) -> tuple:
    old, _new = pair
    return tuple(old) if isinstance(old, (tuple, list, set, frozenset)) else (old,)


def _state_filter(field: str, olds: tuple) -> dict:
    if len(olds) == 1:
        return {f"{field}__isnull": True} if olds[0] is None else {field: olds[0]}
    if None in olds:
        raise IllegalTransition(f"{field}: None cannot be one of several expected prior states")
    return {f"{field}__in": olds}


def transition(target, *, status: tuple | None = None, ack_status: tuple | None = None,
               edge: str | None = None, where: dict | None = None, set: dict | None = None) -> int:
    """The one way the runtime writes ``status`` / ``ack_status`` of existing rows: a
    conditional UPDATE built from the transition tables.

    ``target``: the model class (``Notification``) or a queryset narrowing the rows (e.g.
    ``Notification.objects.filter(id=nid)`` or ``filter(id__in=ids)``). ``status`` /
    ``ack_status``: ``(old, new)``, where ``old`` is one state or a tuple of states (any of them
    may be the prior one; ``None`` for "no ack state" must stand alone). At least one is given.
    ``edge``: the name of a self-edge (``SELF_EDGES``: ``RETRY``, ``LEASE``, ``PROMOTE``,
    ``RELINK``, ``RESOLVE``, ``SNOOZE``), required when ``old == new``. ``where``: extra fences
    as queryset lookups (``{"lease_token": t, "deadline__lte": now}``). ``set``: other columns to
    write (``{"actor": a, "responded_at": now}``; F expressions allowed).

    Every edge is checked against ``STATUS_TRANSITIONS`` / ``ACK_TRANSITIONS`` before any query:
    an edge the table lacks raises ``IllegalTransition`` and touches nothing. ``status`` and
    ``ack_status`` may not appear in ``where`` or ``set`` (the prior states go into the WHERE
    clause, the new ones into SET, from the pairs only). Returns the number of rows updated: 0
    means the expected prior state or a fence no longer held (someone else won). Call it inside
    the transaction that writes the transition's events and audit rows.

    Spec: support reference 1.1 and 1.2; architecture, "conditional UPDATE" paragraph.
    """
    changes = {"status": status, "ack_status": ack_status}
    if status is None and ack_status is None:
        raise IllegalTransition("transition() needs a status or ack_status edge")
    where, set = dict(where or {}), dict(set or {})
    for key in (*where, *set):
        if key.split("__")[0] in changes:
            raise IllegalTransition(f"{key!r}: state columns are written only through status=/ack_status=")
    lookups, values = {}, {}
    for field, pair in changes.items():
        if pair is None:
            continue
        olds, new = _olds(pair), pair[1]
        if not olds:
            raise IllegalTransition(f"{field}: no expected prior state")
        for old in olds:
            check(field, old, new, edge=edge)
        lookups.update(_state_filter(field, olds))
        values[field] = new
    queryset = target if hasattr(target, "update") else target._default_manager.all()
    return queryset.filter(**where, **lookups).update(**set, **values)


def sql_guard(field: str, pairs, *, edge: str | None = None, column: str | None = None) -> tuple[str, list]:
    """``transition()`` for a raw batched UPDATE (``UPDATE ... FROM (VALUES ...)``) in which
    each row may take its own new state: check every ``(old, new)`` of ``pairs`` (``old`` one
    state or a tuple, as in ``transition``; ``edge`` names the self-edges among them) and return
    the WHERE fragment naming the expected prior state(s) with its params, e.g.
    ``("n.status = %s", ["PENDING"])`` for ``column="n.status"`` (default: ``field``).

    Raises ``IllegalTransition`` (before any query) for an edge the tables lack, an unnamed
    self-edge, or pairs that expect different prior states (one WHERE clause must hold them all).
    """
    pairs = list(pairs)
    if not pairs:
        raise IllegalTransition(f"{field}: no edges to guard")
    olds = _olds(pairs[0])
    for pair in pairs:
        if _olds(pair) != olds:
            raise IllegalTransition(f"{field}: one batch expects one set of prior states, got {olds} and {_olds(pair)}")
        for old in olds:
            check(field, old, pair[1], edge=edge)
    column = column or field
    if len(olds) == 1 and olds[0] is None:
        return f"{column} IS NULL", []
    if None in olds:
        raise IllegalTransition(f"{field}: None cannot be one of several expected prior states")
    if len(olds) == 1:
        return f"{column} = %s", [olds[0]]
    return f"{column} IN ({', '.join(['%s'] * len(olds))})", list(olds)


def initial(*, status: str, ack_status: str | None = None) -> dict:
    """The state columns of a new row (intake's INSERT), checked as edges from None:
    ``{"status": status, "ack_status": ack_status}``. Raises ``IllegalTransition``."""
    check("status", None, status)
    if ack_status is not None:
        check("ack_status", None, ack_status)
    return {"status": status, "ack_status": ack_status}


@dataclass(frozen=True)
class Settlement:
    """What one dispatch attempt settles to: ``status`` and ``dead_letter``; ``retry`` when
    the row goes back to PENDING with backoff."""

    status: str
    dead_letter: bool
    retry: bool


def settle(*, delivery_mode: str, all_succeeded: bool, permanent_failure: bool,
           cycle_attempts: int, max_attempts: int) -> Settlement:
    """Decide the outcome of a dispatch attempt (reference 1.1, LEASED_DISPATCH exits).

    - every channel succeeded: DELIVERED;
    - a transient failure with ``cycle_attempts < max_attempts``: back to PENDING (retry);
    - otherwise (budget exhausted or a permanent failure, which is never retried):
      FAILED with ``dead_letter`` true for GUARANTEED, false for BEST_EFFORT.
    """
    if all_succeeded:
        return Settlement(DELIVERED, False, False)
    if not permanent_failure and cycle_attempts < max_attempts:
        return Settlement(PENDING, False, True)
    return Settlement(FAILED, delivery_mode == GUARANTEED, False)


def backoff_seconds(*, cycle_attempt: int, base: float, factor: float, cap: float, jitter: float,
                    unit_random: float) -> float:
    """Delay in seconds before retry number ``cycle_attempt`` (1-based): exponential
    ``base * factor ** (cycle_attempt - 1)`` capped at ``cap``, then spread by +/- ``jitter``
    (a fraction, 0..1) using ``unit_random`` drawn from [0, 1). Never negative."""
    raw = min(cap, base * factor ** max(0, cycle_attempt - 1))
    spread = raw * jitter * (2.0 * unit_random - 1.0)
    return max(0.0, raw + spread)


def retry_delay_seconds(*, backoff: float, retry_after: float | None, retry_after_max: float) -> float:
    """Seconds from the settle to the next attempt of a retried row: the backoff, or longer when
    a provider's ``Retry-After`` (RFC 9110 section 10.2.3; seconds, from its answer) asked for
    more: ``max(backoff, min(retry_after, retry_after_max))``. ``retry_after`` None: the backoff.

    The rule: the next attempt is no earlier than the provider asked (up to the
    ``retry_after_max`` cap, ``UNS_RETRY_AFTER_MAX_SECONDS``), never earlier than the backoff,
    and the attempt counts against ``max_attempts`` as any other. Waiting for a provider
    therefore spaces the cycle's attempts out without spending them faster than the backoff
    would: with the default policy (5 attempts, backoff 2, 4, 8, 16 s) a provider answering
    ``Retry-After: 60`` every time is tried at 0, 60, 120, 180 and 240 s, not dead-lettered
    after the ~30 s of backoff alone. Pure."""
    if retry_after is None:
        return backoff
    return max(backoff, min(max(0.0, retry_after), retry_after_max))
