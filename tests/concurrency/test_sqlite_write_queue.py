"""The embedded mode's write queue (``uns_project.sqlite``): each transaction of the process
holds the database's ``write_lock`` exactly while it holds SQLite's write lock (BEGIN IMMEDIATE
to COMMIT, ROLLBACK or close), so the process's threads queue on it instead of polling in
SQLite's sleeping busy handler."""
import threading

import pytest
from django.db import connection, connections, transaction

from notifications.models import Channel

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.sqlite]  # the write queue is SQLite's


@pytest.fixture(name="lock")
def write_lock():
    from uns_project.sqlite.base import write_lock

    return write_lock(connection.settings_dict["NAME"])


def _held_elsewhere(lock) -> bool:
    """True if another thread holds ``lock`` (this thread cannot take it without waiting)."""
    taken = []
    t = threading.Thread(target=lambda: taken.append(lock.acquire(blocking=False)))
    t.start()
    t.join()
    if taken[0]:
        lock.release()
    return not taken[0]


def test_a_transaction_holds_the_lock_from_begin_to_commit(lock):
    assert not lock.locked()
    with transaction.atomic():
        assert lock.locked() and _held_elsewhere(lock)
        Channel.objects.create(name="a", kind="console", config={})
        with transaction.atomic():  # a savepoint takes nothing more
            Channel.objects.create(name="b", kind="console", config={})
        assert lock.locked()
    assert not lock.locked()
    assert Channel.objects.filter(name__in=["a", "b"]).count() == 2


def test_a_rollback_and_a_close_release_it(lock):
    with pytest.raises(RuntimeError):
        with transaction.atomic():
            Channel.objects.create(name="gone", kind="console", config={})
            raise RuntimeError("boom")
    assert not lock.locked() and not Channel.objects.filter(name="gone").exists()


def test_a_close_mid_transaction_releases_it(lock, tmp_path):
    """A connection closed mid-transaction (SQLite rolls it back) gives the queue back. On a file
    database of its own: the in-memory test database's connection ignores ``close()``."""
    from uns_project.sqlite.base import DatabaseWrapper, write_lock

    name = str(tmp_path / "close.sqlite3")
    wrapper = DatabaseWrapper({**connection.settings_dict, "NAME": name}, alias="write-queue-close")
    queue = write_lock(name)
    try:
        wrapper.ensure_connection()
        wrapper._start_transaction_under_autocommit()  # what atomic() does on SQLite: BEGIN IMMEDIATE
        assert queue.locked() and _held_elsewhere(queue)
        wrapper.close()
        assert not queue.locked()
    finally:
        wrapper.close()


def test_a_second_thread_waits_for_the_first_commit(lock):
    order = []
    inside, go = threading.Event(), threading.Event()

    def first():
        try:
            with transaction.atomic():
                Channel.objects.create(name="first", kind="console", config={})
                inside.set()
                go.wait(30)
                order.append("first commits")
        finally:
            connections.close_all()

    def second():
        try:
            with transaction.atomic():
                order.append("second begins")
                Channel.objects.create(name="second", kind="console", config={})
        finally:
            connections.close_all()

    a = threading.Thread(target=first)
    a.start()
    assert inside.wait(30)
    b = threading.Thread(target=second)
    b.start()
    go.set()
    a.join(30)
    b.join(30)
    assert order == ["first commits", "second begins"]
    assert not lock.locked()


def test_a_queue_it_could_not_take_is_never_released(lock):
    """A transaction that gave up waiting (the ``timeout`` option) went on without the queue: its
    COMMIT must not release the lock another thread holds."""
    from uns_project.sqlite.base import DatabaseWrapper

    held = threading.Event()
    done = threading.Event()

    def holder():
        lock.acquire()
        held.set()
        done.wait(30)
        lock.release()

    t = threading.Thread(target=holder)
    t.start()
    try:
        assert held.wait(30)
        wrapper = DatabaseWrapper({**connection.settings_dict, "OPTIONS": {"timeout": 0}}, alias="probe")
        wrapper._take_write()
        assert not wrapper._holds_write
        wrapper._release_write()
        assert lock.locked() and _held_elsewhere(lock)
    finally:
        done.set()
        t.join(30)
