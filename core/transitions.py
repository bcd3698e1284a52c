"""Every state column of UNS as a transition table, and the one way to write one.

A ``StateTable`` names a column (``db_table``.``column``), the edges it may take and the names
of its self-edges. ``transition`` (a conditional ORM UPDATE: prior state in WHERE, new state in
SET) and ``sql_guard`` (the WHERE fragment of a hand-written UPDATE) check every edge against its
table before any query, so no code path writes an edge a table lacks. Pure apart from
``transition``'s one query; no import beyond the standard library.

The tables: ``uns_notifications.status`` and ``.ack_status`` (support reference 1.1 and 1.2),
``.escalation_state`` (the escalation chain), ``uns_governance_decisions.state``,
``uns_bulk_actions.state``, ``uns_bulk_action_items.result`` and ``notification_policies.status``
(the policy lifecycle, DESIGN.md "Policy").
"""
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping

# --- uns_notifications.status and .ack_status (support reference 1.1, 1.2) -------------------

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
# A silence holds the row (notifications.runtime.silences): status PENDING -> PENDING (a claim
# undone, the next attempt deferred to the silence's end), ack_status PENDING -> PENDING (the ACK
# deadline paused), escalation_state ACTIVE -> ACTIVE (the chain's next step deferred).
HOLD = "hold"
SELF_EDGES = {
    ("status", PENDING): frozenset({RETRY, LEASE, PROMOTE, RELINK, HOLD}),
    ("status", FAILED): frozenset({RESOLVE}),
    ("ack_status", ACK_PENDING): frozenset({SNOOZE, HOLD}),
}

# --- uns_notifications.escalation_state: the escalation chain ----------------------------------
# None: no chain started. The timeout sweep (or a responder's escalate) starts it ACTIVE; the
# chain's steps and a responder's escalate keep it ACTIVE (named self-edges); a response stops it
# (RESPONDED, final); after the last level's last wait it is EXHAUSTED, from which a responder's
# escalate starts the last level again.
ESCALATION_ACTIVE = "ACTIVE"
ESCALATION_RESPONDED = "RESPONDED"
ESCALATION_EXHAUSTED = "EXHAUSTED"
ESCALATION_STATES = (ESCALATION_ACTIVE, ESCALATION_RESPONDED, ESCALATION_EXHAUSTED)
ESCALATE = "escalate"      # escalation_state ACTIVE -> ACTIVE: a responder jumps to the next level
ADVANCE = "advance"        # escalation_state ACTIVE -> ACTIVE: the chain performs its due step
ESCALATION_TRANSITIONS = {
    None: frozenset({ESCALATION_ACTIVE}),
    ESCALATION_ACTIVE: frozenset({ESCALATION_ACTIVE, ESCALATION_RESPONDED, ESCALATION_EXHAUSTED}),
    ESCALATION_EXHAUSTED: frozenset({ESCALATION_ACTIVE}),
    ESCALATION_RESPONDED: frozenset(),
}

# --- uns_governance_decisions.state --------------------------------------------------------------
# ALLOW is approved and DENY denied at once (the INSERT); REQUIRE_APPROVAL starts pending and
# settles exactly once. pending -> pending records one approval of several needed.
DECISION_PENDING = "pending"
DECISION_APPROVED = "approved"
DECISION_DENIED = "denied"
DECISION_EXPIRED = "expired"
DECISION_STATES = (DECISION_PENDING, DECISION_APPROVED, DECISION_DENIED, DECISION_EXPIRED)
DECISION_SETTLED = (DECISION_APPROVED, DECISION_DENIED, DECISION_EXPIRED)
RECORD_APPROVAL = "record_approval"  # state pending -> pending: an ACK counted, more are needed
DECISION_TRANSITIONS = {
    None: frozenset({DECISION_PENDING, DECISION_APPROVED, DECISION_DENIED}),
    DECISION_PENDING: frozenset({DECISION_PENDING, DECISION_APPROVED, DECISION_DENIED, DECISION_EXPIRED}),
    DECISION_APPROVED: frozenset(),
    DECISION_DENIED: frozenset(),
    DECISION_EXPIRED: frozenset(),
}

