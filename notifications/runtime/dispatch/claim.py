"""Claim: leasing rows for a dispatch pass (DESIGN.md write-path rule 2; reference 1.1).

``claim`` leases due PENDING leaders in one committed transaction before any adapter I/O;
``confirm_leases`` is the committed, fenced lease check (with CHANNEL_ATTEMPT_STARTED) before each
channel attempt; ``release_unattempted`` undoes a claim whose channels never started. ``Claim``
is what a pass holds for one row; the SQL helpers shared by the package live here too.
"""
import json
from dataclasses import dataclass, field

from django.db import connection, transaction

from core.keys import new_id
from core.transitions import HOLD, LEASE, PENDING, sql_guard

from ...adapters.base import AttemptContext
from ...logformat import log_ids
from .. import early, silences, timeline
from ..withhold import RESOLVED_BEFORE_DELIVERY, SILENCE_ENDED_STALE, withhold
from .failover import Failover

# Report statuses besides the settled status and LEASE_LOST.
RELEASED = "RELEASED"  # claimed, never attempted, lease released (claim undone)
IN_FLIGHT = "IN_FLIGHT"  # adapter call still running when the stop's grace ended; lease kept
UNSETTLED = "UNSETTLED"  # the row's settle raised; it keeps its lease and is recovered after expiry


@dataclass
class Claim(Failover):
    """A row this worker holds a lease on, and what its attempt observed. Which channel it tries
    next is ``failover.Failover``'s business."""

    id: str
    lease_token: str
    attempt: int
    cycle: int
    cycle_attempt: int
    notification: dict
    outcome: dict
    results: dict = field(default_factory=dict)  # channel -> DeliveryResult
    lease_lost: bool = False
    channel_started: bool = False
    # The token the row held before this claim (None unless it recovers an expired lease):
    # releasing an unattempted claim puts it back, so the recovery flag is not lost.
    prior_lease_token: str | None = None
    lease_until: float = float("inf")  # epoch seconds; set by the claim, renewed by each lease check
    # CHANNEL_ATTEMPT_RESULT rows observed but not yet written (the settle writes them).
    result_events: list = field(default_factory=list)
    # The channels of this cycle handed over to their next fallback (``failover``).
    given_up: set = field(default_factory=set)

    def __post_init__(self):
        self._restore_given_up()

    @property
    def log_extra(self) -> dict:
        """``extra=`` for log lines about this claim: its notification id and lease token."""
        return log_ids(self.id, self.lease_token)

    @property
    def effective(self) -> dict:
        return self.notification["metadata"]["uns_resolution"]["effective"]

    def context(self, provider=None) -> AttemptContext:
        return AttemptContext(self.id, self.attempt, self.cycle, self.cycle_attempt, self.lease_token, provider)


@dataclass(frozen=True)
class DispatchReport:
    """The result of one claimed row: ``status`` after settle, or ``"LEASE_LOST"``,
    ``RELEASED``, ``IN_FLIGHT``, ``UNSETTLED``."""

    id: str
    status: str
    dead_letter: bool = False
    attempt: int = 0


# SQL helpers -----------------------------------------------------------------------------

def on_postgres() -> bool:
    return connection.vendor == "postgresql"


def json_in(value) -> str:
    return json.dumps(value)


def json_out(value):
    return json.loads(value) if isinstance(value, (str, bytes)) else value


def sql_values(rows: list[tuple], casts: tuple[str, ...]) -> tuple[str, list]:
    """A row source for ``FROM {values} AS v`` with columns ``column1``, ``column2``, ... (as a
    VALUES list names them) holding ``rows``, and its parameters. ``casts``: one SQL type per
    column for PostgreSQL, ignored on SQLite. On PostgreSQL the rows go as one JSON document
    (``document_values``) when they fit; otherwise, and on SQLite, ``(VALUES (%s, ...), ...)``."""
    if on_postgres():
        document = document_values(rows, casts)
        if document is not None:
            return document
        one = "(" + ", ".join(f"CAST(%s AS {t})" for t in casts) + ")"
    else:
        one = "(" + ", ".join("%s" for _ in casts) + ")"
    return "(VALUES " + ", ".join([one] * len(rows)) + ")", [p for r in rows for p in r]


