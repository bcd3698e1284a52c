"""Group commit of accepts (``group_commit.GroupCommit``, issue 20) on PostgreSQL, real parallel
connections released together by a barrier.

Every test holds the first request's transaction (its leader writes alone) until every other
racer is queued behind it, so the rest are written as ONE batch, in one transaction with one
COMMIT, whatever the machine's speed; ``batches`` records the size of each batch.

- a batch never mixes one request's failure into another's answer: an unknown channel, an
  idempotency conflict and a row whose statements raise a database error inside the batch each
  get their own answer, every other request of the batch is stored with its own ACCEPTED event;
- repeats of one idempotency key inside one batch: one row, one ``created``, the rest repeats;
- one dedup key inside one batch, and across two processes' batches racing (two group-commit
  writers): one leader, every other request follows it.
"""
import threading
import time

import pytest
from django.db import connection

from core.errors import Conflict, UnknownChannel
from notifications.models import Dedup, Event, Notification
from notifications.runtime import group_commit, intake

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

N = 10


@pytest.fixture(autouse=True)
def _pool_for_the_racers():
    """Room for N racers' pooled connections (plus the test's own) in this process's pool."""
    pool = getattr(connection, "pool", None)
    if pool is None:
        yield
        return
    size = (pool.min_size, pool.max_size)
    pool.resize(size[0], max(size[1], 2 * N + 2))
    yield
    pool.resize(*size)


@pytest.fixture
def batches(monkeypatch):
    """Hold the first leader (the first ``_insert`` call) until ``expect`` requests are queued in
    the writers; record the size of each batch ``group_commit._write`` writes."""
    real_insert, real_write = intake._insert, group_commit._write
    state = {"expect": N - 1, "held": False, "groups": [intake._GROUP]}
    written: list[int] = []

    def queued():
        return sum(len(g._waiting) for g in state["groups"])

    def insert(runtime, principal, req, *args, **kw):
        if not state["held"]:
            state["held"] = True
            deadline = time.monotonic() + 60
            while queued() < state["expect"]:
                assert time.monotonic() < deadline, f"only {queued()} requests queued"
                time.sleep(0.01)
        return real_insert(runtime, principal, req, *args, **kw)

    def write_batch(batch):
        written.append(len(batch))
        return real_write(batch)

    monkeypatch.setattr(intake, "_insert", insert)
    monkeypatch.setattr(group_commit, "_write", write_batch)
    # The held writer stands in for a slow batch: the others must keep waiting for it, not start
    # writers of their own after STALL (a stuck batch's escape, tested in tests/ws/test_ws_ack_cost.py).
    monkeypatch.setattr(group_commit.GroupCommit, "STALL", 120.0)
    return state, written


def _outcome(rt, principal, request):
    try:
        return rt.accept(principal, request)
    except (UnknownChannel, Conflict) as exc:
        return exc


def test_a_batch_answers_each_request_with_its_own_outcome(rt, channel, race, batches, monkeypatch):
    state, written = batches
    real_insert = intake._insert
    broken = {"left": 1}

    def insert(runtime, principal, req, *args, **kw):
        # One request's statements fail inside the batch with a real database error (its
        # savepoint is rolled back); it is then retried alone, in its own transaction.
        if req["title"] == "breaks once" and broken["left"] and connection.in_atomic_block and len(
                connection.savepoint_ids) > 0:
            broken["left"] -= 1
            with connection.cursor() as cur:
                cur.execute("SELECT * FROM no_such_table")  # an error on both databases
        return real_insert(runtime, principal, req, *args, **kw)

    monkeypatch.setattr(intake, "_insert", insert)
    requests = (
        [{"source": "s", "title": "first", "channels": ["ops-hook"]}]
        + [{"source": "s", "title": f"ok {i}", "channels": ["ops-hook"]} for i in range(4)]
        + [{"source": "s", "title": "unknown channel", "channels": ["no-such-channel"]},
           {"source": "s", "title": "keyed a", "idempotency_key": "k1", "channels": ["ops-hook"]},
           {"source": "s", "title": "keyed b", "idempotency_key": "k1", "channels": ["ops-hook"]},
           {"source": "s", "title": "breaks once", "channels": ["ops-hook"]},
           {"source": "s", "title": "ok 5", "channels": ["ops-hook"]}]
    )
    assert len(requests) == N

    def submit(i):
        deadline = time.monotonic() + 60
        while i and not intake._GROUP._writers:  # the others come once the first is the leader
            assert time.monotonic() < deadline
            time.sleep(0.005)
        return _outcome(rt, "alice", dict(requests[i]))

    results, _ = race(N, submit)

    assert written and written[0] == N - 1, written
    by_title = {req["title"]: res for req, res in zip(requests, results)}
    assert isinstance(by_title["unknown channel"], UnknownChannel)
    keyed = [by_title["keyed a"], by_title["keyed b"]]
    conflict = [r for r in keyed if isinstance(r, Conflict)]
    stored = [r for r in keyed if not isinstance(r, Exception)]
    assert len(conflict) == 1 and len(stored) == 1 and stored[0].created
    assert conflict[0].code == "idempotency_conflict" and conflict[0].extra["notification_id"] == stored[0].notification.id
    assert broken["left"] == 0
    created = {t: r for t, r in by_title.items() if not isinstance(r, Exception)}
    assert set(created) == set(by_title) - {"unknown channel"} - {t for t in ("keyed a", "keyed b")
                                                                   if isinstance(by_title[t], Conflict)}
    for title, r in created.items():
        row = Notification.objects.get(id=r.notification.id)
        assert r.created and row.notification["title"] == title and row.status == "PENDING"
        assert list(Event.objects.filter(notification_id=row.id).values_list("kind", flat=True)) == ["ACCEPTED"]
    assert Notification.objects.count() == len(created)


