"""``dispatch``: leased, fenced delivery in batches (DESIGN.md write-path rule 2; reference 1.1).

Every step works on the whole batch in as few statements as the rules allow, and every write
names the row's ``lease_token`` in its WHERE clause:

1. Claim, one transaction committed before any adapter I/O: one ``UPDATE ... FROM (SELECT ...
   FOR UPDATE SKIP LOCKED LIMIT n) ... RETURNING`` on PostgreSQL gives each due PENDING leader a
   fresh ``lease_token`` (``gen_random_uuid()``) and ``lease_until = now + lease``; one bulk
   INSERT of ATTEMPT_STARTED. SQLite has no SKIP LOCKED and no RETURNING of a joined table, so
   there the due rows are read first and then claimed by one conditional ``UPDATE ... FROM
   (VALUES ...)`` naming each row's previous token (its IMMEDIATE transaction serialises writers).
2. Attempt, in channel rounds (every claim's first pending channel, then every claim's second,
   ...). Before a round's adapters run, one transaction confirms the leases of all of them (one
   conditional ``UPDATE ... FROM (VALUES (id, lease_token)) ... AND lease_until > now RETURNING
   id``, which also renews each held lease to ``now + lease``) and bulk-inserts
   CHANNEL_ATTEMPT_STARTED for the rows still held, so every channel attempt is preceded by a
   committed check and starts with a whole lease ahead of it (twice its longest timeout). A row whose check fails is LEASE_LOST and its
   adapter never runs. The adapters then run with no transaction open; each answer is kept in
   memory as a CHANNEL_ATTEMPT_RESULT row (``provider_observed_at`` = when it answered).
   An adapter making several provider attempts in one channel attempt (one per Apprise URL)
   confirms the lease again before each after the first (``_ProviderAttempts.begin``: the same
   committed check and CHANNEL_ATTEMPT_STARTED for its one row) and records one
   CHANNEL_ATTEMPT_RESULT per provider attempt.
   With a stop signal (the worker loops), the attempts run in a sliding window instead of
   rounds (``_Window``), so one slow receiver (a webhook taking its whole timeout) holds only its
   own rows, not the batch: ``concurrency`` adapter threads; each claim has at most one channel
   attempt running and its next channel becomes ready when that one answers. Whenever threads
   are free, the next ready rows, as many as there are free threads, are confirmed together (the
   same committed check and CHANNEL_ATTEMPT_STARTED for all of them, in claim order) and start at
   once; a confirm waits up to ``_Window.GATHER`` (5 ms) for half the threads to be free, so fast
   receivers still get batched confirms. A row is confirmed only when a thread is free for it, so
   a row whose channel has not started when the stop comes has no CHANNEL_ATTEMPT_STARTED and can
   be released as below. Per-channel cap (decided for issue 10): while another channel of the
   pass has rows ready or running, one channel holds at most ``ceil(concurrency / 2)`` threads,
   so a slow channel cannot take every thread from the fast ones; a channel alone in the pass
   (the usual storm: one webhook) uses them all. Claims whose attempts are all finished are
   settled in chunks as the window runs (below, one transaction per chunk): a chunk is settled
   once its oldest claim has waited ``_Window.SETTLE_INTERVAL`` (0.1 s) or nothing is left to
   run, so the fast channels' rows are DELIVERED while a slow one is still waiting; with fast
   receivers a batch of 50 is one chunk. When only slow attempts are left (nothing ready, half
   the threads free), the window claims another batch into itself on PostgreSQL
   (``_Window._refill``: the usual committed claim), for up to a quarter lease into the pass; then the pass ends when its
   last attempt does. So rows accepted for a fast channel while a slow receiver holds a few
   threads are claimed and delivered within about ``REFILL_IDLE`` (0.25 s), not after the slow
   channel's timeout.
3. Settle, one transaction (per batch, or per chunk of the window): the CHANNEL_ATTEMPT_RESULT rows of every attempted claim, whatever
   became of its lease (the reference keeps the provider observation of a lost lease); one
   ``UPDATE ... FROM (VALUES ...) ... RETURNING`` applies each row's own changes where
   ``status = PENDING``, its ``lease_token`` and an unexpired lease still match; rows it did not
   return lost their lease: LEASE_LOST, and nothing else changes. DELIVERY_RESULT, audits and
   the dedup-group settlement (only rows with a dedup key) are built from the claim and the
   RETURNING, without re-reading rows. The batch runs in a savepoint; if it raises, each row is
   settled in its own savepoint, so one failing row never rolls back the others: it keeps its
   lease (recovered after expiry, flagged ``recovery_may_repeat_provider_effect``), its
   CHANNEL_ATTEMPT_RESULT rows are still written when they can be, and it is reported
   ``UNSETTLED``.

Failover (the policy's ``fallback_channels``, frozen in ``effective``): each effective channel
is a slot served by its chain ``[channel, *fallbacks]``. A channel's failure that ends it for
the cycle (permanent, or any failure on the cycle's last attempt, ``cycle_attempt >=
max_attempts``) hands its slot to the next fallback: a CHANNEL_FAILED_OVER row (``channel``,
``fallback``, ``primary``, ``reason`` = ``permanent_failure`` | ``attempts_exhausted``,
``error``, the lease and attempt numbers) and, in the next channel round of the same attempt,
the fallback's own committed lease check and CHANNEL_ATTEMPT_STARTED, then its
CHANNEL_ATTEMPT_RESULT. A fallback failing transiently with budget left is what the retry tries
(the given-up channels are kept as ``outcome["failover"] = {"cycle", "given_up"}``). The row is
FAILED (dead-lettered when GUARANTEED) only when a slot's last channel fails that way; a slot is
delivered when any channel of its chain delivered. A replay (new cycle) starts every chain from
its first channel. A crash before the settle loses ``given_up`` with the rest of the attempt's
answers: the next attempt starts the chain again.

What a crash loses (CHANNEL_ATTEMPT_RESULT rides in the settle's commit instead of one
autocommit per attempt, which trades durability for one commit per batch):

- before the claim commits: nothing (the rows were never leased);
- after the claim, before a round's check commits: no provider was called; the lease expires
  and the next claim's ATTEMPT_STARTED says ``recovery_may_repeat_provider_effect: true``
  (conservatively: the previous lease ended without a settle);
- after the check committed, before or while the adapter runs, or after the adapter answered
  but before the settle of its claim's chunk commits: the provider's answer (the
  CHANNEL_ATTEMPT_RESULT row) is lost. The timeline still tells it: CHANNEL_ATTEMPT_STARTED with
  ``provider_effect_may_have_occurred: true`` and no result for that ``lease_token``, then,
  after the lease expires, ATTEMPT_STARTED with ``recovery_may_repeat_provider_effect: true``.
  The provider may see the notification twice; it is never lost;
- after the settle commits: nothing for the claims it settled. In the window, the claims of
  the pass not yet settled (still running, or finished within the last ``SETTLE_INTERVAL``)
  are each in one of the cases above; a row not yet confirmed is in the second.

Stopping (``dispatch(..., stop=...)``, used by the worker loops): once the stop is requested no
row and no channel starts; channel attempts under way may finish until the stop's grace ends.
Everything that finished is settled as above (the window keeps settling its chunks during the
grace). A claim whose channels were never attempted is
released at once (``release_unattempted``): the claim is undone, so another worker takes the row
immediately with the same attempt number and no recovery flag. A claim whose adapter call is
still running when the grace ends keeps its lease (it is recovered after expiry, flagged
``recovery_may_repeat_provider_effect``) and is reported ``IN_FLIGHT``; the results its earlier
channels observed are written.
"""
import json
import logging
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass, field

