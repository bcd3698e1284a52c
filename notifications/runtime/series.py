"""Time-series rollups of the runtime's events (``uns_series_rollups``, ``models.SeriesRollup``):
``record`` counts a batch of events into per-bucket counters in the transaction that inserts
them (``kinds.insert_events`` calls it), and ``read`` sums them for a window. Why counters
written with the events, the shards and the latency bins: docs/explanation/charts.md.

Series (``series`` column; ``label`` "" unless said):

- ``accepted`` (ACCEPTED), ``deduplicated`` (a notification became DEDUPLICATED: DEDUP_LINKED
  behind a DELIVERED owner, or DEDUP_SATISFIED), ``delivered`` / ``retried`` / ``failed`` /
  ``dead_lettered`` (DELIVERY_RESULT with status DELIVERED / PENDING / FAILED, and with
  ``dead_letter``);
- ``latency`` (label: the bin, ``latency_bin``): first-cycle deliveries by seconds from
  acceptance (the notification's ``created_at``) to the DELIVERED settle;
- ``channel_attempts`` / ``channel_failures`` (label: the channel): CHANNEL_ATTEMPT_RESULT
  rows, and those with ``success`` false;
- ``dlq`` / ``ack_pending``: signed changes of the DLQ's depth (+1 dead-lettered, -1
  REPLAY_REQUESTED or FAILURE_RESOLVED) and of the pending acknowledgements (+1 a DELIVERED
  settle that set ack_status PENDING, -1 ACKED, DISMISSED or TIMED_OUT); ``read`` anchors them
  at the current value, so the gauge at a bucket's end is now's value minus the changes since.
"""
import math
import os
import threading
from collections import Counter
from dataclasses import dataclass

from django.db import connection, transaction

from ..models import SeriesRollup
from . import kinds

# Bucket sizes (seconds) written for every event, and how long uns_maintain keeps each.
STEPS = (60, 600, 3600)
RETENTION_SECONDS = {60: 2 * 86400, 600: 8 * 86400, 3600: 35 * 86400}
# Shards per (step, bucket, series, label): a writer adds to the shard of its process and
# thread, so concurrent writers (several processes and threads) mostly hit different rows.
SHARDS = 8

COUNTERS = ("accepted", "delivered", "retried", "failed", "dead_lettered", "deduplicated")
GAUGES = ("dlq", "ack_pending")
LATENCY = "latency"
CHANNEL_ATTEMPTS, CHANNEL_FAILURES = "channel_attempts", "channel_failures"

# Latency bins: bin 0 holds [0, LATENCY_BASE) seconds; bin i >= 1 holds
# [LATENCY_BASE * 2**((i-1)/BINS_PER_OCTAVE), LATENCY_BASE * 2**(i/BINS_PER_OCTAVE)); the last
# bin holds everything above. 4 bins per octave: a percentile read from them is within 9 % of
# the true value (the bin's geometric middle is reported).
LATENCY_BASE = 0.01
BINS_PER_OCTAVE = 4
LATENCY_BINS = 100  # up to 0.01 * 2**(99/4) s, about 3.6 days


def latency_bin(seconds: float) -> int:
    """The bin of a latency of ``seconds`` (0..LATENCY_BINS-1)."""
    if not seconds >= LATENCY_BASE:  # also NaN
        return 0
    return min(LATENCY_BINS - 1, int(math.floor(BINS_PER_OCTAVE * math.log2(seconds / LATENCY_BASE))) + 1)


def bin_value(i: int) -> float:
    """The seconds a latency in bin ``i`` is reported as: the bin's geometric middle (bin 0:
    half of LATENCY_BASE)."""
    if i <= 0:
        return LATENCY_BASE / 2
    return LATENCY_BASE * 2 ** ((i - 0.5) / BINS_PER_OCTAVE)


@dataclass(frozen=True)
class Delivered:
    """What a DELIVERED settle knows beyond its event: ``latency_seconds`` from acceptance (None:
    not counted, a replayed cycle) and whether it set ack_status PENDING."""

    latency_seconds: float | None
    ack_pending: bool