def test_repeats_of_one_key_in_one_batch_store_one_row(rt, channel, race, batches):
    request = {"source": "billing", "title": "invoice run failed", "idempotency_key": "run-1",
               "channels": ["ops-hook"]}

    results, pids = race(N, lambda i: rt.accept("alice", dict(request)))

    _state, written = batches
    assert len(set(pids)) == N and written and written[0] == N - 1
    row = Notification.objects.get()
    assert {r.notification.id for r in results} == {row.id}
    assert sorted(r.created for r in results) == [False] * (N - 1) + [True]
    assert list(Event.objects.values_list("notification_id", "kind")) == [(row.id, "ACCEPTED")]


def test_one_dedup_key_in_one_batch_elects_one_leader(rt, channel, race, batches):
    results, _ = race(N, lambda i: rt.accept("alice", {"source": "db", "title": "replica lag",
                                                       "dedup_key": "replica-lag", "channels": ["ops-hook"]}))

    _state, written = batches
    assert written and written[0] == N - 1
    _assert_one_leader(results)


def test_one_dedup_key_across_two_processes_batches_elects_one_leader(rt, channel, race, batches, monkeypatch):
    """Two group-commit writers (two web processes' worth), each given half the racers: their
    batches race on the ``uns_dedup`` row and the key's unique index as two processes would."""
    state, written = batches
    writers = [group_commit.GroupCommit("accept"), group_commit.GroupCommit("accept")]
    state["groups"] = writers
    # Each writer gets N racers; the first leader is held until N - 1 requests wait (in either).

    class TwoProcesses:
        @staticmethod
        def run(in_batch, alone):
            return writers[int(threading.current_thread().name.rsplit("-", 1)[1]) % 2].run(in_batch, alone)

    monkeypatch.setattr(intake, "_GROUP", TwoProcesses())
    results, _ = race(2 * N, lambda i: rt.accept("alice", {"source": "db", "title": f"lag {i}",
                                                            "dedup_key": "replica-lag", "channels": ["ops-hook"]}))

    assert len(results) == 2 * N
    _assert_one_leader(results)


def _assert_one_leader(results):
    assert all(r.created for r in results)
    rows = list(Notification.objects.all())
    leaders = [r for r in rows if r.dedup_owner_id is None]
    assert len(rows) == len(results) and len(leaders) == 1
    assert all(r.dedup_owner_id == leaders[0].id for r in rows if r is not leaders[0])
    assert Dedup.objects.get().owner_id == leaders[0].id
    linked = Event.objects.filter(kind="DEDUP_LINKED").count()
    assert linked == len(rows) - 1


def test_each_request_of_a_batch_keeps_its_own_runtime(rt, channel, clock, race, batches):
    """Callers with other runtimes (another clock, as escalation or a test's second worker has)
    share a batch: each row is stamped by its own caller's clock, not the batch writer's."""
    from notifications.runtime import Runtime

    later = type(clock)(clock.now + 100)
    runtimes = [rt, Runtime(clock=later, adapters=rt.adapters, callback=None)]
    results, _ = race(N, lambda i: runtimes[i % 2].accept("alice", {"source": "s", "title": f"t {i}",
                                                                     "channels": ["ops-hook"]}))

    _state, written = batches
    assert written and written[0] == N - 1
    for i, r in enumerate(results):
        row = Notification.objects.get(id=r.notification.id)
        assert row.notification["created_at"] == runtimes[i % 2].clock()


def test_an_accept_stuck_on_a_lock_holds_up_only_itself(rt, channel):
    """A batch stuck on a row lock another connection holds (the dedup window row, here) does not
    hold up the process's other accepts: a request kept waiting ``STALL`` starts another writer."""
    from django.db import connections, transaction

    rt.accept("alice", {"source": "db", "title": "first", "dedup_key": "disk", "channels": ["ops-hook"]})
    locked, release = threading.Event(), threading.Event()
    stuck = {}

    def hold_lock():
        try:
            with transaction.atomic():
                list(Dedup.objects.select_for_update().all())
                locked.set()
                release.wait(60)
        finally:
            connections.close_all()

    def stuck_accept():
        try:
            stuck["result"] = rt.accept("alice", {"source": "db", "title": "stuck", "dedup_key": "disk",
                                                  "channels": ["ops-hook"]})
        finally:
            connections.close_all()

    holder = threading.Thread(target=hold_lock)
    holder.start()
    assert locked.wait(30)
    waiter = threading.Thread(target=stuck_accept)
    try:
        waiter.start()
        deadline = time.monotonic() + 60
        while not intake._GROUP._writers:  # the stuck accept is the writer, waiting on the lock
            assert time.monotonic() < deadline
            time.sleep(0.01)
        free = {}

        def free_accept():
            try:
                free["result"] = rt.accept("alice", {"source": "web", "title": "free", "channels": ["ops-hook"]})
            finally:
                connections.close_all()

        other = threading.Thread(target=free_accept)
        other.start()
        other.join(60)  # without a second writer it would wait for the lock's release below
        assert "result" in free and free["result"].created
        assert "result" not in stuck  # answered while the other still waits
    finally:
        release.set()
        holder.join(60)
        waiter.join(60)
    assert stuck["result"].created and stuck["result"].notification.dedup_owner_id is not None