# --- uns_bulk_actions.state and uns_bulk_action_items.result ------------------------------------
BULK_RUNNING = "RUNNING"
BULK_DONE = "DONE"
BULK_TRANSITIONS = {
    None: frozenset({BULK_RUNNING}),
    BULK_RUNNING: frozenset({BULK_DONE}),
    BULK_DONE: frozenset(),
}
# An item's result: None until its run, then settled (this bulk action's transition happened) or
# refused, once.
ITEM_SETTLED = "settled"
ITEM_REFUSED = "refused"
ITEM_TRANSITIONS = {
    None: frozenset({ITEM_SETTLED, ITEM_REFUSED}),
    ITEM_SETTLED: frozenset(),
    ITEM_REFUSED: frozenset(),
}

# --- notification_policies.status: the policy lifecycle (DESIGN.md "Policy") ---------------------
# DRAFT -> ACTIVE -> RETIRED, DRAFT -> RETIRED abandons a draft; RETIRED is final (a clone is a
# new DRAFT). A new version is a DRAFT, the cold bootstrap's default policy ACTIVE at once.
# DRAFT -> DRAFT is a content edit.
POLICY_DRAFT = "DRAFT"
POLICY_ACTIVE = "ACTIVE"
POLICY_RETIRED = "RETIRED"
POLICY_STATUSES = (POLICY_DRAFT, POLICY_ACTIVE, POLICY_RETIRED)
EDIT = "edit"              # status DRAFT -> DRAFT: a draft's content is replaced
POLICY_TRANSITIONS = {
    None: frozenset({POLICY_DRAFT, POLICY_ACTIVE}),
    POLICY_DRAFT: frozenset({POLICY_DRAFT, POLICY_ACTIVE, POLICY_RETIRED}),
    POLICY_ACTIVE: frozenset({POLICY_RETIRED}),
    POLICY_RETIRED: frozenset(),
}


class IllegalTransition(AssertionError):
    """A code path tried a transition the tables do not allow, or wrote a state column outside
    ``transition`` / ``sql_guard`` (a bug, not bad input)."""


@dataclass(frozen=True, eq=False)
class StateTable:
    """One state column's machine. ``edges``: state (None: no state) -> the states it may go
    to; ``self_edges``: state -> the names that may write ``state -> state`` (a write that keeps
    the state must name one). ``nullable``: whether the column stores None; when it does not,
    None is "no row yet" and its edges are INSERTs only (``initial``), never an UPDATE's prior
    state. ``spec``: where the machine is defined. Compared and hashed by identity: each table is
    one module-level object (``TABLES``)."""

    db_table: str
    column: str
    edges: Mapping
    self_edges: Mapping = field(default_factory=dict)
    nullable: bool = False
    spec: str = ""

    def __post_init__(self):
        object.__setattr__(self, "edges", MappingProxyType(dict(self.edges)))
        object.__setattr__(self, "self_edges", MappingProxyType(dict(self.self_edges)))

    @property
    def name(self) -> str:
        return f"{self.db_table}.{self.column}"

    @property
    def states(self) -> tuple:
        """The states a row may hold (None first when the column stores it)."""
        return ((None,) if self.nullable else ()) + tuple(s for s in self.edges if s is not None)

    def allows(self, old, new, *, edge: str | None = None) -> bool:
        """Whether ``old -> new`` is an edge (a self-edge only when ``edge`` names it)."""
        if new is None or new not in self.edges.get(old, ()):
            return False
        return old != new or edge in self.self_edges.get(old, ())

    def check(self, old, new, *, edge: str | None = None) -> None:
        """Raise ``IllegalTransition`` unless ``allows(old, new, edge=edge)``."""
        if new is None or new not in self.edges.get(old, ()):
            raise IllegalTransition(f"{self.name} {old} -> {new} is not in its state machine")
        if old == new and edge not in self.self_edges.get(old, ()):
            raise IllegalTransition(f"{self.name} {old} -> {new} is a self-edge; name it from "
                                    f"{sorted(self.self_edges.get(old, ()))}, not {edge!r}")

    def initial(self, state: str) -> str:
        """``state`` for a new row's INSERT, checked as an edge from None. Raises
        ``IllegalTransition``."""
        self.check(None, state)
        return state