def document_values(rows: list[tuple], casts: tuple[str, ...]) -> tuple[str, list] | None:
    """``sql_values``' PostgreSQL form: ONE parameter, the rows as a JSON array of arrays, each
    element read back as text and cast to its column's type (a ``jsonb`` column's value is JSON
    text, as ``json_in`` makes it; a float is exact: JSON keeps Python's shortest round-trip
    digits, and PostgreSQL reads them back as written). The statement's text then depends only
    on ``casts``, so psycopg splits and caches it once; a VALUES list of one placeholder per value
    was split and quoted in Python on every call (a batch of 50 settles is 450 parameters, a
    sixth of a dispatch worker's CPU, bench/profile_dispatch.py). None for rows JSON cannot hold
    exactly (NaN, infinity, a type it does not encode): the caller uses the VALUES list."""
    try:
        document = json.dumps(rows, allow_nan=False, separators=(",", ":"))
    except (TypeError, ValueError):
        return None
    columns = ", ".join(f"CAST(e->>{i} AS {t}) AS column{i + 1}" for i, t in enumerate(casts))
    return f"(SELECT {columns} FROM jsonb_array_elements(CAST(%s AS jsonb)) AS e)", [document]


# claiming ---------------------------------------------------------------------------------

_CLAIM_COLUMNS = "n.id, n.lease_token, n.attempts, n.cycle, n.cycle_attempts, n.notification, n.outcome, n.next_attempt"

# The due rows are a MATERIALIZED CTE, read and locked once: as a sub-select in FROM the
# planner may rescan it (a nested loop), and a rescan of a LIMIT ... SKIP LOCKED query can
# return other rows, so more than ``limit`` rows would be claimed.
_CLAIM_PG = """
WITH due AS MATERIALIZED (
    SELECT id, lease_token AS prior, gen_random_uuid()::text AS token
      FROM uns_notifications
     WHERE status = 'PENDING' AND dedup_owner_id IS NULL AND next_attempt <= %s AND lease_until <= %s{exclude}
     ORDER BY next_attempt
     LIMIT %s
       FOR UPDATE SKIP LOCKED)
UPDATE uns_notifications AS n
   SET lease_token = due.token, lease_until = %s,
       attempts = n.attempts + 1, cycle_attempts = n.cycle_attempts + 1
  FROM due
 WHERE n.id = due.id AND {guard} AND n.lease_until <= %s
   AND n.lease_token IS NOT DISTINCT FROM due.prior
RETURNING {columns}, due.prior
"""

_DUE_SQLITE = """
SELECT id, lease_token FROM uns_notifications
 WHERE status = 'PENDING' AND dedup_owner_id IS NULL AND next_attempt <= %s AND lease_until <= %s{exclude}
 ORDER BY next_attempt LIMIT %s
"""


def _exclusion(exclude: tuple[str, ...]) -> tuple[str, list]:
    """The claim's WHERE fragment that leaves out the rows of ``exclude`` (notification ids) and
    every row sharing a dedup key with one of them, and its parameters; empty for none.

    A dispatch pass attempts each notification at most once (reference 1.1): the window's refill
    passes the ids the pass already claimed, so a row its settle made due again (a retry with
    zero backoff) waits for the next pass, and so does a dedup successor the pass promoted (it
    shares the failed leader's dedup key)."""
    if not exclude:
        return "", []
    if on_postgres():  # one array parameter, however long the pass
        ids, params = "SELECT unnest(CAST(%s AS text[]))", [list(exclude)]
    else:
        ids, params = ", ".join(["%s"] * len(exclude)), list(exclude)
    return (f" AND id NOT IN ({ids}) AND (dedup_key IS NULL OR dedup_key NOT IN ("
            f"SELECT x.dedup_key FROM uns_notifications x WHERE x.id IN ({ids}) AND x.dedup_key IS NOT NULL))",
            params * 2)