from django.db import close_old_connections, connection, transaction

from ..adapters.base import AttemptContext, ChannelTarget, DeliveryResult
from ..logformat import log_ids
from ..models import Channel, Event, Notification, NotificationAuditRecord
from . import audit, dedup_group, timeline
from . import metrics as _metrics
from .errors import database_unreachable
from .keys import new_id
from .transitions import (ACK_PENDING, DELIVERED, FAILED, LEASE, PENDING, RETRY, Settlement, backoff_seconds,
                          retry_delay_seconds, settle, sql_guard)

log = logging.getLogger("uns.dispatch")

# Report statuses besides the settled status and LEASE_LOST.
RELEASED = "RELEASED"  # claimed, never attempted, lease released (claim undone)
IN_FLIGHT = "IN_FLIGHT"  # adapter call still running when the stop's grace ended; lease kept
UNSETTLED = "UNSETTLED"  # the row's settle raised; it keeps its lease and is recovered after expiry

_STOP_POLL_SECONDS = 0.25  # how often a pass waiting on its adapter calls looks for a stop


@dataclass
class Claim:
    """A row this worker holds a lease on, and what its attempt observed."""

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
    stopped: bool = False  # a stop kept a channel of this claim from starting
    lease_until: float = float("inf")  # epoch seconds; set by the claim, renewed by each lease check
    # CHANNEL_ATTEMPT_RESULT rows observed but not yet written (the settle writes them).
    result_events: list = field(default_factory=list)

    @property
    def log_extra(self) -> dict:
        """``extra=`` for log lines about this claim: its notification id and lease token."""
        return log_ids(self.id, self.lease_token)

    @property
    def effective(self) -> dict:
        return self.notification["metadata"]["uns_resolution"]["effective"]

    # Failover (the policy's ``fallback_channels``, see the module doc): each effective channel
    # is a slot served by its chain [channel, *fallbacks]; ``given_up`` holds the channels of
    # this cycle handed over to their next fallback (stored as ``outcome["failover"]``).
    given_up: set = field(default_factory=set)

    def __post_init__(self):
        stored = self.outcome.get("failover") or {}
        if stored.get("cycle") == self.cycle:  # a replay (new cycle) starts every chain again
            self.given_up = set(stored.get("given_up") or ())

    def chain(self, primary: str) -> list[str]:
        """The channels that may serve ``primary``'s slot, in order: itself, then its fallbacks."""
        return [primary, *(self.effective.get("fallback_channels") or {}).get(primary, [])]

    def all_channels(self) -> set[str]:
        """Every channel a chain of this claim may attempt."""
        return {ch for p in self.effective["channels"] for ch in self.chain(p)}

    def succeeded(self) -> set[str]:
        """Channels delivered in this obligation: earlier attempts' and this attempt's."""
        return {*self.outcome.get("channels_succeeded", []), *(ch for ch, r in self.results.items() if r.success)}

    def current(self, primary: str) -> str:
        """The channel now serving ``primary``'s slot: the first of its chain not given up."""
        chain = self.chain(primary)
        return next((ch for ch in chain if ch not in self.given_up), chain[-1])

    def open_slots(self) -> list[str]:
        """The effective channels whose slot no channel of its chain has delivered yet."""
        done = self.succeeded()
        return [p for p in self.effective["channels"] if not any(ch in done for ch in self.chain(p))]

    def next_channel(self) -> str | None:
        """The next channel this attempt should try: the current channel of the first open slot
        that has no answer in this attempt yet (policy order), or None when none is left."""
        for p in self.open_slots():
            ch = self.current(p)
            if ch not in self.results:
                return ch
        return None

    def exhausted(self) -> bool:
        """This attempt is the cycle's last (``cycle_attempt >= max_attempts``)."""
        return self.cycle_attempt >= int(self.effective["max_attempts"])

    def fail_over(self, channel: str, result: DeliveryResult, now: float) -> None:
        """After ``channel`` failed: if that failure ends it for this cycle (permanent, or on the
        cycle's last attempt), every open slot it serves that has a fallback left hands over to
        the next one (``given_up``) with a CHANNEL_FAILED_OVER row for the settle; the next round
        of this attempt tries the fallback. A chain's last channel is never given up."""
        if result.success or (result.retryable and not self.exhausted()):
            return
        moves = []
        for p in self.open_slots():
            chain = self.chain(p)
            if self.current(p) != channel:
                continue
            rest = [ch for ch in chain[chain.index(channel) + 1:] if ch not in self.given_up]
            if rest:
                moves.append((p, rest[0]))
        for p, fallback in moves:
            self.given_up.add(channel)
            self.result_events.append(timeline.event(self.id, timeline.CHANNEL_FAILED_OVER, {
                "channel": channel,
                "fallback": fallback,
                "primary": p,
                "reason": "permanent_failure" if not result.retryable else "attempts_exhausted",
                "error": result.error,
                "lease_token": self.lease_token,
                "attempt": self.attempt,
                "cycle": self.cycle,
                "cycle_attempt": self.cycle_attempt,
            }, now))

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