def _self_edges(column: str) -> dict:
    return {state: names for (col, state), names in SELF_EDGES.items() if col == column}


NOTIFICATION_STATUS = StateTable("uns_notifications", "status", STATUS_TRANSITIONS, _self_edges("status"),
                                 spec="support reference 1.1")
ACK_STATUS = StateTable("uns_notifications", "ack_status", ACK_TRANSITIONS, _self_edges("ack_status"),
                        nullable=True, spec="support reference 1.2")
ESCALATION_STATE = StateTable("uns_notifications", "escalation_state", ESCALATION_TRANSITIONS,
                              {ESCALATION_ACTIVE: frozenset({ESCALATE, ADVANCE, HOLD})}, nullable=True,
                              spec="escalation chains (notifications.runtime.escalation)")
DECISION_STATE = StateTable("uns_governance_decisions", "state", DECISION_TRANSITIONS,
                            {DECISION_PENDING: frozenset({RECORD_APPROVAL})},
                            spec="governance decisions (policies.governance)")
BULK_ACTION_STATE = StateTable("uns_bulk_actions", "state", BULK_TRANSITIONS,
                               spec="bulk actions (notifications.runtime.bulk)")
BULK_ITEM_RESULT = StateTable("uns_bulk_action_items", "result", ITEM_TRANSITIONS, nullable=True,
                              spec="bulk actions (notifications.runtime.bulk)")
POLICY_STATUS = StateTable("notification_policies", "status", POLICY_TRANSITIONS,
                           {POLICY_DRAFT: frozenset({EDIT})}, spec='DESIGN.md "Policy"')

TABLES = (NOTIFICATION_STATUS, ACK_STATUS, ESCALATION_STATE, DECISION_STATE, BULK_ACTION_STATE, BULK_ITEM_RESULT,
          POLICY_STATUS)
_BY_COLUMN = {(t.db_table, t.column): t for t in TABLES}


def state_columns(db_table: str) -> frozenset[str]:
    """The columns of ``db_table`` that have a state table."""
    return frozenset(column for table, column in _BY_COLUMN if table == db_table)


def table_for(db_table: str, column: str) -> StateTable:
    """The state table of ``db_table``.``column``. Raises ``IllegalTransition`` when there is none."""
    try:
        return _BY_COLUMN[(db_table, column)]
    except KeyError:
        raise IllegalTransition(f"{db_table}.{column} has no state table") from None


def _table(field) -> StateTable:
    """``field``: a ``StateTable``, or the name of a ``uns_notifications`` state column."""
    return field if isinstance(field, StateTable) else table_for("uns_notifications", field)


def check(field, old: str | None, new: str, *, edge: str | None = None) -> None:
    """Refuse ``field`` (a ``StateTable``, or ``"status"`` / ``"ack_status"`` /
    ``"escalation_state"`` of ``uns_notifications``) going ``old -> new`` unless the table has the
    edge; a self-edge (``old == new``) must also be named by ``edge`` from the table's
    ``self_edges``. Raises ``IllegalTransition``. Pure: no database. Spec: the table's ``spec``
    (support reference 1.1 for status, 1.2 for ack_status)."""
    _table(field).check(old, new, edge=edge)


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


def _checked_olds(table: StateTable, pairs, edge: str | None) -> tuple:
    """The prior states all of ``pairs`` name (one WHERE clause holds them all), every edge
    checked. Raises ``IllegalTransition``."""
    pairs = list(pairs)
    if not pairs:
        raise IllegalTransition(f"{table.name}: no edges to guard")
    olds = _olds(pairs[0])
    if not olds:
        raise IllegalTransition(f"{table.name}: no expected prior state")
    for pair in pairs:
        if _olds(pair) != olds:
            raise IllegalTransition(f"{table.name}: one batch expects one set of prior states, got {olds} "
                                    f"and {_olds(pair)}")
        for old in olds:
            table.check(old, pair[1], edge=edge)
    if None in olds and (len(olds) > 1 or not table.nullable):
        raise IllegalTransition(f"{table.name}: None cannot be one of several expected prior states"
                                if table.nullable else f"{table.name} is never None on a stored row")
    return olds


def _state_filter(column: str, olds: tuple) -> dict:
    if len(olds) == 1:
        return {f"{column}__isnull": True} if olds[0] is None else {column: olds[0]}
    return {f"{column}__in": olds}


