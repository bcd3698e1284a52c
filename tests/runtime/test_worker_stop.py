"""A stopping dispatch pass: no new row or channel after the stop, finished attempts
settled, unattempted claims released at once (claim undone, no recovery flag), attempts still
running at the end of the grace left to their lease. Plus the worker's outage bookkeeping
(``Backoff``, ``OutageLog``). Adapter calls run in the pass's thread pool, so these tests commit
for real (``transaction=True``); the fake clock pins the leases."""
import logging
import threading

import pytest

from notifications.adapters.base import DeliveryResult
from notifications.runtime import dispatch as dispatch_mod
from notifications.runtime.worker import Backoff, OutageLog, PoolNoiseFilter, StopSignal
from rthelpers import kinds, request, row, timeline

pytestmark = pytest.mark.django_db(transaction=True)

OK = DeliveryResult(True, message_id="m-1")
WAIT = 30.0  # bound on every wait for another thread (seconds)


def blocking(started: threading.Event, release: threading.Event):
    """A scripted webhook call that signals it is running, then waits for ``release``."""
    def send(**_):
        started.set()
        assert release.wait(WAIT), "the test never released the blocked adapter call"
        return OK
    return send


def accept(rt, n):
    return [rt.accept("alice", request(title=f"t{i}")).notification.id for i in range(n)]


def run_in_thread(fn):
    box = {}
    t = threading.Thread(target=lambda: box.setdefault("value", fn()), daemon=True)
    t.start()
    return t, box


def test_stop_settles_the_attempt_under_way_and_releases_the_rest(rt, webhook, channel):
    ids = accept(rt, 4)
    started, release = threading.Event(), threading.Event()
    webhook.script.append(blocking(started, release))
    stop = StopSignal(grace=WAIT)
    t, box = run_in_thread(lambda: dispatch_mod.dispatch(rt, stop=stop))  # rt.concurrency == 1: one at a time
    assert started.wait(WAIT)
    stop.set()
    release.set()
    t.join(WAIT)
    reports = {r.id: r.status for r in box["value"]}

    first = webhook.calls[0]["notification"]["id"]
    assert len(webhook.calls) == 1  # nothing started after the stop
    assert reports == {i: ("DELIVERED" if i == first else "RELEASED") for i in ids}
    assert row(first).status == "DELIVERED"
    for nid in set(ids) - {first}:
        r = row(nid)
        assert (r.status, r.lease_token, r.lease_until, r.attempts, r.cycle_attempts) == ("PENDING", None, 0.0, 0, 0)
        assert kinds(nid) == ["ACCEPTED", "ATTEMPT_STARTED"]  # no catalog kind for a release

    # Another worker takes them at once: same attempt number, no recovery flag.
    later = rt.dispatch()
    assert sorted(r.id for r in later if r.status == "DELIVERED") == sorted(set(ids) - {first})
    for nid in set(ids) - {first}:
        started_events = [e.payload for e in timeline(nid, "ATTEMPT_STARTED")]
        assert [(p["attempt"], p["recovery_may_repeat_provider_effect"]) for p in started_events] == [
            (1, False), (1, False)]


def join_new_threads(before: set) -> None:
    """Wait for every thread started since ``before`` (the pass's pool threads that outlive a
    grace), so none still holds the database when the test's teardown flushes it."""
    for t in set(threading.enumerate()) - before:
        t.join(WAIT)
        assert not t.is_alive(), f"thread {t.name} still running"


def test_attempt_still_running_when_the_grace_ends_keeps_its_lease(rt, webhook, channel):
    before = set(threading.enumerate())
    ids = accept(rt, 3)
    started, release = threading.Event(), threading.Event()
    webhook.script.append(blocking(started, release))
    stop = StopSignal(grace=0.2)
    try:
        t, box = run_in_thread(lambda: dispatch_mod.dispatch(rt, stop=stop))
        assert started.wait(WAIT)
        stop.set()
        t.join(WAIT)
        assert not t.is_alive(), "the pass waited past the grace"
        reports = {r.id: r.status for r in box["value"]}
        hung = webhook.calls[0]["notification"]["id"]
        assert reports == {i: ("IN_FLIGHT" if i == hung else "RELEASED") for i in ids}
        r = row(hung)
        assert (r.status, r.attempts) == ("PENDING", 1) and r.lease_token is not None and r.lease_until > 0
        assert kinds(hung) == ["ACCEPTED", "ATTEMPT_STARTED", "CHANNEL_ATTEMPT_STARTED"]
    finally:
        release.set()
        join_new_threads(before)