def _pg() -> bool:
    return connection.vendor == "postgresql"


def _json_in(value) -> str:
    return json.dumps(value)


def _json_out(value):
    return json.loads(value) if isinstance(value, (str, bytes)) else value


def _values(rows: list[tuple], casts: tuple[str, ...]) -> tuple[str, list]:
    """``(VALUES (%s, ...), ...)`` for ``rows`` and its flat parameter list. ``casts``: one SQL
    type per column for PostgreSQL (client-side literals carry no type), ignored on SQLite."""
    if _pg():
        one = "(" + ", ".join(f"CAST(%s AS {t})" for t in casts) + ")"
    else:
        one = "(" + ", ".join("%s" for _ in casts) + ")"
    return "(VALUES " + ", ".join([one] * len(rows)) + ")", [p for r in rows for p in r]


# 1. claim ------------------------------------------------------------------------------------

_CLAIM_COLUMNS = "n.id, n.lease_token, n.attempts, n.cycle, n.cycle_attempts, n.notification, n.outcome, n.next_attempt"

# The due rows are a MATERIALIZED CTE, read and locked once: as a sub-select in FROM the
# planner may rescan it (a nested loop), and a rescan of a LIMIT ... SKIP LOCKED query can
# return other rows, so more than ``limit`` rows would be claimed.
_CLAIM_PG = """
WITH due AS MATERIALIZED (
    SELECT id, lease_token AS prior, gen_random_uuid()::text AS token
      FROM uns_notifications
     WHERE status = 'PENDING' AND dedup_owner_id IS NULL AND next_attempt <= %s AND lease_until <= %s
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
 WHERE status = 'PENDING' AND dedup_owner_id IS NULL AND next_attempt <= %s AND lease_until <= %s
 ORDER BY next_attempt LIMIT %s
"""


def _lease_guard() -> tuple[str, list]:
    """The WHERE fragment of a claim or release: status PENDING -> PENDING as the LEASE edge."""
    return sql_guard("status", [(PENDING, PENDING)], edge=LEASE, column="n.status")


def _claim_rows(runtime, now: float, limit: int) -> list[tuple]:
    """Lease up to ``limit`` due leaders; rows of ``_CLAIM_COLUMNS`` plus the prior token."""
    until = now + runtime.lease_seconds
    guard, guard_params = _lease_guard()
    with connection.cursor() as cur:
        if _pg():
            cur.execute(_CLAIM_PG.format(guard=guard, columns=_CLAIM_COLUMNS),
                        [now, now, limit, until, *guard_params, now])
            return cur.fetchall()
        cur.execute(_DUE_SQLITE, [now, now, limit])
        due = [(rid, prior, new_id()) for rid, prior in cur.fetchall()]
        if not due:
            return []
        values, params = _values(due, ("text", "text", "text"))
        cur.execute(
            f"UPDATE uns_notifications AS n SET lease_token = v.column3, lease_until = %s, "
            f"attempts = n.attempts + 1, cycle_attempts = n.cycle_attempts + 1 FROM {values} AS v "
            f"WHERE n.id = v.column1 AND {guard} AND n.lease_until <= %s "
            f"AND n.lease_token IS v.column2 RETURNING {_CLAIM_COLUMNS.replace('n.', '')}",
            [until, *params, *guard_params, now],
        )
        prior = {rid: p for rid, p, _ in due}
        return [(*r, prior[r[0]]) for r in cur.fetchall()]


