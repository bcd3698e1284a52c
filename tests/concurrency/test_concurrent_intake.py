"""Concurrent intake on PostgreSQL (DESIGN.md write-path rules 4 and 5), with 20 real
connections released together by a barrier.

- one idempotency key: the unique index on ``key`` lets exactly one insert win; every loser
  re-reads and returns the winner (created=False);
- one dedup key, distinct idempotency keys: every intake serialises on the ``uns_dedup`` row, so
  exactly one leader (dedup_owner_id NULL) exists and the other 19 follow it;
- duplicates racing the leader's settle are never stranded behind a settled leader.
"""
import pytest

from notifications.models import Dedup, Event, Notification
from notifications.runtime import counts

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

N = 20


@pytest.fixture(autouse=True)
def _pool_for_the_racers():
    """Each racer holds its own pooled connection at the barrier: make room for N of them (plus
    the test's own) in this process's pool (UNS_DB_POOL_MAX is 16 by default), then put it back."""
    from django.db import connection

    pool = getattr(connection, "pool", None)
    if pool is None:
        yield
        return
    size = (pool.min_size, pool.max_size)
    pool.resize(size[0], max(size[1], N + 2))
    yield
    pool.resize(*size)


def test_concurrent_submits_with_one_idempotency_key_store_one_row(rt, race):
    request = {"source": "billing", "title": "invoice run failed", "idempotency_key": "run-2024-07-01"}

    results, pids = race(N, lambda i: rt.accept("alice", dict(request)))

    assert len(set(pids)) == N, "every submit must run on its own server connection"
    assert Notification.objects.count() == 1
    row = Notification.objects.get()
    assert {r.notification.id for r in results} == {row.id}
    assert sorted(r.created for r in results) == [False] * (N - 1) + [True]
    # The losers created no state: one ACCEPTED event, for the one row.
    assert list(Event.objects.values_list("notification_id", "kind")) == [(row.id, "ACCEPTED")]


def test_concurrent_submits_reusing_a_key_with_another_request_get_409_not_a_second_row(rt, race):
    from notifications.runtime import Conflict

    def submit(i):
        try:
            return rt.accept("alice", {"source": "billing", "title": f"variant {i % 2}", "idempotency_key": "reused"})
        except Conflict as exc:
            return exc

    results, _ = race(N, submit)

    row = Notification.objects.get()
    winner = int(row.notification["title"][-1])
    for i, r in enumerate(results):
        if i % 2 == winner:
            assert r.notification.id == row.id
        else:
            assert isinstance(r, Conflict) and r.code == "idempotency_conflict", r
            assert r.extra["notification_id"] == row.id
    assert sum(1 for r in results if not isinstance(r, Conflict) and r.created) == 1


def test_concurrent_submits_with_one_dedup_key_elect_one_leader(rt, race):
    def submit(i):
        return rt.accept("alice", {"source": "db", "title": "replica lag", "dedup_key": "replica-lag",
                                   "idempotency_key": f"lag-{i}"})

    results, pids = race(N, submit)

    assert len(set(pids)) == N
    assert all(r.created for r in results)
    rows = list(Notification.objects.all())
    assert len(rows) == N
    leaders = [r for r in rows if r.dedup_owner_id is None]
    assert len(leaders) == 1, f"expected one leader, got {len(leaders)}"
    leader = leaders[0]
    followers = [r for r in rows if r.dedup_owner_id is not None]
    assert len(followers) == N - 1
    assert {f.dedup_owner_id for f in followers} == {leader.id}
    assert {r.status for r in rows} == {"PENDING"}
    assert {r.dedup_key for r in rows} == {leader.dedup_key}
    assert {r.dedup_generation for r in rows} == {1}

    window = Dedup.objects.get()
    assert Dedup.objects.count() == 1
    assert (window.key, window.owner_id, window.generation) == (leader.dedup_key, leader.id, 1)

    linked = Event.objects.filter(kind="DEDUP_LINKED")
    assert sorted(e.notification_id for e in linked) == sorted(f.id for f in followers)
    assert all(e.payload == {"owner_id": leader.id, "generation": 1, "owner_status": "PENDING"} for e in linked)
    assert not Event.objects.filter(notification_id=leader.id, kind="DEDUP_LINKED").exists()
    # every racing insert reached the maintained state counts (runtime.counts)
    assert counts.by_state() == ({"PENDING": N}, {"NONE": N})


