"""How many notifications are in each state, without counting the table.

``by_state()`` answers ``({status: n}, {ack_status or "NONE": n})``. On PostgreSQL it sums
``uns_status_counts`` (``models.StatusCount``), the signed deltas that triggers on
``uns_notifications`` append in the writing statement's own transaction (migration 0005): exact
for what has committed, and as cheap at 1 M notifications as at 10 k once ``compact()`` has
folded the deltas. On SQLite (the embedded mode) it counts ``uns_notifications`` by state.

``compact()`` folds the deltas into one row per (kind, value); the worker's timeout loop calls
it once the table holds more than ``COMPACT_ABOVE`` rows.
"""
from django.db import connection, transaction
from django.db.models import Count, Sum

from ..models import Notification, StatusCount

NO_ACK = "NONE"
# compact() does nothing while the table holds at most this many rows.
COMPACT_ABOVE = 1000


def _maintained() -> bool:
    return connection.vendor == "postgresql"


def by_state() -> tuple[dict[str, int], dict[str, int]]:
    """``(counts by status, counts by ack_status)``; states with no notification are left out;
    a null ``ack_status`` is counted as ``"NONE"``. One query."""
    status, ack = {}, {}
    if _maintained():
        rows = (StatusCount.objects.order_by().values_list("kind", "value")
                .annotate(n=Sum("delta")).filter(n__gt=0))
        for kind, value, n in rows:
            (status if kind == "status" else ack)[value] = n
        return status, ack
    for value, acked, n in (Notification.objects.order_by().values_list("status", "ack_status")
                            .annotate(n=Count("id"))):
        status[value] = status.get(value, 0) + n
        ack[acked or NO_ACK] = ack.get(acked or NO_ACK, 0) + n
    return status, ack


def compact(above: int = COMPACT_ABOVE) -> int:
    """Fold ``uns_status_counts`` into one row per (kind, value) when it holds more than
    ``above`` rows; returns how many rows were folded (0: nothing to do, or not PostgreSQL).

    One transaction: ``DELETE ... RETURNING`` takes exactly the committed rows its snapshot sees
    (rows of writers still open are not seen, so they stay and count later) and the sums go back
    in the same statement; two compactions at once never count a row twice (the second waits on
    the first's deleted rows and skips them)."""
    if not _maintained():
        return 0
    with connection.cursor() as cur:
        cur.execute("SELECT count(*) FROM (SELECT 1 FROM uns_status_counts LIMIT %s) AS s", [above + 1])
        if cur.fetchone()[0] <= above:
            return 0
    with transaction.atomic(), connection.cursor() as cur:
        cur.execute(
            "WITH folded AS (DELETE FROM uns_status_counts RETURNING kind, value, delta), "
            "summed AS (INSERT INTO uns_status_counts (kind, value, delta) "
            "SELECT kind, value, sum(delta) FROM folded GROUP BY kind, value HAVING sum(delta) <> 0) "
            "SELECT count(*) FROM folded")
        return cur.fetchone()[0]
