"""``waits_on_a_lock``: the deterministic way for a PostgreSQL test to know that another
connection is blocked (import as ``from pg_locks import waits_on_a_lock``: ``tests/`` is on the
path through its conftest)."""
import time

from django.db import connection


def waits_on_a_lock(pid: int, timeout: float = 20.0) -> bool:
    """Poll ``pg_stat_activity`` (every 20 ms, on this thread's connection) until backend ``pid``
    waits on a lock: True; False when ``timeout`` seconds pass first. A bound on a wait that
    should come at once, never a measurement."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with connection.cursor() as cursor:
            cursor.execute("SELECT wait_event_type FROM pg_stat_activity WHERE pid = %s", [pid])
            row = cursor.fetchone()
        if row and row[0] == "Lock":
            return True
        time.sleep(0.02)
    return False