def _lease_guard() -> tuple[str, list]:
    """The WHERE fragment of a claim or release: status PENDING -> PENDING as the LEASE edge."""
    return sql_guard("status", [(PENDING, PENDING)], edge=LEASE, column="n.status")


def _claim_rows(runtime, now: float, limit: int, exclude: tuple[str, ...] = ()) -> list[tuple]:
    """Lease up to ``limit`` due leaders (none of ``exclude``, ``_exclusion``); rows of
    ``_CLAIM_COLUMNS`` plus the prior token."""
    until = now + runtime.lease_seconds
    guard, guard_params = _lease_guard()
    skip, skip_params = _exclusion(exclude)
    with connection.cursor() as cur:
        if on_postgres():
            cur.execute(_CLAIM_PG.format(guard=guard, columns=_CLAIM_COLUMNS, exclude=skip),
                        [now, now, *skip_params, limit, until, *guard_params, now])
            return cur.fetchall()
        cur.execute(_DUE_SQLITE.format(exclude=skip), [now, now, *skip_params, limit])
        due = [(rid, prior, new_id()) for rid, prior in cur.fetchall()]
        if not due:
            return []
        values, params = sql_values(due, ("text", "text", "text"))
        cur.execute(
            f"UPDATE uns_notifications AS n SET lease_token = v.column3, lease_until = %s, "  # nosec B608  # bound VALUES, constant guard
            f"attempts = n.attempts + 1, cycle_attempts = n.cycle_attempts + 1 FROM {values} AS v "
            f"WHERE n.id = v.column1 AND {guard} AND n.lease_until <= %s "
            f"AND n.lease_token IS v.column2 RETURNING {_CLAIM_COLUMNS.replace('n.', '')}",
            [until, *params, *guard_params, now],
        )
        prior = {rid: p for rid, p, _ in due}
        return [(*r, prior[r[0]]) for r in cur.fetchall()]


def claim(runtime, limit: int, exclude=()) -> list[Claim]:
    """Claim up to ``limit`` due PENDING leaders (oldest ``next_attempt`` first) in one committed
    transaction: each gets a fresh ``lease_token`` and ``lease_until = now + lease_seconds``
    (seconds, epoch), ``attempts`` and ``cycle_attempts`` + 1, and an ATTEMPT_STARTED event
    (``recovery_may_repeat_provider_effect`` when it takes over an expired lease). Two statements
    on PostgreSQL (the claiming UPDATE ... RETURNING and the event INSERT), three on SQLite.
    Returns the claims; a row another worker claimed first is skipped. ``exclude``: ids this
    pass already claimed (the window's refill), left out with their dedup groups (``_exclusion``:
    one pass attempts each notification at most once). Reference 1.1."""
    now = runtime.clock()
    claims, events = [], []
    with transaction.atomic():
        rows = sorted(_claim_rows(runtime, now, limit, tuple(exclude)), key=lambda r: (r[7], r[0]))
        rows = _apply_silences(runtime, _apply_resolved(runtime, rows, now), now)
        for rid, token, attempts, cycle, cycle_attempts, notification, outcome, _next, prior in rows:
            c = Claim(rid, token, attempts, cycle, cycle_attempts, json_out(notification), json_out(outcome),
                      prior_lease_token=prior, lease_until=now + runtime.lease_seconds)
            claims.append(c)
            events.append(timeline.event(rid, timeline.ATTEMPT_STARTED, {
                "attempt": c.attempt,
                "cycle": c.cycle,
                "cycle_attempt": c.cycle_attempt,
                # A previous lease that ended without a settle may already have reached a provider.
                "recovery_may_repeat_provider_effect": prior is not None,
            }, now))
        timeline.insert_events(runtime, events)
    return claims


