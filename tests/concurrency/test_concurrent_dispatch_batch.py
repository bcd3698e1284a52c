"""Batched dispatch on PostgreSQL, real parallel connections:

- four workers, batches of 50 in windows of four adapter threads each (two with a stop signal
  that never fires, as the worker loops pass it, two with none), drain 500 due rows: nothing is
  claimed or sent twice and every row settles once;
- a lease taken over mid-batch: the stale worker's settle reports LEASE_LOST for exactly the rows
  taken over and changes nothing on them, while the rest of its batch settles.
"""
import threading
from collections import Counter

import pytest
from django.db import connections

from notifications.adapters.base import DeliveryResult
from notifications.adapters.fake import FakeAdapter
from notifications.models import Event, Notification
from notifications.runtime import Runtime, counts
from notifications.runtime import dispatch as dispatch_mod
from notifications.runtime.dispatch import window
from notifications.runtime.worker import StopSignal

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
    return Runtime(clock=clock, adapters={"webhook": adapter}, callback=None, rng=lambda: 0.5, **kw)


def _accept(rt, n, prefix):
    return [rt.accept("alice", {"source": "batch", "title": f"{prefix} {i}", "channels": ["ops-hook"]}).notification.id
            for i in range(n)]


def test_four_batched_workers_over_500_rows_claim_none_twice_and_settle_each_once(rt, channel, race, clocks):
    total, workers = 500, 4
    ids = _accept(rt, total, "job")
    adapter = CountingAdapter()

    def work(i):
        runtime = _runtime(clocks(), adapter, batch_size=50, concurrency=4)
        stop = StopSignal(grace=60) if i % 2 else None  # never set, as the worker loops pass it
        reports = []
        while True:
            batch = runtime.dispatch() if stop is None else dispatch_mod.dispatch(runtime, stop=stop)
            if not batch:
                return reports
            reports.extend(batch)

    results, pids = race(workers, work)

    assert len(set(pids)) == workers
    reports = [r for per_worker in results for r in per_worker]
    assert Counter(r.id for r in reports) == Counter({i: 1 for i in ids})
    assert {r.status for r in reports} == {"DELIVERED"}
    assert all(per_worker for per_worker in results), [len(p) for p in results]
    assert adapter.calls == Counter({i: 1 for i in ids})
    assert Notification.objects.filter(status="DELIVERED", lease_token=None).count() == total
    assert set(Notification.objects.values_list("attempts", flat=True)) == {1}
    for kind in ("ATTEMPT_STARTED", "CHANNEL_ATTEMPT_STARTED", "CHANNEL_ATTEMPT_RESULT", "DELIVERY_RESULT"):
        per_row = Counter(Event.objects.filter(kind=kind).values_list("notification_id", flat=True))
        assert per_row == Counter({i: 1 for i in ids}), kind
    assert not Event.objects.filter(kind="LEASE_LOST").exists()
    # the maintained state counts (runtime.counts) saw every one of the racing settles
    assert counts.by_state() == ({"DELIVERED": total}, {"NONE": total})


def test_lease_taken_over_mid_batch_gives_lease_lost_for_exactly_those_rows(rt, channel, clocks):
    ids = _accept(rt, 10, "row")
    taken, b_reports, b_errors = [], [], []
    worker_b = _runtime(clocks(61), FakeAdapter(default=DeliveryResult(True, message_id="b-ok")), concurrency=1)

    def run_b():
        try:
            b_reports.extend(worker_b.dispatch(limit=4))  # 61 s later: A's leases have expired
        except BaseException as exc:  # noqa: BLE001 - reported below
            b_errors.append(exc)
        finally:
            connections.close_all()

    class TakeOverOnFirstCall:
        """Worker A's provider: on its first call, worker B (its own thread and connection) takes
        over four of A's rows while A's other calls wait for it; every call of A then reports a
        permanent failure, which would dead-letter B's deliveries were A's settle not fenced."""

        def __init__(self):
            self.lock = threading.Lock()
            self.calls = []
            self.b_done = threading.Event()

        def send(self, notification, target, context):
            with self.lock:
                first = not self.calls
                self.calls.append(notification["id"])
            if first:
                t = threading.Thread(target=run_b, name="worker-b")
                t.start()
                t.join(60)
                assert not t.is_alive()
                self.b_done.set()
            else:
                assert self.b_done.wait(60), "worker B never finished"
            return DeliveryResult(False, retryable=False, error="HTTP 410 from the stale worker")

    stale = TakeOverOnFirstCall()
    # Ten adapter threads: the window confirms all ten rows in one check before any call.
    worker_a = _runtime(clocks(), stale, batch_size=50, concurrency=10)
    a_reports = worker_a.dispatch()
    assert not b_errors, b_errors

    taken = {r.id for r in b_reports}
    assert len(taken) == 4 and {r.status for r in b_reports} == {"DELIVERED"}
    assert sorted(stale.calls) == sorted(ids)  # A's check passed before B came: A sent all ten
    a_status = {r.id: r.status for r in a_reports}
    assert a_status == {i: ("LEASE_LOST" if i in taken else "FAILED") for i in ids}

    for nid in ids:
        n = Notification.objects.get(id=nid)
        events = list(Event.objects.filter(notification_id=nid).order_by("at", "id"))
        a_token = next(e.payload["lease_token"] for e in events if e.kind == "CHANNEL_ATTEMPT_STARTED")
        a_results = [e.payload for e in events if e.kind == "CHANNEL_ATTEMPT_RESULT" and e.payload["lease_token"] == a_token]
        assert [p["error"] for p in a_results] == ["HTTP 410 from the stale worker"]  # kept whatever the lease
        if nid in taken:
            # The stale settle changed nothing: B's delivery stands.
            assert (n.status, n.dead_letter, n.delivered_at, n.attempts) == ("DELIVERED", False, worker_b.clock(), 2)
            lost = [e.payload for e in events if e.kind == "LEASE_LOST"]
            assert lost == [{"lease_token": a_token, "attempt": 1, "provider_effect_may_have_occurred": True}]
            assert [e.payload["status"] for e in events if e.kind == "DELIVERY_RESULT"] == ["DELIVERED"]
        else:
            assert (n.status, n.dead_letter, n.lease_token) == ("FAILED", True, None)
            assert not any(e.kind == "LEASE_LOST" for e in events)


