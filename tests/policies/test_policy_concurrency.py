"""The revision lock on PostgreSQL with real parallel connections (each thread opens its own).

- intakes hold the revision row FOR SHARE side by side; an activation waits for them, and
  intakes arriving after it wait behind it and resolve under the new revision;
- activations racing 200 intakes: every accepted notification's revision has a snapshot, its
  policy version was ACTIVE when it committed, and no intake committed under a revision older
  than an activation that committed before it;
- concurrent cold starts bootstrap exactly one revision 1.

Commit order is read from one shared counter clock used by the runtime and the store: intake
takes its time (the ACCEPTED event's ``at``) while holding the shared lock, activation takes its
time (``activated_at``) while holding the exclusive one, so the lock makes those times agree
with the order of the commits.
"""
import itertools
import threading

import pytest
from django.db import connection, connections, transaction

from notifications.models import Event, Notification
from policies import resolution, store
from policies.content import DEFAULT_POLICY_ID
from policies.models import Policy, PolicyAuditRecord, PolicyRevision, PolicySnapshot
from policyhelpers import content
from pg_locks import waits_on_a_lock

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

REQUEST = {"source": "svc", "severity": "info", "channels": [], "require_ack": False}


class CounterClock:
    """A thread-safe clock returning 1.0, 2.0, 3.0, ...: a total order of the calls."""

    def __init__(self):
        self._lock = threading.Lock()
        self._count = itertools.count(1)

    def __call__(self) -> float:
        with self._lock:
            return float(next(self._count))


class Worker(threading.Thread):
    """Runs ``fn()`` on its own database connection; ``pid`` is its server backend pid."""

    def __init__(self, fn, name):
        super().__init__(name=name, daemon=True)
        self.fn, self.result, self.error, self.pid = fn, None, None, None
        self.connected = threading.Event()

    def run(self):
        try:
            connection.ensure_connection()
            self.pid = connection.connection.info.backend_pid
            self.connected.set()
            self.result = self.fn()
        except BaseException as exc:  # noqa: BLE001 - re-raised by the test
            self.error = exc
        finally:
            self.connected.set()
            connections.close_all()


def start(fn, name) -> Worker:
    worker = Worker(fn, name)
    worker.start()
    assert worker.connected.wait(10)
    return worker


def finish(*workers, timeout=60):
    for w in workers:
        w.join(timeout)
        assert not w.is_alive(), f"{w.name} did not finish"
        if w.error is not None:
            raise w.error


def test_intakes_share_the_lock_and_an_activation_waits_in_line():
    store.ensure_initialized()
    draft = store.create_draft(DEFAULT_POLICY_ID, content(max_attempts=2), actor="admin")
    holding, release = threading.Event(), threading.Event()

    def long_intake():
        with transaction.atomic():
            res = resolution.resolve(REQUEST)
            holding.set()
            assert release.wait(30)
            return res

    def quick_intake():
        with transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute("SET LOCAL lock_timeout = '3s'")  # fails instead of waiting
            return resolution.resolve(REQUEST)

    a = start(long_intake, "intake-a")
    try:
        assert holding.wait(10)
        b = start(quick_intake, "intake-b")
        finish(b)  # ran to commit beside A: shared locks do not conflict
        assert b.result.revision == 1

        c = start(lambda: store.activate(DEFAULT_POLICY_ID, draft.version, actor="admin"), "activation")
        assert waits_on_a_lock(c.pid), "the activation must wait for the intake holding the shared lock"
        d = start(_resolve_in_tx, "intake-d")
        assert waits_on_a_lock(d.pid), "an intake arriving after a waiting activation queues behind it"
        assert c.is_alive() and d.is_alive()
    finally:
        release.set()
    finish(a, c, d)
    assert a.result.revision == 1
    assert c.result.revision == 2 and c.result.changed
    assert d.result.revision == 2 and d.result.effective["max_attempts"] == 2
    # B committed and returned its pooled connection before C and D started: they may reuse it.
    assert len({a.pid, c.pid, d.pid}) == 3 and b.pid != a.pid


def _resolve_in_tx():
    with transaction.atomic():
        return resolution.resolve(REQUEST)