def _counts(events, delivered: dict[str, Delivered]) -> Counter:
    """(series, label, at) -> change, for the events of one insert."""
    c: Counter = Counter()
    for e in events:
        kind, p, at = e.kind, e.payload or {}, e.at
        if kind == kinds.ACCEPTED:
            c["accepted", "", at] += 1
        elif kind == kinds.DEDUP_LINKED:
            if p.get("owner_status") == "DELIVERED":
                c["deduplicated", "", at] += 1
        elif kind == kinds.DEDUP_SATISFIED:
            c["deduplicated", "", at] += 1
        elif kind == kinds.DELIVERY_RESULT:
            status = p.get("status")
            if status == "DELIVERED":
                c["delivered", "", at] += 1
                facts = delivered.get(e.notification_id)
                if facts is not None and facts.latency_seconds is not None:
                    c[LATENCY, str(latency_bin(facts.latency_seconds)), at] += 1
                if facts is not None and facts.ack_pending:
                    c["ack_pending", "", at] += 1
            elif status == "PENDING":
                c["retried", "", at] += 1
            elif status == "FAILED":
                c["failed", "", at] += 1
            if p.get("dead_letter"):
                c["dead_lettered", "", at] += 1
                c["dlq", "", at] += 1
        elif kind == kinds.CHANNEL_ATTEMPT_RESULT:
            channel = str(p.get("channel"))[:64]
            c[CHANNEL_ATTEMPTS, channel, at] += 1
            if not p.get("success"):
                c[CHANNEL_FAILURES, channel, at] += 1
        elif kind in (kinds.REPLAY_REQUESTED, kinds.FAILURE_RESOLVED):
            c["dlq", "", at] -= 1
        elif kind in (kinds.ACKED, kinds.DISMISSED, kinds.TIMED_OUT):
            c["ack_pending", "", at] -= 1
    return c


def _shard() -> int:
    return hash((os.getpid(), threading.get_ident())) % SHARDS


_UPSERT = ("INSERT INTO uns_series_rollups (step, bucket, series, label, shard, n) VALUES {values} "
           "ON CONFLICT (step, bucket, series, label, shard) DO UPDATE SET n = uns_series_rollups.n + excluded.n")


