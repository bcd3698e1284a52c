"""Django's SQLite backend with one in-process queue for the write lock (the embedded mode).

Every transaction on SQLite is ``BEGIN IMMEDIATE`` (``settings.DATABASES``): it takes the
database's one write lock at BEGIN and holds it to COMMIT or ROLLBACK. Threads of one process
that meet that lock (the HTTP thread, the worker loops, the adapter threads, the WebSocket
threads) wait in SQLite's busy handler, which polls by sleeping 1, 2, 5, 10, ... up to 100 ms
between tries: a lock freed after 0.3 ms is found only when the sleeper wakes, and a thread
unlucky twice waits hundreds of milliseconds (the bench's p99 of 200 to 1,000 ms at 4
producers). Here each transaction of the process first takes a ``threading.Lock`` per database
file, held exactly as long as SQLite's lock (BEGIN to COMMIT/ROLLBACK/close), so the threads of
one process queue on it and the next one runs the moment the lock is released; SQLite's own lock
and busy handler still order this process against other processes (``uns_serve --workers N``,
``manage.py`` commands). Nothing else changes: the same statements, the same BEGIN IMMEDIATE, the
same durability (WAL, ``synchronous=NORMAL``).

A thread that waits longer than the connection's ``timeout`` option for the queue goes on to
BEGIN without it (SQLite's busy handler then decides, as before: "database is locked" after its
own timeout), so a transaction that never ends cannot hang the others for good.
"""
import threading

from django.db.backends.sqlite3 import base as sqlite3_base

_LOCKS: dict[str, threading.Lock] = {}
_LOCKS_GUARD = threading.Lock()


def write_lock(name: str) -> threading.Lock:
    """The process's write queue for the database file ``name`` (``settings_dict["NAME"]``)."""
    with _LOCKS_GUARD:
        return _LOCKS.setdefault(str(name), threading.Lock())


class DatabaseWrapper(sqlite3_base.DatabaseWrapper):
    """``django.db.backends.sqlite3``'s wrapper; its transactions queue on ``write_lock``."""

    _holds_write = False

    def _take_write(self) -> None:
        lock = write_lock(self.settings_dict["NAME"])
        timeout = float(self.settings_dict.get("OPTIONS", {}).get("timeout", 5))
        self._holds_write = lock.acquire(timeout=timeout)

    def _release_write(self) -> None:
        if self._holds_write:
            self._holds_write = False
            write_lock(self.settings_dict["NAME"]).release()

    def _start_transaction_under_autocommit(self):
        if not self._holds_write:
            self._take_write()
        try:
            super()._start_transaction_under_autocommit()
        except BaseException:
            self._release_write()
            raise

    def _commit(self):
        try:
            return super()._commit()
        finally:
            self._release_write()

    def _rollback(self):
        try:
            return super()._rollback()
        finally:
            self._release_write()

    def _close(self):
        try:
            return super()._close()
        finally:
            self._release_write()