def claim(runtime, limit: int) -> list[Claim]:
    """Claim up to ``limit`` due PENDING leaders (oldest ``next_attempt`` first) in one committed
    transaction: each gets a fresh ``lease_token`` and ``lease_until = now + lease_seconds``
    (seconds, epoch), ``attempts`` and ``cycle_attempts`` + 1, and an ATTEMPT_STARTED event
    (``recovery_may_repeat_provider_effect`` when it takes over an expired lease). Two statements
    on PostgreSQL (the claiming UPDATE ... RETURNING and the event INSERT), three on SQLite.
    Returns the claims; a row another worker claimed first is skipped. Reference 1.1."""
    now = runtime.clock()
    claims, events = [], []
    with transaction.atomic():
        rows = sorted(_claim_rows(runtime, now, limit), key=lambda r: (r[7], r[0]))
        for rid, token, attempts, cycle, cycle_attempts, notification, outcome, _next, prior in rows:
            c = Claim(rid, token, attempts, cycle, cycle_attempts, _json_out(notification), _json_out(outcome),
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


# 2. attempt ----------------------------------------------------------------------------------

def _confirm_leases(runtime, todo: list[tuple[Claim, str]]) -> list[tuple[Claim, str]]:
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
    values, params = _values([(c.id, c.lease_token) for c, _ in todo], ("text", "text"))
    with transaction.atomic():
        with connection.cursor() as cur:
            cur.execute(
                f"UPDATE uns_notifications AS n SET lease_token = n.lease_token, "
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


def _send(runtime, c: Claim, channel: str, targets: dict[str, ChannelTarget]) -> None:
    """Run one channel's adapter (its lease confirmed, no transaction open) and keep the answer
    as ``c.results[channel]`` and an unsaved CHANNEL_ATTEMPT_RESULT row for the settle.

    The round's check may be a while ago (the adapters before this one were slow): if the lease
    has expired by the clock since (``lease_until`` as the last committed check left it, and only
    an expired lease can be taken over), the provider is not called and the claim is lease-lost.

    An adapter that makes several provider attempts in one channel attempt (Apprise: one per
    URL) gets ``context.provider`` (``_ProviderAttempts``): a committed lease check precedes each
    of them and each is its own CHANNEL_ATTEMPT_RESULT; its aggregate answer settles the channel
    without another row."""
    if runtime.clock() >= c.lease_until:
        c.lease_lost = True
        return
    target = targets.get(channel)
    adapter = runtime.adapters.get(target.kind) if target else None
    provider = None
    if target is None:
        result = DeliveryResult(False, retryable=False, error=f"channel {channel!r} is no longer configured")
    elif adapter is None:
        result = DeliveryResult(False, retryable=False, error=f"no adapter for channel kind {target.kind!r}")
    else:
        provider = _ProviderAttempts(runtime, c, channel)
        started = runtime.clock()
        try:
            result = adapter.send(c.notification, target, c.context(provider))
        except Exception as exc:  # an adapter bug must not lose the attempt's record
            log.exception("adapter %s raised for %s", target.kind, c.id, extra=c.log_extra)
            result = DeliveryResult(False, retryable=True, error=f"adapter raised {type(exc).__name__}: {exc}")
        # Every adapter call passes here, so the latency histogram is observed once, for all.
        _metrics.observe_attempt(channel, runtime.clock() - started)
    if provider is None or not provider.observed_count:
        # One provider attempt (the adapter did not record its own): the answer is the record.
        c.result_events.append(_result_event(c, channel, result, runtime.clock()))
    c.results[channel] = result
    c.fail_over(channel, result, runtime.clock())


def _result_event(c: Claim, channel: str, result: DeliveryResult, now: float) -> Event:
    """The CHANNEL_ATTEMPT_RESULT row of one provider observation (reference section 3)."""
    return timeline.event(c.id, timeline.CHANNEL_ATTEMPT_RESULT, {
        "lease_token": c.lease_token,
        "attempt": c.attempt,
        "cycle": c.cycle,
        "cycle_attempt": c.cycle_attempt,
        "channel": channel,
        "success": result.success,
        "message_id": result.message_id,
        "error": result.error,
        # metadata is the catalog's free-form field: the provider's Retry-After (seconds) rides
        # there, as the catalog fixes the payload's own keys.
        "metadata": {**result.metadata, "retryable": result.retryable,
                     **({"retry_after_seconds": result.retry_after} if result.retry_after is not None else {})},
        "provider_observed_at": now,
    }, now)


class _ProviderAttempts:
    """``adapters.base.ProviderAttempts`` for one channel attempt of one claim: the lease check
    before each provider attempt after the first is ``_confirm_leases`` for this one row (a
    committed conditional UPDATE plus CHANNEL_ATTEMPT_STARTED), so a built-in provider retry
    never runs on a lost lease; each observation is a CHANNEL_ATTEMPT_RESULT for the settle."""

    def __init__(self, runtime, c: Claim, channel: str):
        self._runtime, self._claim, self._channel = runtime, c, channel
        self.begun = 0
        self.observed_count = 0

    def begin(self) -> bool:
        c = self._claim
        if c.lease_lost or self._runtime.clock() >= c.lease_until:
            c.lease_lost = True
            return False
        self.begun += 1
        if self.begun == 1:  # the round's check preceded this channel's first provider attempt
            return True
        return bool(_confirm_leases(self._runtime, [(c, self._channel)]))

    def observed(self, result: DeliveryResult) -> None:
        self.observed_count += 1
        self._claim.result_events.append(_result_event(self._claim, self._channel, result, self._runtime.clock()))

    def succeeded_before(self) -> set[str]:
        c = self._claim
        if c.attempt <= 1:
            return set()
        payloads = Event.objects.filter(notification_id=c.id, kind=timeline.CHANNEL_ATTEMPT_RESULT,
                                        payload__channel=self._channel,
                                        payload__success=True).values_list("payload", flat=True)
        keys = {((p.get("metadata") or {}).get("provider_key")) for p in payloads}
        keys.discard(None)
        return keys


def _send_in_thread(runtime, c, channel, targets):
    try:
        _send(runtime, c, channel, targets)
    finally:
        close_old_connections()  # an adapter that used the database (console) in this thread


def _round(claims: list[Claim]) -> list[tuple[Claim, str]]:
    """The next channel round: each live claim's next channel (``Claim.next_channel``: its
    pending channels in policy order, a fallback right after the channel it replaces)."""
    todo = []
    for c in claims:
        if c.lease_lost or c.stopped:
            continue
        channel = c.next_channel()
        if channel is not None:
            todo.append((c, channel))
    return todo


def attempt_batch(runtime, claims: list[Claim], targets: dict[str, ChannelTarget]) -> None:
    """Attempt every pending channel of ``claims`` in channel rounds (no stop): per round one
    committed lease check with CHANNEL_ATTEMPT_STARTED for all its rows, then their adapters
    (inline, or in ``runtime.concurrency`` threads). Fills ``c.results``, ``c.result_events``
    and ``c.lease_lost``; writes nothing else. See the module doc."""
    while todo := _round(claims):
        held = _confirm_leases(runtime, todo)
        if runtime.concurrency > 1 and len(held) > 1:
            with ThreadPoolExecutor(max_workers=min(runtime.concurrency, len(held))) as pool:
                list(pool.map(lambda pair: _send_in_thread(runtime, pair[0], pair[1], targets), held))
        else:
            for c, ch in held:
                _send(runtime, c, ch, targets)


def attempt(runtime, c: Claim, targets: dict[str, ChannelTarget]) -> None:
    """``attempt_batch`` for one claim."""
    attempt_batch(runtime, [c], targets)


def _channel_cap(width: int) -> int:
    """The most adapter threads of one pass that one channel may hold while another channel has
    work in the pass: ``ceil(width / 2)`` (all of them when ``width`` is 1)."""
    return max(1, -(-width // 2))


class _Window:
    """The attempts of one pass under a stop signal, in a sliding window (see the module doc):
    ``width`` (``runtime.concurrency``) adapter threads; whenever threads are free, the next
    ready rows (each claim's next channel, claim order, one channel attempt per claim at a time)
    are confirmed together, one committed lease check with CHANNEL_ATTEMPT_STARTED for all of
    them (``_confirm_leases``), and start at once; a claim with nothing left to attempt joins the
    next settle chunk, settled (``settle_batch``) once its oldest member has waited
    ``SETTLE_INTERVAL`` seconds or nothing is left to run.

    ``run()`` returns ``(reports, unattempted, in_flight, errors)``: the settled chunks'
    reports, claims to release, claims whose adapter call still runs (left to their lease), and
    the exceptions raised (their claims are in none of the lists: left to their lease)."""

    SETTLE_INTERVAL = 0.1  # seconds a finished claim waits at most for its chunk's settle
    GATHER = 0.005  # seconds a free thread waits at most for others, so confirms are batched
    REFILL_IDLE = 0.25  # seconds between refill claims that found nothing due

    def __init__(self, runtime, claims: list[Claim], targets, stop, limit: int | None = None):
        self.runtime, self.claims, self.targets, self.stop = runtime, list(claims), targets, stop
        self.limit = limit or runtime.batch_size
        # Refill (``_refill``) only this long into the pass, so a pass (and the worker loop's
        # age that readiness watches) stays bounded: a quarter lease, then the slowest attempt.
        self.refill_until = time.monotonic() + runtime.lease_seconds / 4
        self.refill_after: float | None = None
        self.width = max(1, runtime.concurrency)
        self.cap = _channel_cap(self.width)
        # Free threads that make a group: a confirm waits (GATHER) for this many, a refill for them.
        self.group = max(1, self.width // 2)
        self.ready: list[Claim] = []
        self.running: dict = {}  # future -> (claim, channel)
        self.finished: list[Claim] = []  # attempted, waiting for the next settle chunk
        self.finished_since: float | None = None  # monotonic time the oldest of them finished
        self.free_since: float | None = None  # monotonic time a thread became free with rows ready
        self.reports: list[DispatchReport] = []
        self.errors: list = []
        self.failed: set[str] = set()
        self.done_ids: set[str] = set()
        self._take(self.claims)

    def _take(self, claims: list[Claim]) -> None:
        """Queue fresh ``claims``: those with a channel to attempt become ready (claim order), the
        rest (nothing to attempt) join the next settle chunk."""
        for c in claims:
            if not c.lease_lost and c.next_channel() is not None:
                self.ready.append(c)
            else:
                self._finish(c)

    # refilling ---------------------------------------------------------------------------
    def _refill(self) -> None:
        """Claim another batch into the running window when only slow attempts hold it: nothing
        ready, at least half the threads free, attempts still running, no stop and no error,
        within ``refill_until``. The claim is the usual one (committed before any I/O, fenced);
        a claim that found nothing is not retried for ``REFILL_IDLE`` seconds. Without this the
        worker's next claim waited for the batch's slowest attempt (up to its channel's
        timeout), and rows accepted meanwhile for fast channels waited with it. PostgreSQL only
        (the scaled mode, where storms are met by several workers): on SQLite every claim takes
        the database's one write lock, and the embedded mode's pass keeps its batch."""
        if (not _pg() or self.ready or not self.running or self.stop.is_set() or self.errors
                or self.width - len(self.running) < self.group):
            return
        now = time.monotonic()
        if now >= self.refill_until or (self.refill_after is not None and now < self.refill_after):
            return
        try:
            more = claim(self.runtime, self.limit)
        except Exception as exc:  # the database went away: what is running keeps its lease
            self.errors.append(exc)
            return
        if not more:
            self.refill_after = now + self.REFILL_IDLE
            return
        self.refill_after = None
        missing = {ch for c in more for ch in c.all_channels()} - set(self.targets)
        if missing:
            self.targets = {**self.targets, **_targets(missing)}
        self.claims += more
        self._take(more)

    # choosing and starting -------------------------------------------------------------
    def _pick(self, free: int) -> list[tuple[Claim, str]]:
        """Up to ``free`` ready (claim, channel) pairs in claim order. A channel already holding
        ``cap`` threads gets another only when no other channel has a row ready or running
        (so a slow receiver cannot take every thread, and a pass with one channel uses all)."""
        busy: dict[str, int] = {}
        for _c, ch in self.running.values():
            busy[ch] = busy.get(ch, 0) + 1
        pairs = [(c, c.next_channel()) for c in self.ready]
        channels = {ch for _c, ch in pairs} | set(busy)
        picked = []
        for c, ch in pairs:
            if len(picked) >= free:
                break
            if busy.get(ch, 0) >= self.cap and len(channels) > 1:
                continue
            busy[ch] = busy.get(ch, 0) + 1
            picked.append((c, ch))
        return picked

    def _start(self, pool) -> None:
        free = self.width - len(self.running)
        if free <= 0 or not self.ready:
            self.free_since = None
            return
        picked = self._pick(free)
        if not picked:  # every ready row's channel is at its cap: wait for an answer
            self.free_since = None
            return
        now = time.monotonic()
        if self.free_since is None:
            self.free_since = now
        # Batch the confirms: start when half the threads are free, when every ready row fits,
        # when nothing runs, or when a free thread has waited GATHER seconds.
        if (len(picked) < min(self.group, len(self.ready)) and self.running
                and now - self.free_since < self.GATHER):
            return
        self.free_since = None
        chosen = {c.id for c, _ch in picked}
        self.ready = [c for c in self.ready if c.id not in chosen]
        try:
            held = _confirm_leases(self.runtime, picked)
        except Exception as exc:  # the database went away: these claims keep their lease
            self.errors.append(exc)
            self.failed.update(chosen)
            return
        held_ids = {c.id for c, _ch in held}
        for c, _ch in picked:
            if c.id not in held_ids:
                self._finish(c)  # LEASE_LOST: its adapter never runs
        for c, ch in held:
            self.running[pool.submit(_send_in_thread, self.runtime, c, ch, self.targets)] = (c, ch)

    # finishing and settling --------------------------------------------------------------
    def _finish(self, c: Claim) -> None:
        if not self.finished:
            self.finished_since = time.monotonic()
        self.finished.append(c)
        self.done_ids.add(c.id)

    def _collect(self, done) -> None:
        for f in done:
            c, _ch = self.running.pop(f)
            if f.exception() is not None:
                self.errors.append(f.exception())
                self.failed.add(c.id)
            elif c.lease_lost or c.next_channel() is None:
                self._finish(c)
            else:
                self.ready.insert(0, c)  # its next channel first: the claim settles sooner

    def _settle(self, force: bool = False) -> None:
        if not self.finished:
            return
        if not force and time.monotonic() - self.finished_since < self.SETTLE_INTERVAL:
            return
        chunk, self.finished = self.finished, []
        try:
            self.reports += settle_batch(self.runtime, chunk)
        except Exception as exc:  # the database went away: these claims keep their lease
            self.errors.append(exc)
            self.failed.update(c.id for c in chunk)

    def _timeout(self) -> float:
        """Seconds to wait for an adapter call before looking again (stop, settle, gather)."""
        t = _STOP_POLL_SECONDS
        now = time.monotonic()
        if self.finished:
            t = min(t, max(0.0, self.SETTLE_INTERVAL - (now - self.finished_since)))
        if self.free_since is not None:
            t = min(t, max(0.0, self.GATHER - (now - self.free_since)))
        if self.stop.is_set():
            t = min(t, self.stop.grace_left())
        return t

    def run(self) -> tuple[list, list, list, list]:
        pool = ThreadPoolExecutor(max_workers=self.width, thread_name_prefix="uns-attempt")
        try:
            while True:
                self._refill()
                if not self.stop.is_set() and not self.errors:
                    self._start(pool)
                self._settle()
                if not self.running:
                    if self.stop.is_set() or self.errors or not self.ready:
                        break
                    continue
                if self.stop.is_set() and self.stop.grace_left() <= 0:
                    break
                done, _pending = wait(list(self.running), timeout=self._timeout(), return_when=FIRST_COMPLETED)
                self._collect(done)
        finally:
            pool.shutdown(wait=False, cancel_futures=True)
        in_flight = [c for c, _ch in self.running.values()]
        still = {c.id for c in in_flight}
        unattempted = []
        for c in self.claims:
            if c.id in self.failed or c.id in still or c.id in self.done_ids:
                continue
            # a ready claim the stop (or an error) kept from its next channel
            c.stopped = True
            if c.channel_started:
                self.finished.append(c)  # settled with what its earlier channels observed
            else:
                unattempted.append(c)
        self._settle(force=True)
        return self.reports, unattempted, in_flight, self.errors


# 3. settle -----------------------------------------------------------------------------------

def _lease_lost_event(c: Claim, now: float) -> Event:
    return timeline.event(c.id, timeline.LEASE_LOST, {
        "lease_token": c.lease_token,
        "attempt": c.attempt,
        # The reference fixes this at true (before or after adapter execution): a lost lease
        # never proves that no provider effect happened.
        "provider_effect_may_have_occurred": True,
    }, now)


@dataclass
class _Plan:
    """What settling one claim writes if its lease still holds."""

    claim: Claim
    decision: Settlement
    outcome: dict
    changes: dict


def _plan(runtime, c: Claim, now: float) -> _Plan:
    eff = c.effective
    succeeded = list(dict.fromkeys([*c.outcome.get("channels_succeeded", []),
                                    *[ch for ch, r in c.results.items() if r.success]]))
    failed = {ch: r for ch, r in c.results.items() if not r.success}
    outcome = {
        "channels_attempted": list(dict.fromkeys([*c.outcome.get("channels_attempted", []), *c.results])),
        "channels_succeeded": succeeded,
        "channels_failed": list(failed),
        "error_message": "; ".join(f"{ch}: {r.error}" for ch, r in failed.items()) or None,
    }
    if c.given_up:
        outcome["failover"] = {"cycle": c.cycle, "given_up": sorted(c.given_up)}
    # Each open slot by its current channel (a given-up channel's failure is its fallback's
    # business now): dead when that channel's failure ends the chain (permanent, or on the
    # cycle's last attempt), untried when a stop came before it was attempted.
    slots = [c.current(p) for p in c.open_slots()]
    answers = [c.results.get(ch) for ch in slots]
    dead = any(r is not None and not r.success and (not r.retryable or c.exhausted()) for r in answers)
    untried = any(r is None for r in answers)
    if untried and not dead:
        # A stop came between channels: what is left is due again, not a failure (it does not
        # spend the budget into the DLQ); it backs off only if something failed.
        decision = Settlement(PENDING, False, any(r is not None and not r.success for r in answers))
    else:
        decision = settle(
            delivery_mode=eff["delivery_mode"],
            all_succeeded=not slots,
            permanent_failure=dead,
            cycle_attempts=c.cycle_attempt,
            max_attempts=int(eff["max_attempts"]),
        )
    changes = {"next_attempt": None, "delivered_at": None, "ack_status": None, "deadline": None}
    if decision.retry:
        b = eff["backoff"]
        backoff = backoff_seconds(
            cycle_attempt=c.cycle_attempt, base=b["base_seconds"], factor=b["factor"], cap=b["cap_seconds"],
            jitter=b["jitter"], unit_random=runtime.random(),
        )
        # The longest wait a failed channel's provider asked for (Retry-After); ``now`` is after
        # every answer, so the next attempt is no earlier than any of them asked.
        asked = [r.retry_after for r in failed.values() if r.retryable and r.retry_after is not None]
        changes["next_attempt"] = now + retry_delay_seconds(
            backoff=backoff, retry_after=max(asked, default=None), retry_after_max=runtime.retry_after_max_seconds)
    if decision.status == DELIVERED:
        changes["delivered_at"] = now
        if eff["require_ack"]:
            changes["ack_status"] = ACK_PENDING  # the edge None -> PENDING, guarded in _settle_rows
            changes["deadline"] = now + 60.0 * float(eff["ack_timeout_minutes"])
    return _Plan(c, decision, outcome, changes)


# Columns of the settle's VALUES list, with their PostgreSQL types. A NULL in the last four
# leaves the column as it is (they are only ever set by a settle, never cleared). A settle to
# FAILED also sets ``failed_at`` to its time, the ``created_at`` of the FAILED audit row it writes.
_SETTLE_CASTS = ("text", "text", "text", "jsonb", "boolean", "double precision", "double precision", "text",
                 "double precision")

_SETTLE_SQL = """
UPDATE uns_notifications AS n
   SET status = v.column3, outcome = v.column4, dead_letter = v.column5,
       lease_token = NULL, lease_until = 0.0,
       next_attempt = COALESCE(v.column6, n.next_attempt),
       delivered_at = COALESCE(v.column7, n.delivered_at),
       ack_status = COALESCE(v.column8, n.ack_status),
       deadline = COALESCE(v.column9, n.deadline),
       failed_at = CASE WHEN v.column3 = %s THEN %s ELSE n.failed_at END
  FROM {values} AS v
 WHERE n.id = v.column1 AND {guard} AND {ack_guard} AND n.lease_token = v.column2 AND n.lease_until > %s
RETURNING id, dedup_key, dedup_generation
"""


def _settle_rows(runtime, claims: list[Claim], now: float) -> list[DispatchReport]:
    """Settle ``claims`` (caller's transaction or savepoint): their CHANNEL_ATTEMPT_RESULT rows,
    one fenced UPDATE for the held ones, DELIVERY_RESULT / LEASE_LOST, audits and followers."""
    events = [e for c in claims for e in c.result_events]
    plans = [_plan(runtime, c, now) for c in claims if not c.lease_lost]
    won = {}
    if plans:
        rows = [(p.claim.id, p.claim.lease_token, p.decision.status, _json_in(p.outcome), p.decision.dead_letter,
                 p.changes["next_attempt"], p.changes["delivered_at"], p.changes["ack_status"],
                 p.changes["deadline"]) for p in plans]
        values, params = _values(rows, _SETTLE_CASTS)
        # Each row's edge PENDING -> its status is checked against the transition table (a
        # retry is the named RETRY self-edge) before the query; the WHERE names PENDING.
        guard, guard_params = sql_guard("status", [(PENDING, p.decision.status) for p in plans], edge=RETRY,
                                        column="n.status")
        # ack_status is written only as the edge "no ack state" -> PENDING (a delivery that needs
        # an ACK); every row a settle may touch is still without one, so the WHERE names that
        # prior state for the whole batch (a row that has one is not settled: lease lost).
        ack_guard, ack_params = sql_guard("ack_status", [(None, ACK_PENDING)], column="n.ack_status")
        with connection.cursor() as cur:
            cur.execute(_SETTLE_SQL.format(values=values, guard=guard, ack_guard=ack_guard),
                        [FAILED, now, *params, *guard_params, *ack_params, now])
            won = {rid: (key, gen) for rid, key, gen in cur.fetchall()}
    by_id = {p.claim.id: p for p in plans}
    reports, audits = [], []
    for c in claims:
        p = by_id.get(c.id)
        if p is None or c.id not in won:
            events.append(_lease_lost_event(c, now))
            reports.append(DispatchReport(c.id, "LEASE_LOST", attempt=c.attempt))
            continue
        status = p.decision.status
        events.append(timeline.event(c.id, timeline.DELIVERY_RESULT, {
            "status": status,
            "attempt": c.attempt,
            "cycle": c.cycle,
            "cycle_attempt": c.cycle_attempt,
            "dead_letter": p.decision.dead_letter,
            "outcome": p.outcome,
        }, now))
        dedup_key, generation = won[c.id]
        row = Notification(id=c.id, notification=c.notification, dedup_key=dedup_key, dedup_generation=generation)
        audits.append(audit.delivery_audit(row, status=status, outcome=p.outcome, at=now))
        if dedup_key and status == DELIVERED:
            events.extend(dedup_group.on_delivered(row, now))
        elif dedup_key and status == FAILED:
            events.extend(dedup_group.on_failed(row, now))
        reports.append(DispatchReport(c.id, status, p.decision.dead_letter, c.attempt))
    timeline.insert_events(runtime, events)
    NotificationAuditRecord.objects.bulk_create(audits)
    for c in claims:
        c.result_events = []
    return reports


def settle_batch(runtime, claims: list[Claim]) -> list[DispatchReport]:
    """Settle every attempted claim in one transaction (see the module doc): the whole batch in
    one savepoint; if that raises, each row in its own savepoint, so a failing row rolls back
    only itself: it is logged, keeps its lease (recovered after expiry) and is reported
    ``UNSETTLED``, and its CHANNEL_ATTEMPT_RESULT rows are still written when they can be. A lost
    database connection (``errors.database_unreachable``) is raised instead: no row is at fault,
    and the worker loop backs off and logs the outage once; the rows keep their leases.
    Returns one ``DispatchReport`` per claim, in order."""
    if not claims:
        return []
    now = runtime.clock()
    with transaction.atomic():
        try:
            with transaction.atomic():
                return _settle_rows(runtime, claims, now)
        except Exception as exc:
            if database_unreachable(exc):
                raise
            log.exception("settling a batch of %d failed; settling its rows one by one", len(claims))
        reports = []
        for c in claims:
            try:
                with transaction.atomic():
                    reports += _settle_rows(runtime, [c], now)
            except Exception as exc:
                if database_unreachable(exc):
                    raise
                log.exception("settling %s failed; it keeps its lease until it expires", c.id, extra=c.log_extra)
                reports.append(DispatchReport(c.id, UNSETTLED, attempt=c.attempt))
                _write_results(runtime, [c])
        return reports


def _write_results(runtime, claims: list[Claim]) -> None:
    """Insert the CHANNEL_ATTEMPT_RESULT rows ``claims`` observed and have not written yet, in
    a savepoint of the caller's transaction (or its own); a failure is logged, not raised."""
    events = [e for c in claims for e in c.result_events]
    if not events:
        return
    try:
        with transaction.atomic():
            timeline.insert_events(runtime, events)
    except Exception as exc:
        if database_unreachable(exc):  # the outage is logged once by the worker loop
            log.debug("writing %d CHANNEL_ATTEMPT_RESULT row(s) failed: database unreachable", len(events))
        else:
            log.exception("writing %d CHANNEL_ATTEMPT_RESULT row(s) failed", len(events))
        return
    for c in claims:
        c.result_events = []


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
    values, params = _values([(c.id, c.lease_token, c.prior_lease_token) for c in claims], ("text", "text", "text"))
    guard, guard_params = _lease_guard()
    with transaction.atomic():
        with connection.cursor() as cur:
            cur.execute(
                f"UPDATE uns_notifications AS n SET lease_token = v.column3, lease_until = 0.0, "
                f"attempts = n.attempts - 1, cycle_attempts = n.cycle_attempts - 1 FROM {values} AS v "
                f"WHERE n.id = v.column1 AND {guard} AND n.lease_token = v.column2 RETURNING id",
                [*params, *guard_params],
            )
            undone = {r[0] for r in cur.fetchall()}
    return [DispatchReport(c.id, RELEASED if c.id in undone else "LEASE_LOST", attempt=c.attempt - 1)
            for c in claims]


def _targets(names) -> dict[str, ChannelTarget]:
    return {
        ch.name: ChannelTarget(ch.name, ch.kind, ch.config or {}, ch.secret)
        for ch in Channel.objects.filter(name__in=list(names), enabled=True)
    }


def dispatch(runtime, limit: int | None = None, stop=None) -> list[DispatchReport]:
    """One dispatch pass: claim (committed), attempt in channel rounds (a committed lease check
    per round, adapters with no transaction open), settle (one transaction, a savepoint per
    failing row). Returns one ``DispatchReport`` per claimed row. With ``runtime.concurrency >
    1`` the adapter calls of a round run in a thread pool. With ``stop`` the attempts run in the
    sliding window instead (``_Window``: confirmed as threads free up, settled in chunks).

    ``stop``: a stop signal (``notifications.runtime.worker.StopSignal``: ``is_set()``,
    ``grace_left()`` in seconds); see the module doc. With it the attempts always run in a pool
    so that the pass can return when the grace ends; then the reports also carry ``RELEASED``
    and ``IN_FLIGHT`` rows. If an attempt raised (the database went away, say), the rest is
    still settled and released, then the first exception is raised; that claim keeps its lease.
    """
    if stop is not None and stop.is_set():
        return []
    claims = claim(runtime, limit or runtime.batch_size)
    if not claims:
        return []
    targets = _targets({ch for c in claims for ch in c.all_channels()})
    if stop is None:
        attempt_batch(runtime, claims, targets)
        return settle_batch(runtime, claims)
    window = _Window(runtime, claims, targets, stop, limit)
    reports, unattempted, in_flight, errors = window.run()
    claims = window.claims  # with the refills
    if unattempted:
        reports += release_unattempted(runtime, unattempted)
    if in_flight:
        _write_results(runtime, in_flight)  # what their earlier channels observed
        reports += [DispatchReport(c.id, IN_FLIGHT, attempt=c.attempt) for c in in_flight]
    if errors:
        # Claims whose attempt or settle raised keep their lease; what their adapters answered is kept.
        seen = {r.id for r in reports}
        _write_results(runtime, [c for c in claims if c.id not in seen])
        raise errors[0]
    return reports
