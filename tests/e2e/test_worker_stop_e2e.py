"""``runworker`` stopped with SIGTERM in the middle of a batch, with a slow real webhook
receiver and real processes on the run's database (SQLite or PostgreSQL):

- default grace: the attempts under way finish and are settled, the rest of the batch is
  released at once; exit 0; no row is left leased; a second worker delivers the rest and no
  notification reaches the receiver twice;
- a 1 s grace and a receiver that hangs: exit 3 with one ERROR line naming the hung rows; they
  keep their lease and are recovered after it expires (flagged
  ``recovery_may_repeat_provider_effect``), the others are released at once.
"""
import signal
import subprocess

import pytest

from .stack import Stack, wait_for
from .workerkit import Rows, SlowReceiver, submit

pytestmark = pytest.mark.e2e

CHANNEL = "slow-hook"
DEADLINE = 90.0  # seconds for a whole batch to be delivered by real processes on a loaded machine


@pytest.fixture
def receiver():
    r = SlowReceiver(delay=1.0)
    yield r
    r.close()


@pytest.fixture
def stack(tmp_path, receiver):
    s = Stack(tmp_path, receiver.url, secret="stop-secret")
    try:
        s.prepare({"e2e-producer": "producer"}, CHANNEL)
        yield s
    finally:
        s.close()


def worker(stack, name, **env):
    return stack.start(name, "runworker", UNS_LOG_LEVEL="INFO", UNS_CALLBACK_URL="", **env)


def stop_and_wait(proc, timeout: float) -> int:
    """One SIGTERM (a second would end the grace at once), then the exit code; bounded."""
    proc.popen.send_signal(signal.SIGTERM)
    try:
        return proc.popen.wait(timeout)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"{proc.name} did not exit {timeout}s after SIGTERM:\n{proc.output()[-3000:]}") from None


def all_delivered(rows, n):
    def probe():
        statuses = rows.statuses()
        return statuses if statuses.get("DELIVERED") == n else None
    return probe


def test_sigterm_mid_batch_settles_what_finished_and_releases_the_rest(stack, receiver):
    rows = Rows(stack.database_url)
    ids = submit(stack, 50, CHANNEL)
    first = worker(stack, "runworker-1", UNS_DISPATCH_CONCURRENCY="4", UNS_DISPATCH_BATCH="50")
    wait_for(lambda: len(receiver.answered_ids()) >= 6, "6 answered deliveries", timeout=DEADLINE)
    answered_before_stop = receiver.answered_ids()

    rc = stop_and_wait(first, timeout=60)  # the grace is 20 s
    log = first.output()
    assert rc == 0, log[-3000:]
    assert "released" in log and "still running" not in log, log[-3000:]

    after = rows.notifications()
    leased = {nid: r for nid, r in after.items() if r["lease_token"] is not None or r["lease_until"] > 0}
    assert leased == {}, "rows left leased after the stop"
    delivered = {nid for nid, r in after.items() if r["status"] == "DELIVERED"}
    assert answered_before_stop <= delivered  # what the receiver answered was settled
    assert delivered == set(receiver.counts())  # ... and so was every attempt that finished in the grace
    assert all(after[nid]["attempts"] == 0 for nid in set(ids) - delivered)  # released claims undone

    receiver.delay = 0.0
    second = worker(stack, "runworker-2")
    try:
        wait_for(all_delivered(rows, 50), "all 50 delivered by the second worker", timeout=DEADLINE)
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n{stack.logs()}") from None
    assert stop_and_wait(second, timeout=60) == 0

    counts = receiver.counts()
    assert set(counts) == set(ids)
    assert {nid: c for nid, c in counts.items() if c != 1} == {}, "re-sent after the stop"
    assert all(rows.attempts_started(nid)[-1][1] is False for nid in ids)  # no recovery flag anywhere


def test_attempts_still_running_when_a_short_grace_ends_exit_non_zero_and_are_recovered(stack, receiver):
    rows = Rows(stack.database_url)
    receiver.delay = 0.0
    receiver.hang.set()
    ids = submit(stack, 6, CHANNEL)
    first = worker(stack, "runworker-1", UNS_DISPATCH_CONCURRENCY="2", UNS_STOP_GRACE_SECONDS="1",
                   UNS_LEASE_SECONDS="8")
    wait_for(lambda: len(receiver.counts()) == 2, "2 requests held by the receiver", timeout=DEADLINE)
    hung = set(receiver.counts())

    rc = stop_and_wait(first, timeout=30)
    log = first.output()
    assert rc == 3, log[-3000:]
    lines = [line for line in log.splitlines() if "still running" in line and "ERROR" in line]
    assert len(lines) == 1, log[-3000:]
    assert all(nid in lines[0] for nid in hung), lines[0]

    after = rows.notifications()
    assert {nid for nid, r in after.items() if r["lease_token"] is not None} == hung
    released = set(ids) - hung
    assert all((after[nid]["status"], after[nid]["lease_until"], after[nid]["attempts"]) == ("PENDING", 0.0, 0)
               for nid in released)

    receiver.hang.clear()
    second = worker(stack, "runworker-2", UNS_LEASE_SECONDS="8")
    try:
        wait_for(all_delivered(rows, 6), "all 6 delivered, the hung ones after their lease", timeout=DEADLINE)
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n{stack.logs()}") from None
    assert stop_and_wait(second, timeout=60) == 0

    counts = receiver.counts()
    assert {nid: counts[nid] for nid in hung} == {nid: 2 for nid in hung}  # the hung call, then the recovery
    assert {nid: counts[nid] for nid in released} == {nid: 1 for nid in released}
    for nid in hung:
        assert rows.attempts_started(nid) == [(1, False), (2, True)]
    for nid in released:
        assert rows.attempts_started(nid) == [(1, False), (1, False)]
