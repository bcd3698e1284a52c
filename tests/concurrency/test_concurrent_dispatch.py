"""Concurrent dispatch on PostgreSQL (DESIGN.md write-path rule 2 and 4).

- four workers, each its own ``Runtime`` and connection, drain 500 due rows: ``FOR UPDATE SKIP
  LOCKED`` plus the conditional claim UPDATE mean no row is claimed twice;
- a lease that expires while the adapter runs: a second worker reclaims and delivers, and the
  stale worker's settle changes nothing (LEASE_LOST) while its provider observation is kept.
"""
import threading
from collections import Counter

import pytest

from notifications.adapters.base import DeliveryResult
from notifications.adapters.fake import FakeAdapter
from notifications.models import Event, Notification
from notifications.runtime import Runtime

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def clocks(clock):
    """``clocks(offset)``: a fresh fake clock (the suite's FakeClock) ``offset`` seconds after T0."""
    return lambda offset=0.0: type(clock)(clock.now + offset)


class CountingAdapter:
    """Thread-safe: counts ``send`` calls per notification id and always succeeds."""

    def __init__(self):
        self.lock = threading.Lock()
        self.calls = Counter()

    def send(self, notification, target, context):
        with self.lock:
            self.calls[notification["id"]] += 1
        return DeliveryResult(True, message_id=f"m-{notification['id']}")


def _runtime(clock, adapter, **kw):
    return Runtime(clock=clock, adapters={"webhook": adapter}, callback=None, concurrency=1, rng=lambda: 0.5, **kw)


def test_four_workers_over_500_due_rows_claim_none_twice(rt, channel, race, clocks):
    total, workers = 500, 4
    ids = [rt.accept("alice", {"source": "batch", "title": f"job {i}", "channels": ["ops-hook"]}).notification.id
           for i in range(total)]
    adapter = CountingAdapter()  # one adapter shared by all workers: it sees every provider call

    def work(i):
        runtime = _runtime(clocks(), adapter, batch_size=10)
        reports = []
        while True:
            batch = runtime.dispatch()
            if not batch:
                return reports
            reports.extend(batch)

    results, pids = race(workers, work)

    assert len(set(pids)) == workers
    reports = [r for per_worker in results for r in per_worker]
    assert len(reports) == total
    assert Counter(r.id for r in reports) == Counter({i: 1 for i in ids})
    assert {r.status for r in reports} == {"DELIVERED"}
    # Work really was shared: every worker claimed some rows.
    assert all(per_worker for per_worker in results), [len(p) for p in results]

    assert adapter.calls == Counter({i: 1 for i in ids})
    assert Notification.objects.filter(status="DELIVERED").count() == total
    assert set(Notification.objects.values_list("attempts", flat=True)) == {1}
    for kind in ("ATTEMPT_STARTED", "CHANNEL_ATTEMPT_STARTED", "CHANNEL_ATTEMPT_RESULT", "DELIVERY_RESULT"):
        per_row = Counter(Event.objects.filter(kind=kind).values_list("notification_id", flat=True))
        assert per_row == Counter({i: 1 for i in ids}), kind
    assert not Event.objects.filter(kind="LEASE_LOST").exists()


class BlockingAdapter:
    """Signals ``entered`` when the provider call starts, then blocks until ``release``."""

    def __init__(self, result):
        self.entered, self.release, self.result = threading.Event(), threading.Event(), result

    def send(self, notification, target, context):
        self.entered.set()
        assert self.release.wait(60), "the test never released the stale worker"
        return self.result


