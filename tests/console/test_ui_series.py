"""``GET /ui/series``: the charts' time series, read from the rollups that ``timeline.insert_events``
writes in the transaction of the events they count (``runtime.series``). Exact counts after a
burst, bucket boundaries, the three windows, the gauges, latency percentiles, a bounded number
of queries, and problem details for a bad window."""
import pytest
from django.db import connection, transaction
from django.db.models import Sum
from django.test.utils import CaptureQueriesContext

from console import selectors
from notifications.adapters.base import DeliveryResult
from notifications.models import SeriesRollup
from notifications.runtime import lists, maintenance, series, timeline

T0 = 1_800_000_000.0  # tests/conftest.py's FakeClock start: a multiple of every step


def fail(retryable=True, error="HTTP 503"):
    return DeliveryResult(False, retryable=retryable, error=error)

pytestmark = pytest.mark.django_db


@pytest.fixture
def hook_rt(rt, webhook, channel):
    rt.webhook = webhook
    return rt


def send(rt, title, channels=("console",), **extra):
    return rt.accept("svc", {"source": "burst", "title": title, "channels": list(channels), **extra}).notification.id


def last(body, name):
    return body["counts"][name][-1]


def test_counts_are_exact_after_a_burst(ui, hook_rt, clock):
    rt = hook_rt
    assert clock() == T0  # T0 is a multiple of every step: the burst stays in one bucket of each
    clock.advance(5)
    for i in range(3):
        send(rt, f"needs ack {i}", require_ack=True)
    for i in range(2):
        send(rt, f"flaky {i}", channels=["ops-hook"])
    for i in range(4):
        send(rt, f"doomed {i}", channels=["ops-hook"])
    rt.webhook.script.extend([fail(), fail()])  # the flaky pair fails once (retry) ...
    rt.webhook.default = DeliveryResult(False, retryable=False, error="HTTP 410 gone")  # ... the rest for good
    rt.dispatch(limit=100)
    send(rt, "dup", dedup_key="same")
    rt.dispatch(limit=100)
    for _ in range(2):  # coalesced behind a DELIVERED owner: DEDUPLICATED at once
        send(rt, "dup", dedup_key="same")
    body = ui().get("/ui/series?window=1h").json()
    assert body["window"] == "1h" and body["step_seconds"] == 60 and body["points"] == 60
    assert len(body["buckets"]) == 60 and body["buckets"][-1] == T0
    assert {name: last(body, name) for name in series.COUNTERS} == {
        "accepted": 12, "delivered": 4, "retried": 2, "failed": 4, "dead_lettered": 4, "deduplicated": 2}
    assert sum(sum(v) for v in body["counts"].values()) == sum(last(body, n) for n in series.COUNTERS)
    hook = next(c for c in body["channels"] if c["name"] == "ops-hook")
    assert (hook["attempts"][-1], hook["failures"][-1]) == (6, 6)
    console = next(c for c in body["channels"] if c["name"] == "console")
    assert (console["attempts"][-1], console["failures"][-1]) == (4, 0)
    assert body["gauges"]["dlq_depth"][-1] == 4 and body["gauges"]["ack_pending"][-1] == 3
    assert body["latency"]["count"][-1] == 4 and body["latency"]["basis"] == "accepted"


def test_a_rolled_back_event_counts_nothing(hook_rt, clock):
    with pytest.raises(RuntimeError), transaction.atomic():
        timeline.insert_events(hook_rt, [timeline.event("x" * 36, timeline.ACCEPTED, {}, clock())])
        assert SeriesRollup.objects.filter(series="accepted").count() == len(series.STEPS)
        raise RuntimeError("roll back")
    assert not SeriesRollup.objects.exists()


def test_bucket_boundaries_and_gauges_over_time(ui, hook_rt, clock):
    rt = hook_rt
    rt.webhook.default = DeliveryResult(False, retryable=False, error="HTTP 410 gone")
    clock.advance(59.5)  # the last moment of bucket T0 ...
    first = send(rt, "a", channels=["ops-hook"])
    rt.dispatch()
    clock.advance(0.5)  # ... and the first of bucket T0 + 60
    second = send(rt, "b", channels=["ops-hook"])
    rt.dispatch()
    clock.advance(60)  # bucket T0 + 120: one replayed, the other resolved
    rt.webhook.default = DeliveryResult(True, message_id="ok")
    rt.replay(first, "olga")
    clock.advance(60)  # bucket T0 + 180: the replay delivers (its latency is not counted: cycle 2)
    rt.dispatch()
    rt.resolve_failure(second, "olga")
    body = ui().get("/ui/series?window=1h").json()
    assert body["buckets"][-4:] == [T0, T0 + 60, T0 + 120, T0 + 180]
    assert body["counts"]["accepted"][-4:] == [1, 1, 0, 0]
    assert body["counts"]["dead_lettered"][-4:] == [1, 1, 0, 0]
    assert body["counts"]["delivered"][-4:] == [0, 0, 0, 1]
    assert body["gauges"]["dlq_depth"][-5:] == [0, 1, 2, 1, 0]
    assert body["latency"]["count"][-4:] == [0, 0, 0, 0]
    assert body["latency"]["p50"][-1] is None


