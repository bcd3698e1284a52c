"""Helpers for the PostgreSQL concurrency proofs: real threads, each on its own connection.

Every thread opens its own Django connection (connections are thread-local) *before* the
``threading.Barrier``, so the race is between queries, not between connection handshakes, and
closes it when done so the test database can be flushed and dropped.
"""
import threading

import pytest
from django.db import connection, connections


def race(n, fn, *, timeout=120.0):
    """Run ``fn(i)`` in ``n`` threads released together by a barrier.

    Returns ``(results, backend_pids)``: ``results[i]`` is what ``fn(i)`` returned and
    ``backend_pids`` the PostgreSQL backend pid each thread used (distinct pids prove distinct
    server connections); on SQLite, the thread's ident instead (connections are per thread).
    Re-raises the first exception any thread raised.
    """
    barrier = threading.Barrier(n)
    results, pids, errors = [None] * n, [None] * n, []

    def run(i):
        try:
            connection.ensure_connection()
            pids[i] = (connection.connection.info.backend_pid if connection.vendor == "postgresql"
                       else threading.get_ident())
            barrier.wait(timeout)
            results[i] = fn(i)
        except BaseException as exc:  # noqa: BLE001 - reported to the test below
            errors.append(exc)
            barrier.abort()
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run, args=(i,), name=f"race-{i}") for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout)
    assert not any(t.is_alive() for t in threads), "a racing thread did not finish"
    if errors:
        raise errors[0]
    return results, pids


@pytest.fixture(name="race")
def race_fixture():
    return race