def test_lease_expiring_mid_adapter_gives_lease_lost_and_the_stale_settle_changes_nothing(rt, channel, clocks):
    nid = rt.accept("alice", {"source": "pager", "title": "cpu hot", "channels": ["ops-hook"]}).notification.id
    # Worker A's provider call eventually reports a permanent failure: were its settle not fenced,
    # the row would end FAILED/dead-lettered instead of keeping B's delivery.
    slow = BlockingAdapter(DeliveryResult(False, retryable=False, error="HTTP 410 from the stale call"))
    worker_a = _runtime(clocks(), slow)
    a_reports, a_errors = [], []

    def run_a():
        try:
            a_reports.extend(worker_a.dispatch())
        except BaseException as exc:  # noqa: BLE001
            a_errors.append(exc)
        finally:
            from django.db import connections

            connections.close_all()

    thread_a = threading.Thread(target=run_a, name="worker-a")
    thread_a.start()
    try:
        assert slow.entered.wait(30), "worker A never reached its adapter"
        token_a = Notification.objects.get(id=nid).lease_token
        assert token_a is not None

        # Worker B runs 61 s later (the 60 s lease has expired) on its own connection.
        fast = FakeAdapter(default=DeliveryResult(True, message_id="b-ok"))
        worker_b = _runtime(clocks(61), fast)
        b_reports = worker_b.dispatch()
        assert [(r.id, r.status) for r in b_reports] == [(nid, "DELIVERED")]
        delivered = Notification.objects.get(id=nid)
        token_b = fast.calls[0]["context"].lease_token
        assert token_b != token_a
    finally:
        slow.release.set()
        thread_a.join(60)
    assert not thread_a.is_alive() and not a_errors, a_errors

    assert [(r.id, r.status) for r in a_reports] == [(nid, "LEASE_LOST")]
    row = Notification.objects.get(id=nid)
    assert row.status == "DELIVERED" and row.dead_letter is False
    assert row.delivered_at == worker_b.clock()
    assert row.outcome == delivered.outcome == {
        "channels_attempted": ["ops-hook"], "channels_succeeded": ["ops-hook"], "channels_failed": [],
        "error_message": None,
    }
    assert (row.attempts, row.lease_token, row.lease_until) == (2, None, 0.0)

    events = list(Event.objects.filter(notification_id=nid).order_by("at", "id"))
    results = [e.payload for e in events if e.kind == "CHANNEL_ATTEMPT_RESULT"]
    # A's provider observation is appended and attributed to A's lease, beside B's.
    assert sorted((p["lease_token"], p["success"]) for p in results) == sorted([(token_a, False), (token_b, True)])
    assert [p["error"] for p in results if p["lease_token"] == token_a] == ["HTTP 410 from the stale call"]
    lost = [e.payload for e in events if e.kind == "LEASE_LOST"]
    assert lost == [{"lease_token": token_a, "attempt": 1, "provider_effect_may_have_occurred": True}]
    settled = [e.payload for e in events if e.kind == "DELIVERY_RESULT"]
    assert [(p["status"], p["attempt"]) for p in settled] == [("DELIVERED", 2)]
    started = [e.payload for e in events if e.kind == "ATTEMPT_STARTED"]
    assert [p["recovery_may_repeat_provider_effect"] for p in started] == [False, True]


def test_stale_worker_makes_no_further_guarded_calls_after_its_lease_is_taken(rt, channel, clocks):
    """Two channels: A's lease is taken over while its first channel call is in flight, so its
    pre-attempt check for the second channel fails and the second provider is never called by A."""
    from notifications.models import Channel

    Channel.objects.create(name="ops-hook-2", kind="webhook", config={"url": "http://127.0.0.1:9/two"})
    nid = rt.accept("alice", {"source": "pager", "title": "two hooks",
                              "channels": ["ops-hook", "ops-hook-2"]}).notification.id
    slow = BlockingAdapter(DeliveryResult(True, message_id="a-first"))
    worker_a = _runtime(clocks(), slow)
    a_reports = []

    def run_a():
        try:
            a_reports.extend(worker_a.dispatch())
        finally:
            from django.db import connections

            connections.close_all()

    thread_a = threading.Thread(target=run_a, name="worker-a")
    thread_a.start()
    try:
        assert slow.entered.wait(30)
        fast = FakeAdapter()
        assert [r.status for r in _runtime(clocks(61), fast).dispatch()] == ["DELIVERED"]
        assert [c["target"].name for c in fast.calls] == ["ops-hook", "ops-hook-2"]
    finally:
        slow.release.set()
        thread_a.join(60)

    assert [r.status for r in a_reports] == ["LEASE_LOST"]
    token_a = Event.objects.get(notification_id=nid, kind="LEASE_LOST").payload["lease_token"]
    a_started = [e.payload["channel"] for e in Event.objects.filter(notification_id=nid, kind="CHANNEL_ATTEMPT_STARTED")
                 if e.payload["lease_token"] == token_a]
    assert a_started == ["ops-hook"]
    assert Notification.objects.get(id=nid).status == "DELIVERED"