def test_windows_and_their_steps(ui, hook_rt, clock):
    rt = hook_rt
    send(rt, "old", require_ack=True)
    clock.advance(3 * 3600 + 30)  # out of the hour, in the day and the week
    rt.dispatch()
    client = ui()
    hour = client.get("/ui/series").json()  # the default window
    day = client.get("/ui/series?window=24h").json()
    week = client.get("/ui/series?window=7d").json()
    assert (hour["window"], hour["step_seconds"], hour["points"]) == ("1h", 60, 60)
    assert (day["step_seconds"], day["points"], len(day["buckets"])) == (600, 144, 144)
    assert (week["step_seconds"], week["points"], len(week["buckets"])) == (3600, 168, 168)
    for body in (hour, day, week):
        assert body["start"] == body["buckets"][0] and body["end"] == body["buckets"][-1] + body["step_seconds"]
        assert body["buckets"][-1] <= clock() < body["end"]
    assert sum(hour["counts"]["accepted"]) == 0 and sum(hour["counts"]["delivered"]) == 1
    assert sum(day["counts"]["accepted"]) == 1 and day["counts"]["accepted"][day["buckets"].index(T0)] == 1
    assert sum(week["counts"]["accepted"]) == 1 and week["counts"]["accepted"][week["buckets"].index(T0)] == 1
    # Pending acknowledgements: 0 before the delivery (in the hour's last bucket), 1 after.
    assert day["gauges"]["ack_pending"][day["buckets"].index(T0)] == 0 == hour["gauges"]["ack_pending"][-2]
    assert day["gauges"]["ack_pending"][-1] == hour["gauges"]["ack_pending"][-1] == 1
    # A delivery 3 h after acceptance: p50 = p99 within a bin's 9 %.
    assert week["latency"]["p50"][-1] == pytest.approx(3 * 3600 + 30, rel=0.09)
    assert week["latency"]["p99"][-1] == week["latency"]["p50"][-1]


def test_latency_percentiles(hook_rt, clock):
    rt = hook_rt
    ids = [send(rt, f"n{i}") for i in range(100)]
    assert ids
    # 100 accepted at once, delivered in batches: 90 after 1 s, 9 after 10 s, 1 after 100 s.
    clock.advance(1)
    rt.dispatch(limit=90)
    clock.advance(9)
    rt.dispatch(limit=9)
    clock.advance(90)
    rt.dispatch(limit=1)
    body = selectors.series_window("24h", clock())  # one bucket of 600 s holds them all
    i = body["buckets"].index(T0)
    assert body["latency"]["count"][i] == 100
    assert body["latency"]["p50"][i] == pytest.approx(1.0, rel=0.09)
    assert body["latency"]["p95"][i] == pytest.approx(10.0, rel=0.09)
    assert body["latency"]["p99"][i] == pytest.approx(10.0, rel=0.09)
    assert series.percentiles({series.latency_bin(100.0): 1})["p99"] == pytest.approx(100.0, rel=0.09)


def test_latency_bins_cover_the_range():
    assert series.latency_bin(0) == 0 and series.latency_bin(float("nan")) == 0
    assert series.latency_bin(1e9) == series.LATENCY_BINS - 1
    for seconds in (0.011, 0.5, 1, 7.3, 60, 3599, 86400):
        assert series.bin_value(series.latency_bin(seconds)) == pytest.approx(seconds, rel=0.09)


def test_a_fixed_number_of_queries_whatever_the_history(hook_rt, clock):
    send(hook_rt, "one")
    hook_rt.dispatch()
    with CaptureQueriesContext(connection) as few:
        selectors.series_window("7d", clock())
    for i in range(30):
        clock.advance(600)
        send(hook_rt, f"more {i}", channels=["ops-hook", "console"])
        hook_rt.dispatch()
    with CaptureQueriesContext(connection) as many:
        body = selectors.series_window("7d", clock())
    assert len(few.captured_queries) == len(many.captured_queries) <= 5
    assert sum(body["counts"]["accepted"]) == 31


@pytest.mark.parametrize("query", ["window=2h", "window=1H", "window=1h&window=24h", "windw=1h", "window=%00"])
def test_a_bad_window_is_a_problem(ui, db, query):
    response = ui().get(f"/ui/series?{query}")
    assert response.status_code == 400, query
    assert response["Content-Type"].startswith("application/problem+json")
    problem = response.json()
    if query.endswith("%00"):  # a NUL byte is refused before any view (the query middleware)
        assert problem["code"] == "invalid_query"
        return
    assert problem["code"] == "invalid_request"
    assert problem["errors"][0]["field"] in ("window", "windw")


