"""How many notifications are in each state, from each source and in each dead-letter group,
without counting the table.

``by_state()`` answers ``({status: n}, {ack_status or "NONE": n})``. On PostgreSQL it sums
``uns_status_counts`` (``models.StatusCount``), the signed deltas that triggers on
``uns_notifications`` append in the writing statement's own transaction (migrations 0005 and
0018): exact for what has committed, and as cheap at 1 M notifications as at 10 k once
``compact()`` has folded the deltas. On SQLite (the embedded mode) it counts
``uns_notifications`` by state.

The same table holds the notifications per ``source`` (``SOURCE``) and the dead letters per DLQ
group (``DLQ_KINDS``); ``total()`` and ``groups()`` read them on PostgreSQL (``maintained()``),
and the lists that show them (``lists.dead_letter_total``, ``lists.dead_letter_groups``,
``selectors.listing_total``) query the table on SQLite.

``compact()`` folds the deltas into one row per (kind, value); the worker's timeout loop calls
it once the table holds more than ``COMPACT_ABOVE`` rows.
"""
from django.db import connection, transaction
from django.db.models import Count, F, Sum

from ..models import Notification, StatusCount

NO_ACK = "NONE"
STATE_KINDS = ("status", "ack_status")
SOURCE = "source"  # notifications per ``notification.source`` (all of them)
# DLQ group name (the console's ``/ui/dlq/groups?by=``) -> its kind: the dead letters per value
# of that group, the value as the trigger extracts it (text; the channel group's is the JSON
# text of ``outcome.channels_failed``; null when the row has none). Not ``dedup_key``: a key
# names one incident, so its folded counts would grow with the dead letters (that group and
# filter read the rows). The folded table holds one row per distinct value: sources,
# severities, channel sets and failure reasons are few.
DLQ_KINDS = {"source": "dlq:source", "severity": "dlq:severity", "reason": "dlq:reason",
             "channel": "dlq:channel"}
# compact() does nothing while the table holds at most this many rows.
COMPACT_ABOVE = 1000


def maintained() -> bool:
    """True where the triggers maintain ``uns_status_counts`` (PostgreSQL); on SQLite the
    callers count the table."""
    return connection.vendor == "postgresql"


def by_state() -> tuple[dict[str, int], dict[str, int]]:
    """``(counts by status, counts by ack_status)``; states with no notification are left out;
    a null ``ack_status`` is counted as ``"NONE"``. One query."""
    status, ack = {}, {}
    if maintained():
        rows = (StatusCount.objects.filter(kind__in=STATE_KINDS).order_by().values_list("kind", "value")
                .annotate(n=Sum("delta")).filter(n__gt=0))
        for kind, value, n in rows:
            (status if kind == "status" else ack)[value] = n
        return status, ack
    for value, acked, n in (Notification.objects.order_by().values_list("status", "ack_status")
                            .annotate(n=Count("id"))):
        status[value] = status.get(value, 0) + n
        ack[acked or NO_ACK] = ack.get(acked or NO_ACK, 0) + n
    return status, ack


def _sums(kind: str):
    return (StatusCount.objects.filter(kind=kind).order_by().values("value")
            .annotate(n=Sum("delta")).filter(n__gt=0))


def total(kind: str, value: str | None = None, *, contains: bool = False) -> int:
    """How many rows maintained count ``kind`` (``SOURCE`` or one of ``DLQ_KINDS``) holds: all
    of them (``value`` None), those whose value is ``value`` exactly or, with ``contains``, holds
    ``value`` case-insensitively (Django's ``icontains``, the lookup the lists filter with, so
    the count matches the list's rows). Exact for what has committed. PostgreSQL only
    (``maintained()``); one query over the folded deltas, whose size is the number of distinct
    values (plus the deltas not yet folded), not the number of notifications."""
    rows = StatusCount.objects.filter(kind=kind)
    if value is not None:
        rows = rows.filter(**{"value__icontains" if contains else "value": value})
    return rows.aggregate(n=Sum("delta"))["n"] or 0


def groups(kind: str, limit: int) -> list[tuple[str | None, int]]:
    """``[(value, n)]``: the ``limit`` largest groups of maintained count ``kind``, largest
    first, ties by value (nulls last). PostgreSQL only (``maintained()``); one query."""
    rows = _sums(kind).order_by("-n", F("value").asc(nulls_last=True))[:limit]
    return [(r["value"], r["n"]) for r in rows]


def compact(above: int = COMPACT_ABOVE) -> int:
    """Fold ``uns_status_counts`` into one row per (kind, value) when it holds more than
    ``above`` rows beyond one per (kind, value) (so a table that is large because it names many
    failure reasons is not rewritten on every call); returns how many rows were folded (0:
    nothing to do, or not PostgreSQL). The check reads at most ``above + 1`` rows while the
    table is small, and every row (one per distinct value, plus the unfolded deltas) past that.

    One transaction: ``DELETE ... RETURNING`` takes exactly the committed rows its snapshot sees
    (rows of writers still open are not seen, so they stay and count later) and the sums go back
    in the same statement; two compactions at once never count a row twice (the second waits on
    the first's deleted rows and skips them)."""
    if not maintained():
        return 0
    with connection.cursor() as cur:
        cur.execute("SELECT count(*) FROM (SELECT 1 FROM uns_status_counts LIMIT %s) AS s", [above + 1])
        if cur.fetchone()[0] <= above:
            return 0
        cur.execute("SELECT (SELECT count(*) FROM uns_status_counts) - "
                    "(SELECT count(*) FROM (SELECT 1 FROM uns_status_counts GROUP BY kind, value) AS g)")
        if cur.fetchone()[0] <= above:
            return 0
    with transaction.atomic(), connection.cursor() as cur:
        cur.execute(
            "WITH folded AS (DELETE FROM uns_status_counts RETURNING kind, value, delta), "
            "summed AS (INSERT INTO uns_status_counts (kind, value, delta) "
            "SELECT kind, value, sum(delta) FROM folded GROUP BY kind, value HAVING sum(delta) <> 0) "
            "SELECT count(*) FROM folded")
        return cur.fetchone()[0]