def transition(target, *, edge: str | None = None, where: dict | None = None, set: dict | None = None,
               **states) -> int:
    """The one way to write a state column of existing rows: a conditional UPDATE built from
    the state tables.

    ``target``: a model class (``Notification``) or a queryset narrowing the rows (e.g.
    ``Notification.objects.filter(id=nid)`` or ``filter(id__in=ids)``). ``states``: each state
    column to move, as ``column=(old, new)`` (``status=``, ``ack_status=``,
    ``escalation_state=`` of ``Notification``; ``state=`` of a governance decision or a bulk
    action; ``result=`` of a bulk action item; ``status=`` of a ``Policy``), where ``old`` is one
    state or a tuple of states (any of them may be the prior one; None, for a column that stores
    it, must stand alone). At least one is given. ``edge``: the name of a self-edge (the table's
    ``self_edges``), required when ``old == new``. ``where``: extra fences as queryset lookups
    (``{"lease_token": t, "deadline__lte": now}``). ``set``: other columns to write (``{"actor":
    a, "responded_at": now}``; F expressions allowed).

    Every edge is checked against its ``StateTable`` before any query: an edge the table lacks,
    an unnamed self-edge or a column without a table raises ``IllegalTransition`` and touches
    nothing. No state column of the model may appear in ``where`` or ``set`` (the prior states go
    into the WHERE clause, the new ones into SET, from the pairs only). Returns the number of
    rows updated: 0 means the expected prior state or a fence no longer held (someone else won).
    Call it inside the transaction that writes the transition's events and audit rows.

    Spec: the tables' ``spec``; architecture, "conditional UPDATE" paragraph; DESIGN.md
    write-path rule 1.
    """
    queryset = target if hasattr(target, "update") else target._default_manager.all()
    db_table = queryset.model._meta.db_table
    if not states:
        raise IllegalTransition(f"transition() needs an edge of a state column of {db_table}")
    guarded = state_columns(db_table)
    where, set = dict(where or {}), dict(set or {})
    for key in (*where, *set):
        if key.split("__")[0] in guarded:
            raise IllegalTransition(f"{key!r}: state columns are written only through their (old, new) pair")
    lookups, values = {}, {}
    for column, pair in states.items():
        table = table_for(db_table, column)
        lookups.update(_state_filter(column, _checked_olds(table, [pair], edge)))
        values[column] = pair[1]
    return queryset.filter(**where, **lookups).update(**set, **values)


def sql_guard(field, pairs, *, edge: str | None = None, column: str | None = None) -> tuple[str, list]:
    """``transition()`` for a hand-written UPDATE (``UPDATE ... FROM (VALUES ...)``, or
    ``rows.update``) in which each row may take its own new state: check every ``(old, new)`` of
    ``pairs`` (``old`` one state or a tuple, as in ``transition``; ``edge`` names the self-edges
    among them) against ``field``'s table (a ``StateTable``, or the name of a ``uns_notifications``
    state column) and return the WHERE fragment naming the expected prior state(s) with its
    params, e.g. ``("n.status = %s", ["PENDING"])`` for ``column="n.status"`` (default: the
    table's column).

    Raises ``IllegalTransition`` (before any query) for an edge the table lacks, an unnamed
    self-edge, or pairs that expect different prior states (one WHERE clause must hold them all).
    """
    table = _table(field)
    olds = _checked_olds(table, pairs, edge)
    column = column or table.column
    if olds == (None,):
        return f"{column} IS NULL", []
    if len(olds) == 1:
        return f"{column} = %s", [olds[0]]
    return f"{column} IN ({', '.join(['%s'] * len(olds))})", list(olds)


def initial(*, status: str, ack_status: str | None = None) -> dict:
    """The state columns of a new notification row (intake's INSERT), checked as edges from
    None: ``{"status": status, "ack_status": ack_status}``. Raises ``IllegalTransition``."""
    NOTIFICATION_STATUS.initial(status)
    if ack_status is not None:
        ACK_STATUS.initial(ack_status)
    return {"status": status, "ack_status": ack_status}


# --- the status machine's exits: what a dispatch attempt settles to, and when it retries ---------

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
