"""A real ``runworker`` through a PostgreSQL outage and a Redis outage. The test starts
its own PostgreSQL and Redis on free ports, stops each for a few seconds while deliveries are
under way (``pg_ctl stop -m fast`` / kill of redis-server), starts it again on the same port,
and checks: every notification is delivered (a row may reach the receiver twice only when its
second claim says ``recovery_may_repeat_provider_effect``), delivery resumes by itself, and the
worker's log says a bounded number of lines per outage, with no traceback per pass or event.
"""
import time

import pytest

from .stack import wait_for
from .workerkit import OwnDatabaseStack, Rows, SlowReceiver, ThrowawayPostgres, ThrowawayRedis, submit

pytestmark = pytest.mark.e2e

CHANNEL = "outage-hook"
DEADLINE = 90.0  # seconds for deliveries to finish after an outage on a loaded machine
OUTAGE_SECONDS = 4.0  # how long each server stays down (fault injection, not an assertion)
MAX_LINES_PER_OUTAGE = 6


@pytest.fixture
def servers(tmp_path):
    pg = ThrowawayPostgres()
    redis = None
    try:
        redis = ThrowawayRedis(tmp_path / "redis.log")
        yield pg, redis
    finally:
        if redis is not None:
            redis.close()
        pg.close()


@pytest.fixture
def receiver():
    r = SlowReceiver(delay=0.3)
    yield r
    r.close()


def delivered(rows, ids, stack):
    def probe():
        try:
            statuses = {nid: r["status"] for nid, r in rows.notifications().items() if nid in ids}
        except Exception:  # the database may still be coming back
            return None
        return statuses if set(statuses.values()) == {"DELIVERED"} and len(statuses) == len(ids) else None

    try:
        return wait_for(probe, f"{len(ids)} notifications delivered", timeout=DEADLINE, interval=0.2)
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n{stack.logs()}") from None


def outage_lines(log: str, words: tuple[str, ...]) -> list[str]:
    return [line for line in log.splitlines() if any(w in line for w in words)]


def test_worker_rides_out_postgres_and_redis_outages(tmp_path, servers, receiver):
    pg, redis = servers
    stack = OwnDatabaseStack(tmp_path, receiver.url, secret="outage-secret", database_url=pg.url)
    try:
        stack.prepare({"e2e-producer": "producer"}, CHANNEL)
        rows = Rows(stack.database_url)
        worker = stack.start("runworker", "runworker", UNS_LOG_LEVEL="INFO", UNS_CALLBACK_URL="",
                             REDIS_URL=redis.url, UNS_LEASE_SECONDS="6", UNS_DISPATCH_BATCH="4",
                             UNS_DISPATCH_CONCURRENCY="2")

        # PostgreSQL goes away while deliveries are under way.
        first = submit(stack, 20, CHANNEL, source="pg-outage")
        wait_for(lambda: len(receiver.counts()) >= 3, "deliveries under way", timeout=DEADLINE)
        pg.stop()
        time.sleep(OUTAGE_SECONDS)
        pg.start()
        delivered(rows, set(first), stack)
        assert worker.running(), worker.output()[-3000:]

        # Redis (the channel layer of the live push) goes away while deliveries are under way.
        second = submit(stack, 20, CHANNEL, source="redis-outage")
        wait_for(lambda: len(set(receiver.counts()) & set(second)) >= 3, "deliveries under way", timeout=DEADLINE)
        redis.stop()
        time.sleep(OUTAGE_SECONDS)
        redis.start()
        third = submit(stack, 3, CHANNEL, source="after")  # live pushes succeed again
        delivered(rows, set(second) | set(third), stack)

        code = stack.close()["runworker"]
        log = worker.output()
    finally:
        stack.close()
    assert code == 0, log[-3000:]

    ids = first + second + third
    counts = receiver.counts()
    assert set(counts) == set(ids)
    for nid, n in counts.items():
        flags = [flag for _attempt, flag in rows.attempts_started(nid)] if n > 1 else []
        assert n == 1 or any(flags), f"{nid} sent {n} times without a recovery flag"

    assert "Traceback" not in log, log[-5000:]
    # The passes may fail, or wait on the connection pool, whose failed connection attempts
    # join the same outage. A pass handed a connection the restart broke may fail once more
    # just after the recovery (a second, short outage): at most two, each opened and closed.
    db_lines = outage_lines(log, ("worker passes", "worker database", "worker stopped during", "psycopg"))
    assert len(db_lines) <= MAX_LINES_PER_OUTAGE, db_lines
    opened = sum("failing (" in line for line in db_lines)
    assert 1 <= opened <= 2 and sum("succeed again" in line for line in db_lines) == opened, db_lines
    live_lines = outage_lines(log, ("live push",))
    assert len(live_lines) <= MAX_LINES_PER_OUTAGE, live_lines
    assert sum("failing (" in line for line in live_lines) == 1, live_lines
    assert sum("succeeds again" in line for line in live_lines) == 1, live_lines