def test_activations_racing_200_intakes_never_commit_under_a_stale_revision(rt):
    clock = CounterClock()
    rt.clock = clock
    store.ensure_initialized(clock=clock)
    n_threads, per_thread, n_activations = 10, 20, 12
    barrier = threading.Barrier(n_threads + 1)
    activations = []

    def intakes(i):
        def run():
            barrier.wait(30)
            for j in range(per_thread):
                dedup = {"dedup_key": f"k{j % 3}"} if j % 4 == 0 else {}
                rt.accept(f"p{i}", {"source": "race", "title": f"{i}-{j}", **dedup})
        return run

    def activator():
        barrier.wait(30)
        for k in range(n_activations):
            draft = store.create_draft(DEFAULT_POLICY_ID, content(max_attempts=k + 2), actor="admin", clock=clock)
            result = store.activate(DEFAULT_POLICY_ID, draft.version, actor="admin", clock=clock)
            activations.append((result.revision, result.policy.activated_at))

    workers = [Worker(intakes(i), f"intake-{i}") for i in range(n_threads)] + [Worker(activator, "activator")]
    for w in workers:
        w.start()
    finish(*workers, timeout=180)
    assert len({w.pid for w in workers}) == n_threads + 1, "every thread used its own server connection"

    assert [r for r, _ in activations] == list(range(2, 2 + n_activations))
    assert PolicyRevision.objects.get().revision == 1 + n_activations
    snapshots = {s.revision: s.snapshot for s in PolicySnapshot.objects.all()}
    assert sorted(snapshots) == list(range(1, 2 + n_activations))
    lifecycle = {(p.policy_id, p.version): p for p in Policy.objects.all()}
    accepted_at = dict(Event.objects.filter(kind="ACCEPTED").values_list("notification_id", "at"))

    rows = list(Notification.objects.all())
    assert len(rows) == n_threads * per_thread
    seen_revisions = set()
    for row in rows:
        frozen = row.notification["metadata"]["uns_resolution"]
        revision, t_intake = frozen["revision"], accepted_at[row.id]
        seen_revisions.add(revision)
        # Its revision's snapshot exists and holds the policy version that resolved it ...
        snapshot = snapshots[revision]
        entry = next(p for p in snapshot["policies"] if p["policy_id"] == frozen["policy_id"])
        assert (entry["version"], entry["content_hash"]) == (frozen["policy_version"], frozen["policy_hash"])
        assert frozen["effective"]["max_attempts"] == entry["content"]["defaults"]["max_attempts"]
        # ... which was ACTIVE when the intake committed ...
        version = lifecycle[(frozen["policy_id"], frozen["policy_version"])]
        assert version.activated_at < t_intake
        assert version.retired_at is None or t_intake < version.retired_at
        # ... and no activation that committed before the intake has a newer revision.
        for activated_revision, t_activation in activations:
            if t_activation < t_intake:
                assert revision >= activated_revision, (row.id, revision, activated_revision)
            else:
                assert revision < activated_revision, (row.id, revision, activated_revision)
    assert len(seen_revisions) >= 2, "the intakes should have interleaved with the activations"


def test_concurrent_cold_starts_bootstrap_exactly_one_revision(rt):
    barrier = threading.Barrier(16)

    def submit(i):
        def run():
            barrier.wait(30)
            return rt.accept("alice", {"source": "cold", "title": f"t{i}"}).notification.id
        return run

    workers = [Worker(submit(i), f"cold-{i}") for i in range(16)]
    for w in workers:
        w.start()
    finish(*workers)
    assert PolicyRevision.objects.get().revision == 1
    assert PolicySnapshot.objects.count() == 1
    assert list(Policy.objects.values_list("policy_id", "version", "status")) == [(DEFAULT_POLICY_ID, 1, "ACTIVE")]
    assert PolicyAuditRecord.objects.filter(action="BOOTSTRAP").count() == 1
    revisions = {n.notification["metadata"]["uns_resolution"]["revision"] for n in Notification.objects.all()}
    assert revisions == {1} and Notification.objects.count() == 16