@pytest.mark.parametrize("leader_result", ["delivered", "failed"])
def test_duplicates_racing_the_leaders_settle_are_never_stranded(rt, channel, race, leader_result):
    """Duplicates race the leader's settle on separate connections.

    Five duplicates arrive while the leader's adapter call is in flight (followers of a PENDING
    leader); five more are released the moment the adapter returns, with a small stagger that
    differs per round, so they race the settle transaction for the leader row and the uns_dedup
    lock. Whichever side wins, the group ends consistent: after a delivery every duplicate is
    DEDUPLICATED behind the leader; after a permanent failure exactly one duplicate is the new
    PENDING leader (and the window's owner) and the rest follow it."""
    import threading
    import time

    from notifications.adapters.base import DeliveryResult
    from notifications.runtime import Runtime

    result = DeliveryResult(True) if leader_result == "delivered" else DeliveryResult(False, error="HTTP 404")
    for round_no in range(6):
        dkey = f"flap-{round_no}"
        leader = rt.accept("alice", {"source": "db", "title": "flap", "dedup_key": dkey, "channels": ["ops-hook"],
                                     "idempotency_key": f"{dkey}-leader"}).notification
        early_done, adapter_returning = threading.Semaphore(0), threading.Event()

        class Adapter:
            def send(self, notification, target, context):
                for _ in range(5):
                    assert early_done.acquire(timeout=60)
                adapter_returning.set()
                return result

        worker = Runtime(clock=rt.clock, adapters={"webhook": Adapter()}, callback=None, concurrency=1,
                         rng=lambda: 0.5)

        def act(i):
            if i == 0:
                return worker.dispatch(limit=1)
            if i > 5:
                assert adapter_returning.wait(60)
                time.sleep(0.002 * round_no * (i - 5))
            try:
                return rt.accept("alice", {"source": "db", "title": "flap", "dedup_key": dkey,
                                           "channels": ["ops-hook"], "idempotency_key": f"{dkey}-{i}"})
            finally:
                if i <= 5:
                    early_done.release()

        results, _ = race(11, act)
        assert [(r.id, r.status) for r in results[0]] == [
            (leader.id, "DELIVERED" if leader_result == "delivered" else "FAILED")]

        group = {r.id: r for r in Notification.objects.filter(dedup_key=leader.dedup_key)}
        dups = [r for r in group.values() if r.id != leader.id]
        assert len(dups) == 10
        window = Dedup.objects.get(key=leader.dedup_key)
        if leader_result == "delivered":
            assert group[leader.id].status == "DELIVERED"
            assert {(d.status, d.dedup_owner_id) for d in dups} == {("DEDUPLICATED", leader.id)}, round_no
            assert window.owner_id == leader.id
        else:
            assert group[leader.id].status == "FAILED"
            heads = [d for d in dups if d.status == "PENDING" and d.dedup_owner_id is None]
            assert len(heads) == 1, (round_no, [(d.status, d.dedup_owner_id) for d in dups])
            head = heads[0]
            assert {(d.status, d.dedup_owner_id) for d in dups if d.id != head.id} == {("PENDING", head.id)}
            assert window.owner_id == head.id
            # Park this round's new head so the next round's worker only sees its own leader.
            Notification.objects.filter(dedup_key=leader.dedup_key, status="PENDING").update(
                next_attempt=rt.clock() + 3600)