def record(events, delivered: dict[str, Delivered] | None = None) -> None:
    """Add ``events`` (one insert's rows, in the caller's transaction) to the rollups of every
    step: one ``INSERT ... ON CONFLICT DO UPDATE`` statement, its rows in key order (two
    writers on the same shard lock rows in the same order, so they wait, never deadlock).
    ``delivered``: notification id -> ``Delivered`` for the DELIVERED results among them.
    Nothing is written for events no series counts."""
    changes = _counts(events, delivered or {})
    if not changes:
        return
    shard = _shard()
    summed: Counter = Counter()
    for (series, label, at), n in changes.items():
        for step in STEPS:
            summed[step, int(at // step) * step, series, label] += n
    rows = sorted((k for k, n in summed.items() if n), key=lambda k: k)
    if not rows:
        return
    params = []
    for step, bucket, series, label in rows:
        params += [step, bucket, series, label, shard, summed[step, bucket, series, label]]
    values = ", ".join(["(%s, %s, %s, %s, %s, %s)"] * len(rows))
    with connection.cursor() as cur:
        cur.execute(_UPSERT.format(values=values), params)  # nosec B608  # placeholders only


def read(step: int, start: int) -> dict[tuple[str, str], dict[int, int]]:
    """``{(series, label): {bucket: n}}``: the rollups of ``step`` from bucket ``start`` (epoch
    seconds) on, the shards summed. One query over the primary key's range (written out: the
    ORM's per-value converters cost more than the query on a 7-day window)."""
    out: dict[tuple[str, str], dict[int, int]] = {}
    with connection.cursor() as cur:
        cur.execute("SELECT series, label, bucket, SUM(n) FROM uns_series_rollups WHERE step = %s AND bucket >= %s "
                    "GROUP BY series, label, bucket", [step, start])
        for series, label, bucket, total in cur.fetchall():
            out.setdefault((series, label), {})[int(bucket)] = int(total)
    return out


# A bucket is folded once it ended this long ago (a settle's events carry its own clock's now).
FOLD_AFTER_SECONDS = 120.0

_CLOSED = "shard <> 0 AND bucket + step < %s"


def compact(now: float) -> int:
    """Fold the shards of every closed bucket (ended ``FOLD_AFTER_SECONDS`` before ``now``) into
    shard 0, so a window reads about one row per (bucket, series, label) however many writers
    once shared it; returns how many rows were folded (0: nothing to do). Shards only matter
    while a bucket is written; a late write to a folded bucket lands in a shard again and is
    folded by the next call. One transaction; on PostgreSQL one statement (``DELETE ...
    RETURNING`` takes exactly the committed rows it deletes, so a row is never counted twice)."""
    closed = now - FOLD_AFTER_SECONDS
    with connection.cursor() as cur:
        cur.execute(f"SELECT 1 FROM uns_series_rollups WHERE {_CLOSED} LIMIT 1", [closed])  # nosec B608
        if cur.fetchone() is None:
            return 0
    with transaction.atomic(), connection.cursor() as cur:
        if connection.vendor == "postgresql":
            cur.execute(
                f"WITH folded AS (DELETE FROM uns_series_rollups WHERE {_CLOSED} "  # nosec B608  # constants only
                "RETURNING step, bucket, series, label, n), "
                "summed AS (INSERT INTO uns_series_rollups (step, bucket, series, label, shard, n) "
                "SELECT step, bucket, series, label, 0, sum(n) FROM folded GROUP BY step, bucket, series, label "
                "ON CONFLICT (step, bucket, series, label, shard) DO UPDATE SET n = uns_series_rollups.n + excluded.n) "
                "SELECT count(*) FROM folded", [closed])
            return cur.fetchone()[0]
        # SQLite: one writer at a time (BEGIN IMMEDIATE), so the three statements see the same rows.
        cur.execute(
            "INSERT INTO uns_series_rollups (step, bucket, series, label, shard, n) "  # nosec B608  # constants only
            f"SELECT step, bucket, series, label, 0, sum(n) FROM uns_series_rollups WHERE {_CLOSED} "
            "GROUP BY step, bucket, series, label "
            "ON CONFLICT (step, bucket, series, label, shard) DO UPDATE SET n = uns_series_rollups.n + excluded.n",
            [closed])
        cur.execute(f"DELETE FROM uns_series_rollups WHERE {_CLOSED}", [closed])  # nosec B608  # constants only
        return cur.rowcount


def prune(now: float, apply: bool) -> int:
    """Rows older than their step's retention (``RETENTION_SECONDS``): deleted when ``apply``,
    else counted. Returns how many."""
    total = 0
    for step, keep in RETENTION_SECONDS.items():
        qs = SeriesRollup.objects.filter(step=step, bucket__lt=int(now - keep))
        total += qs.delete()[0] if apply else qs.count()
    return total


# Window name -> (seconds, step): 60, 144 and 168 points.
WINDOWS = {"1h": (3600, 60), "24h": (86400, 600), "7d": (7 * 86400, 3600)}
PERCENTILES = (("p50", 0.50), ("p95", 0.95), ("p99", 0.99))


def percentiles(bins: dict[int, int]) -> dict[str, float | None]:
    """``{"p50", "p95", "p99"}`` in seconds from a latency histogram (bin -> count): the
    reported value (``bin_value``) of the bin holding the nearest-rank sample; None when empty."""
    total = sum(bins.values())
    out: dict[str, float | None] = {}
    for name, q in PERCENTILES:
        if total <= 0:
            out[name] = None
            continue
        rank, seen = max(1, math.ceil(q * total)), 0
        for i in sorted(bins):
            seen += bins[i]
            if seen >= rank:
                out[name] = bin_value(i)
                break
    return out