def test_releasing_a_recovery_claim_keeps_the_recovery_flag(rt, clock, webhook, channel):
    (nid,) = accept(rt, 1)
    stale = dispatch_mod.claim(rt, 10)  # a worker that claimed and died
    clock.advance(61)  # its 60 s lease has expired
    claims = dispatch_mod.claim(rt, 10)
    assert [c.prior_lease_token for c in claims] == [stale[0].lease_token]
    assert [r.status for r in dispatch_mod.release_unattempted(rt, claims)] == ["RELEASED"]
    r = row(nid)
    assert (r.lease_token, r.attempts) == (stale[0].lease_token, 1)

    rt.dispatch()
    started = [e.payload for e in timeline(nid, "ATTEMPT_STARTED")]
    assert [(p["attempt"], p["recovery_may_repeat_provider_effect"]) for p in started] == [
        (1, False), (2, True), (2, True)]
    assert row(nid).status == "DELIVERED"


def test_release_of_a_lease_taken_over_changes_nothing(rt, clock, webhook, channel):
    (nid,) = accept(rt, 1)
    mine = dispatch_mod.claim(rt, 10)
    clock.advance(61)
    theirs = dispatch_mod.claim(rt, 10)
    assert [r.status for r in dispatch_mod.release_unattempted(rt, mine)] == ["LEASE_LOST"]
    assert (row(nid).lease_token, row(nid).attempts) == (theirs[0].lease_token, 2)


def test_stop_before_the_pass_claims_nothing(rt, webhook, channel):
    (nid,) = accept(rt, 1)
    stop = StopSignal(grace=5)
    stop.set()
    assert dispatch_mod.dispatch(rt, stop=stop) == []
    assert (row(nid).attempts, row(nid).lease_token) == (0, None)


def test_a_second_stop_ends_the_grace():
    stop = StopSignal(grace=60)
    assert stop.grace_left() == float("inf")
    stop.set()
    assert 0 < stop.grace_left() <= 60
    stop.set()
    assert stop.grace_left() == 0


def test_backoff_doubles_to_its_cap_and_resets():
    b = Backoff(first=0.5, cap=30)
    assert [b.next() for _ in range(8)] == [0.5, 1, 2, 4, 8, 16, 30, 30]
    b.reset()
    assert b.next() == 0.5


def test_outage_log_writes_one_line_when_passes_start_failing_and_one_when_all_loops_recover(caplog):
    now = [100.0]
    outage = OutageLog(logging.getLogger("uns.worker.test"), clock=lambda: now[0])
    with caplog.at_level(logging.INFO, logger="uns.worker.test"):
        for _ in range(5):
            outage.failed("dispatch", ConnectionError("connection refused\nsecond line"))
            outage.failed("timeout", ConnectionError("connection refused"))
        now[0] = 107.5
        outage.passed("dispatch")  # the timeout loop has not passed yet: still an outage
        assert outage.open
        outage.passed("timeout")
        outage.passed("timeout")  # nothing more to say
    lines = [r.getMessage() for r in caplog.records if r.levelno >= logging.INFO]
    assert lines == [
        "worker passes failing (loop dispatch: ConnectionError: connection refused); "
        "backing off up to 30 s between passes until they succeed",
        "worker passes succeed again after 7.5 s (10 failed passes, 0 failed database connection attempts)",
    ]
    assert not any(r.exc_info for r in caplog.records if r.levelno >= logging.INFO)
    assert not outage.open


def test_pool_connection_warnings_join_the_outage_and_a_pass_ends_it(caplog):
    now = [10.0]
    outage = OutageLog(logging.getLogger("uns.worker.test"), clock=lambda: now[0])
    pool_log = logging.getLogger("psycopg.pool.test")
    pool_log.addFilter(PoolNoiseFilter(outage))
    with caplog.at_level(logging.INFO):
        for _ in range(12):
            pool_log.warning("error connecting in 'pool-1': connection failed: Connection refused\n\tIs the "
                             "server running?")
        pool_log.warning("something else")
        now[0] = 14.0
        outage.passed("dispatch")
    lines = [r.getMessage() for r in caplog.records]
    assert lines == [
        "worker database connections failing (error connecting in 'pool-1': connection failed: Connection "
        "refused); waiting for the database",
        "something else",
        "worker passes succeed again after 4.0 s (0 failed passes, 12 failed database connection attempts)",
    ]


def test_a_flapping_database_makes_one_outage(caplog):
    now = [0.0]
    outage = OutageLog(logging.getLogger("uns.worker.test"), clock=lambda: now[0])
    with caplog.at_level(logging.INFO, logger="uns.worker.test"):
        for t in (0.0, 1.0, 2.0):
            now[0] = t
            outage.connect_failed("error connecting in 'pool-1': Connection refused")
            now[0] = t + 0.1
            outage.passed("dispatch")  # a pass squeezed in between failures: not the end yet
        assert outage.open
        now[0] = 2.0 + OutageLog.QUIET_SECONDS
        outage.passed("dispatch")
    assert len(caplog.records) == 2 and not outage.open
    assert caplog.records[1].getMessage() == (
        "worker passes succeed again after 5.0 s (0 failed passes, 3 failed database connection attempts)")