def _apply_resolved(runtime, rows: list[tuple], now: float) -> list[tuple]:
    """Withhold, instead of attempting, claimed rows whose source resolved them while an earlier
    attempt was in flight (``early.resolved_unsent``: one query per batch), in the claim's
    transaction; returns the rest."""
    resolved = early.resolved_unsent([r[0] for r in rows])
    if not resolved:
        return rows
    for r in rows:
        if r[0] in resolved and withhold(runtime, r[0], RESOLVED_BEFORE_DELIVERY,
                                         f"resolved by its source ({resolved[r[0]]}) before it was delivered: not sent",
                                         now, lease_token=r[1], detail={"actor": resolved[r[0]]}):
            early.mark_honoured(r[0], now)
    return [r for r in rows if r[0] not in resolved]


def _apply_silences(runtime, rows: list[tuple], now: float) -> list[tuple]:
    """The silences' say on freshly claimed ``rows`` (``_claim_rows``' tuples), inside the claim's
    transaction; returns the rows to attempt. One query reads the silences of this pass
    (``silences.Window``: those holding now or ended since the oldest row was accepted); with none,
    nothing else is read. A row a silence holds now (``silences.silencing``) has its claim undone
    in the same transaction (lease and attempt counts put back, ``next_attempt`` = the silence's
    end: the HOLD self-edge) and gets a hold and, the first time, SILENCED. A row an ended silence
    held is attempted only while fresh (accepted at most ``UNS_SILENCE_FRESHNESS_SECONDS`` ago);
    an older one is withheld (``withhold``, reason ``silence_ended_stale``): no burst of old pages
    when a silence ends (ADR 0007)."""
    if not rows:
        return rows
    notes = {r[0]: json_out(r[5]) for r in rows}
    oldest = min(float(n.get("created_at") or now) for n in notes.values())
    window = silences.Window.read(now, since=oldest)
    if not window.active and not window.ended:
        return rows
    keep, undo = [], []
    for r in rows:
        rid, token, prior = r[0], r[1], r[8]
        silence = silences.silencing(notes[rid], now, window)
        if silence is not None:
            undo.append((rid, token, prior, silence.ends_at))
            silences.hold(runtime, silence, rid, silences.DELIVERY, now)
        elif (now - float(notes[rid].get("created_at") or now) > silences.freshness_seconds()
              and (ended := silences.silenced_while_waiting(notes[rid], window)) is not None):
            withhold(runtime, rid, SILENCE_ENDED_STALE,
                     "held by a silence and older than the freshness bound when it ended: not sent", now,
                     lease_token=token, detail={"silence_id": ended.id,
                                                "freshness_seconds": silences.freshness_seconds()})
        else:
            keep.append(r)
    if undo:
        values, params = sql_values(undo, ("text", "text", "text", "double precision"))
        guard, guard_params = sql_guard("status", [(PENDING, PENDING)], edge=HOLD, column="n.status")
        with connection.cursor() as cur:
            cur.execute(
                f"UPDATE uns_notifications AS n SET lease_token = v.column3, lease_until = 0.0, "  # nosec B608  # bound VALUES, constant guard
                f"next_attempt = v.column4, attempts = n.attempts - 1, cycle_attempts = n.cycle_attempts - 1 "
                f"FROM {values} AS v WHERE n.id = v.column1 AND {guard} AND n.lease_token = v.column2",
                [*params, *guard_params],
            )
    return keep