def test_the_dlq_filters_by_failure_time_as_a_failure_bucket_links(ui, hook_rt, clock):
    rt = hook_rt
    rt.webhook.default = DeliveryResult(False, retryable=False, error="HTTP 410 gone")
    clock.advance(10)
    early = send(rt, "early", channels=["ops-hook"])
    rt.dispatch()
    clock.advance(60)
    late = send(rt, "late", channels=["ops-hook"])
    rt.dispatch()
    client = ui()
    body = client.get("/ui/series?window=1h").json()
    i = body["buckets"].index(T0)
    assert body["counts"]["dead_lettered"][i] == 1
    bucket = f"failed_since={T0}&failed_until={T0 + body['step_seconds']}"
    page = client.get(f"/ui/dlq?{bucket}&sort=failed").json()
    assert [item["id"] for item in page["items"]] == [early] and page["total"] == 1
    assert [item["id"] for item in client.get(f"/ui/dlq?failed_since={T0 + 60}").json()["items"]] == [late]
    groups = client.get(f"/ui/dlq/groups?by=source&{bucket}").json()
    assert groups["groups"] == [{"value": "burst", "count": 1}]
    preview = client.get(f"/ui/bulk-actions/preview?action=replay&{bucket}").json()
    assert preview["matched"] == 1  # a bulk action takes what the filtered list shows


@pytest.mark.parametrize("value", ["abc", "nan", "inf", "1e999", "2026-13-01"])
def test_a_bad_failure_time_is_a_problem(ui, db, value):
    response = ui().get(f"/ui/dlq?failed_since={value}")
    assert response.status_code == 400, value
    assert response["Content-Type"].startswith("application/problem+json")
    assert response.json()["errors"][0]["field"] == "failed_since"


def test_uns_maintain_prunes_rollups_past_their_retention(hook_rt, clock):
    send(hook_rt, "old")
    clock.advance(3 * 86400)  # past the 1 min buckets' 2 days, within the others'
    send(hook_rt, "new")
    before = SeriesRollup.objects.count()
    dry = maintenance.maintain(hook_rt, cutoff=clock() - 90 * 86400, operator="ops")
    assert dry.series_rows == 1 and SeriesRollup.objects.count() == before  # the old minute's "accepted"
    done = maintenance.maintain(hook_rt, cutoff=clock() - 90 * 86400, apply=True, operator="ops")
    assert done.series_rows == 1
    assert not SeriesRollup.objects.filter(step=60, bucket__lt=clock() - 2 * 86400).exists()
    assert SeriesRollup.objects.filter(step=3600, series="accepted").count() == 2  # both hours kept


def _plan(qs) -> str:
    with transaction.atomic():
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:  # tiny test tables: make the planner show its index path
                cursor.execute("SET LOCAL enable_seqscan = off")
        return qs.explain()


def test_the_reads_are_index_ranges(hook_rt, clock):
    send(hook_rt, "one")
    window = (SeriesRollup.objects.filter(step=60, bucket__gte=int(clock()) - 3600).order_by()
              .values_list("series", "label", "bucket").annotate(total=Sum("n")))
    plan = _plan(window)
    assert ("uns_series_rollups_pkey" in plan if connection.vendor == "postgresql"
            else "sqlite_autoindex_uns_series_rollups_1" in plan or "PRIMARY KEY" in plan), plan
    failed = lists.dead_letters({"failed_since": repr(clock() - 60), "failed_until": repr(clock())}).order_by(
        "failed_at", "id")
    if connection.vendor == "postgresql":  # SQLite's planner picks by its own estimates on a tiny table
        assert "ix_uns_dlq_failed" in _plan(failed)


def test_compaction_folds_closed_buckets_into_one_shard_and_keeps_every_count(ui, hook_rt, clock):
    rt = hook_rt
    for i in range(3):
        send(rt, f"n{i}")
    # Spread the minute's counters over several shards, as concurrent writers would.
    other = (series._shard() + 1) % series.SHARDS  # not this thread's shard
    SeriesRollup.objects.filter(series="accepted", step=60).update(shard=other)
    send(rt, "more")
    assert SeriesRollup.objects.filter(series="accepted", step=60).count() == 2
    before = selectors.series_window("1h", clock())
    assert series.compact(clock()) == 0  # the bucket is still open
    clock.advance(300)
    assert series.compact(clock()) > 0
    assert set(SeriesRollup.objects.filter(step=60).values_list("shard", flat=True)) == {0}  # the 10 min and 1 h buckets are still open
    after = selectors.series_window("1h", clock())
    assert after["counts"]["accepted"][-6] == before["counts"]["accepted"][-1] == 4
    assert series.compact(clock()) == 0
    send(rt, "late")  # a write after the fold lands in a shard again and is folded next time
    clock.advance(300)
    series.compact(clock())
    assert sum(selectors.series_window("1h", clock())["counts"]["accepted"]) == 5