def test_lease_taken_over_mid_window_fences_the_stale_window_and_keeps_its_settled_chunk(rt, channel, clocks,
                                                                                          monkeypatch):
    """The sliding window settles chunks while attempts still run and
    confirms rows long after their claim. Worker A (two adapter threads) settles a first chunk,
    then, inside one of its adapter calls, worker B (61 s later: A's leases have expired) takes
    every row A has not settled. A's later confirms and its last settle are fenced by
    ``lease_token``: A calls no adapter for a row B holds unless it confirmed it before B came,
    reports LEASE_LOST for exactly B's rows and changes nothing on them."""
    ids = _accept(rt, 12, "row")
    b_reports, b_errors = [], []
    worker_b = _runtime(clocks(61), FakeAdapter(default=DeliveryResult(True, message_id="b-ok")), concurrency=1)
    real_settle, a_settled = window.settle_batch, threading.Event()

    def settle_batch(runtime, claims):
        reports = real_settle(runtime, claims)
        if threading.current_thread().name == "worker-a":
            a_settled.set()
        return reports

    monkeypatch.setattr(window, "settle_batch", settle_batch)

    def run_b():
        try:
            b_reports.extend(worker_b.dispatch(limit=50))
        except BaseException as exc:  # noqa: BLE001 - reported below
            b_errors.append(exc)
        finally:
            connections.close_all()

    class TakeOverAfterFirstChunk:
        """A's provider: the first three calls answer at once; the fourth waits until A settled a
        chunk, then lets B take over (B's thread and connection) before it answers. Any later
        call (A's other thread, on a row it confirmed before B came) waits until B is done, so
        how far A's other thread gets while B runs does not depend on the machine's speed."""

        def __init__(self):
            self.lock = threading.Lock()
            self.calls = []
            self.b_done = threading.Event()

        def send(self, notification, target, context):
            with self.lock:
                self.calls.append(notification["id"])
                n = len(self.calls)
            if n == 4:
                assert a_settled.wait(60), "worker A settled no chunk while an attempt ran"
                t = threading.Thread(target=run_b, name="worker-b")
                t.start()
                t.join(60)
                assert not t.is_alive()
                self.b_done.set()
            elif n > 4:
                assert self.b_done.wait(60), "worker B did not finish"
            return DeliveryResult(True, message_id=f"a-{notification['id']}")

    stale = TakeOverAfterFirstChunk()
    worker_a = _runtime(clocks(), stale, batch_size=50, concurrency=2)
    box = {}

    def run_a():
        try:
            box["reports"] = dispatch_mod.dispatch(worker_a, stop=StopSignal(grace=60))
        finally:
            connections.close_all()

    ta = threading.Thread(target=run_a, name="worker-a")
    ta.start()
    ta.join(120)
    assert not ta.is_alive() and not b_errors, b_errors

    a_status = {r.id: r.status for r in box["reports"]}
    taken = {r.id for r in b_reports}
    a_delivered = {i for i, s in a_status.items() if s == "DELIVERED"}
    assert {r.status for r in b_reports} == {"DELIVERED"}
    assert a_delivered and taken and a_delivered | taken == set(ids) and not a_delivered & taken
    assert a_status == {i: ("DELIVERED" if i in a_delivered else "LEASE_LOST") for i in ids}
    # A called its provider after B's claim only for rows it had confirmed before: the fourth
    # call's row and at most one on A's other thread.
    assert len(set(stale.calls) & taken) <= 2
    for nid in ids:
        n = Notification.objects.get(id=nid)
        events = list(Event.objects.filter(notification_id=nid).order_by("at", "id"))
        assert [e.payload["status"] for e in events if e.kind == "DELIVERY_RESULT"] == ["DELIVERED"]
        assert (n.status, n.lease_token) == ("DELIVERED", None)
        a_starts = [e for e in events if e.kind == "CHANNEL_ATTEMPT_STARTED" and e.at == worker_a.clock()]
        if nid in stale.calls:
            assert len(a_starts) == 1  # every call of A followed its committed check
            a_token = a_starts[0].payload["lease_token"]
            assert [e.payload["success"] for e in events if e.kind == "CHANNEL_ATTEMPT_RESULT"
                    and e.payload["lease_token"] == a_token] == [True]  # kept whatever the lease
        if nid in taken:
            assert n.attempts == 2 and n.delivered_at == worker_b.clock()
            lost = [e.payload for e in events if e.kind == "LEASE_LOST"]
            assert len(lost) == 1 and lost[0]["attempt"] == 1
        else:
            assert n.attempts == 1 and not any(e.kind == "LEASE_LOST" for e in events)
