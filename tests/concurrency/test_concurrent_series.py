"""The time-series rollups under concurrent writers on PostgreSQL (``runtime.series``): 16 real
connections accept, settle and dead-letter at once, all in the same buckets; every rollup
counter is exact (``INSERT ... ON CONFLICT DO UPDATE`` adds within the writer's transaction,
sharded so writers rarely wait on one row, and never deadlock)."""
import pytest

from console import selectors
from notifications.adapters.base import DeliveryResult
from notifications.models import Notification, SeriesRollup
from notifications.runtime import series

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

N = 16
EACH = 10


@pytest.fixture(autouse=True)
def _pool_for_the_racers():
    """Room for N racers and the test's own connection in this process's pool (as in
    test_concurrent_intake)."""
    from django.db import connection

    pool = getattr(connection, "pool", None)
    if pool is None:
        yield
        return
    size = (pool.min_size, pool.max_size)
    pool.resize(size[0], max(size[1], N + 2))
    yield
    pool.resize(*size)


def test_concurrent_accepts_and_settles_count_exactly(rt, race, channel, webhook, clock):
    webhook.default = DeliveryResult(False, retryable=False, error="HTTP 410 gone")

    def accept(i):
        for j in range(EACH):
            channels = ["ops-hook"] if j % 2 else ["console"]
            rt.accept(f"p{i}", {"source": "storm", "title": f"{i}-{j}", "channels": channels})
        return True

    _, pids = race(N, accept)
    assert len(set(pids)) == N
    # Settle concurrently too: each racer dispatches a share of the due rows (SKIP LOCKED claims).
    race(N, lambda i: rt.dispatch(limit=EACH))
    while rt.dispatch(limit=100):
        pass
    total = N * EACH
    assert Notification.objects.count() == total
    shards = set(SeriesRollup.objects.filter(series="accepted").values_list("shard", flat=True))
    assert len(shards) > 1, "concurrent writers spread over several shards"
    body = selectors.series_window("1h", clock())
    counts = {name: sum(v) for name, v in body["counts"].items()}
    assert counts["accepted"] == total
    assert counts["delivered"] == total // 2 and counts["dead_lettered"] == total // 2
    assert body["gauges"]["dlq_depth"][-1] == total // 2
    hook = next(c for c in body["channels"] if c["name"] == "ops-hook")
    assert sum(hook["attempts"]) == sum(hook["failures"]) == total // 2
    for step in series.STEPS:  # every step counted the same
        assert sum(SeriesRollup.objects.filter(step=step, series="accepted").values_list("n", flat=True)) == total