def confirm_leases(runtime, todo: list[tuple[Claim, str]]) -> list[tuple[Claim, str]]:
    """Before the channel attempts ``todo`` (pairs of claim and channel, one per claim), in one
    transaction: one conditional UPDATE confirms every lease still held (``lease_token`` and
    ``lease_until > now``) and renews it to ``now + lease_seconds`` (never shortening it), then
    CHANNEL_ATTEMPT_STARTED is inserted for those. Claims whose lease is gone get ``lease_lost``.
    Returns the pairs still held.

    The renewal is what keeps the channel timeout rule (at most half the lease,
    ``adapters.base.max_timeout_seconds``) true for an attempt that starts late in its claim's
    lease (the sliding window starts a batch's later rows as threads free up): without it, a row
    confirmed with 20 s of lease left behind a 30 s receiver lost its lease mid-request and was
    sent again by the next claim, with no crash at all. Only the holder renews (fenced by its
    token, and only while unexpired), so a crashed worker's rows are recovered at most one lease
    after its last check."""
    if not todo:
        return []
    now = runtime.clock()
    renewed = now + runtime.lease_seconds
    values, params = sql_values([(c.id, c.lease_token) for c, _ in todo], ("text", "text"))
    with transaction.atomic():
        with connection.cursor() as cur:
            cur.execute(
                f"UPDATE uns_notifications AS n SET lease_token = n.lease_token, "  # nosec B608  # bound VALUES, constant guard
                f"lease_until = CASE WHEN n.lease_until < %s THEN %s ELSE n.lease_until END FROM {values} AS v "
                f"WHERE n.id = v.column1 AND n.lease_token = v.column2 AND n.lease_until > %s RETURNING id",
                [renewed, renewed, *params, now],
            )
            held_ids = {r[0] for r in cur.fetchall()}
        held = [(c, ch) for c, ch in todo if c.id in held_ids]
        timeline.insert_events(runtime, [timeline.event(c.id, timeline.CHANNEL_ATTEMPT_STARTED, {
            "channel": ch,
            "lease_token": c.lease_token,
            "attempt": c.attempt,
            "cycle": c.cycle,
            "cycle_attempt": c.cycle_attempt,
            "provider_effect_may_have_occurred": True,
        }, now) for c, ch in held])
    for c, _ch in todo:
        if c.id in held_ids:
            c.channel_started = True
            c.lease_until = max(c.lease_until, renewed)
        else:
            c.lease_lost = True
    return held



def release_unattempted(runtime, claims: list[Claim]) -> list[DispatchReport]:
    """Undo the claims of rows whose channels were never attempted (a stopping worker), in one
    transaction: one UPDATE names each claim's ``lease_token`` and puts back what the claim
    changed (``lease_token`` to the one held before, NULL unless the claim was a recovery;
    ``lease_until`` 0; ``attempts`` and ``cycle_attempts`` minus one), so another worker claims
    the row at once, with the same attempt number and without
    ``recovery_may_repeat_provider_effect``. No event is written: the catalog (reference
    section 3) has no kind for a released claim; the timeline shows the claim's ATTEMPT_STARTED
    with no CHANNEL_ATTEMPT_STARTED, then the next claim's. A claim whose token no longer
    matches (lease expired and taken) is left alone and reported ``LEASE_LOST`` without an event.
    Returns one ``DispatchReport`` per claim (``RELEASED`` or ``LEASE_LOST``)."""
    if not claims:
        return []
    values, params = sql_values([(c.id, c.lease_token, c.prior_lease_token) for c in claims], ("text", "text", "text"))
    guard, guard_params = _lease_guard()
    with transaction.atomic():
        with connection.cursor() as cur:
            cur.execute(
                f"UPDATE uns_notifications AS n SET lease_token = v.column3, lease_until = 0.0, "  # nosec B608  # bound VALUES, constant guard
                f"attempts = n.attempts - 1, cycle_attempts = n.cycle_attempts - 1 FROM {values} AS v "
                f"WHERE n.id = v.column1 AND {guard} AND n.lease_token = v.column2 RETURNING id",
                [*params, *guard_params],
            )
            undone = {r[0] for r in cur.fetchall()}
    return [DispatchReport(c.id, RELEASED if c.id in undone else "LEASE_LOST", attempt=c.attempt - 1)
            for c in claims]

