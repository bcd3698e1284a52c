"""The statement shapes of the accept path on PostgreSQL, each forced deterministically with two
real connections (the racing tests in ``test_concurrent_intake.py`` cover them only by chance):

- ``INSERT ... ON CONFLICT (key) DO NOTHING RETURNING``: a submit whose idempotency key is being
  inserted by an uncommitted intake waits for it, stores nothing (its dedup window write rolled
  back too) and answers the winner's row as a repeat;
- the one-statement revision lock + snapshot join: an intake that waited for a transaction that
  moved the revision row to a new snapshot gets that snapshot (the join's recheck cannot see it,
  so it is read again), not a "missing snapshot" 503.
"""
import threading
import time

import pytest
from django.db import connection, transaction

from notifications.models import Dedup, Event, Notification
from policies import resolution, store
from policies.models import PolicyRevision, PolicySnapshot
from pg_locks import waits_on_a_lock

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


class _Thread(threading.Thread):
    def __init__(self, fn):
        super().__init__(daemon=True)
        self.fn, self.result, self.error, self.pid = fn, None, None, None
        self.connected = threading.Event()

    def run(self):
        from django.db import connections

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

    def finish(self, timeout=30):
        self.join(timeout)
        assert not self.is_alive()
        if self.error is not None:
            raise self.error
        return self.result


@pytest.mark.parametrize("dedup_key", [None, "disk-full"], ids=["plain", "with-dedup-key"])
def test_a_submit_racing_an_uncommitted_insert_of_its_key_answers_the_winner(rt, dedup_key):
    request = {"source": "billing", "title": "invoice run failed", "idempotency_key": "run-7",
               **({"dedup_key": dedup_key} if dedup_key else {})}
    inserted, release = threading.Event(), threading.Event()

    def winner():
        with transaction.atomic():
            result = rt.accept("alice", dict(request))
            inserted.set()
            assert release.wait(30)
        return result

    a = _Thread(winner)
    a.start()
    try:
        assert inserted.wait(20)
        b = _Thread(lambda: rt.accept("alice", dict(request)))
        b.start()
        assert b.connected.wait(10)
        # B's lock statement saw no row under the key (A has not committed); it now waits on A's
        # uncommitted dedup window or key.
        assert waits_on_a_lock(b.pid), "the second submit must wait for the uncommitted insert"
    finally:
        release.set()
    first, second = a.finish(), b.finish()
    assert first.created and not second.created
    assert second.notification.id == first.notification.id
    row = Notification.objects.get()
    assert row.id == first.notification.id
    assert list(Event.objects.values_list("notification_id", "kind")) == [(row.id, "ACCEPTED")]
    if dedup_key:
        window = Dedup.objects.get()
        assert (window.owner_id, window.generation) == (row.id, 1)


def test_an_intake_that_waited_for_a_revision_move_reads_the_new_snapshot():
    store.ensure_initialized()
    moved, release = threading.Event(), threading.Event()

    def mover():
        # Lock the revision row and point it at a new snapshot, without the table lock that
        # activation takes first: the intake then waits on the row itself, and PostgreSQL's
        # recheck hands it the row's new version joined with the snapshot row it saw before.
        with transaction.atomic():
            rev = PolicyRevision.objects.select_for_update().get()
            revision = store._advance(rev, actor="t", now=time.time(), reason="move")
            moved.set()
            assert release.wait(30)
        return revision

    def intake():
        with transaction.atomic():
            return resolution.current_for_intake()

    m = _Thread(mover)
    m.start()
    try:
        assert moved.wait(20)
        i = _Thread(intake)
        i.start()
        assert i.connected.wait(10)
        assert waits_on_a_lock(i.pid), "the intake must wait for the revision row"
    finally:
        release.set()
    revision = m.finish()
    current = i.finish()
    assert revision == 2
    assert current.revision == 2
    assert current.snapshot_id == PolicySnapshot.objects.get(revision=2).id
