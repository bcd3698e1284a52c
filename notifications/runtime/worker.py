"""The worker: separate dispatch, timeout and callback loops over one ``Runtime``.

Loops coordinate with other processes only through database claims. A loop whose pass found
nothing waits the poll interval; in a storm (dispatch busy) the timeout and callback loops wait
at least ``STORM_SWEEP_INTERVAL`` (0.5 s), so their empty sweeps leave the CPU to deliveries. ``run_once()`` runs one
pass of each loop inline, for tests and ``runworker --once``.

Stopping (``request_stop()`` from a signal handler, then ``stop()``; the embedded server's
shutdown calls ``stop()``): no loop starts a new pass, and the dispatch pass under way starts no
new row or channel. Channel attempts already under way may finish for ``UNS_STOP_GRACE_SECONDS``
(``stop_grace``); what finished is settled, claims never attempted are released at once for
other workers (see ``dispatch.dispatch``). Attempts still running when the grace ends keep their
lease (recovered after expiry, flagged ``recovery_may_repeat_provider_effect``): ``stop()``
logs one ERROR line naming them and returns their ids (``runworker`` then exits non-zero).

Outages: a failing pass (the database unreachable, say) does not end a loop. The loop backs off
(``Backoff``: 0.5 s doubling to 30 s) and ``OutageLog`` writes one WARNING line when passes
start failing and one when they succeed again, with the duration and the number of failed
passes, instead of a traceback per pass (the first failure's traceback goes to DEBUG). With
PostgreSQL's connection pool a pass may instead wait for a connection while the pool retries:
``PoolNoiseFilter`` turns the pool's warning per failed connection attempt into the same outage.
"""
import logging
import threading
import time

from django.conf import settings
from django.db import close_old_connections

from . import counts as _counts
from . import series as _series
from . import dispatch as _dispatch

log = logging.getLogger("uns.worker")

# How long ``stop()`` waits, beyond the grace, for the loops to settle and release (seconds).
SETTLE_MARGIN_SECONDS = 5.0
# A failing loop waits BACKOFF_FIRST seconds, doubling up to BACKOFF_CAP, between passes.
BACKOFF_FIRST, BACKOFF_CAP = 0.5, 30.0
# While the dispatch loop is busy (a pass handled rows within the last STORM_SECONDS), the
# timeout and callback loops wait at least STORM_SWEEP_INTERVAL seconds after a pass that found
# nothing, whatever the poll interval: at 0.05 s their empty sweeps took a quarter of a
# runworker's CPU in a storm (bench/profile_dispatch.py), CPU the deliveries need.
STORM_SECONDS, STORM_SWEEP_INTERVAL = 1.0, 0.5


class StopSignal:
    """A stop request with a grace period: ``set()`` (signal-handler safe) records the deadline
    ``time.monotonic() + grace`` seconds; a second ``set()`` ends the grace at once (a second
    Ctrl-C). ``is_set()``; ``grace_left()``: seconds until the deadline (``inf`` before
    ``set()``, never negative); ``wait(timeout)`` like ``threading.Event.wait``."""

    def __init__(self, grace: float):
        self.grace = float(grace)
        self.deadline: float | None = None
        self._event = threading.Event()

    def set(self) -> None:
        now = time.monotonic()
        self.deadline = now if self.deadline is not None else now + self.grace
        self._event.set()

    def clear(self) -> None:
        self.deadline = None
        self._event.clear()

    def is_set(self) -> bool:
        return self._event.is_set()

    def grace_left(self) -> float:
        deadline = self.deadline
        return float("inf") if deadline is None else max(0.0, deadline - time.monotonic())

    def wait(self, timeout: float | None = None) -> bool:
        return self._event.wait(timeout)


class Backoff:
    """Capped exponential delays for a failing loop: ``next()`` returns ``first``, then doubles
    up to ``cap`` seconds; ``reset()`` after a pass succeeds."""

    def __init__(self, first: float = BACKOFF_FIRST, cap: float = BACKOFF_CAP, factor: float = 2.0):
        self.first, self.cap, self.factor = first, cap, factor
        self._next = first

    def next(self) -> float:
        delay, self._next = self._next, min(self.cap, self._next * self.factor)
        return delay

    def reset(self) -> None:
        self._next = self.first


class OutageLog:
    """One outage across a worker's loops: the first failing pass of any loop opens it (one
    WARNING line naming the loop and the error, its traceback at DEBUG); it closes when every
    loop that failed has passed again (one WARNING line with the duration in seconds and the
    number of failed passes). ``connect_failed`` counts the database pool's failed connection
    attempts into the same outage (any successful pass ends that part). An outage only closes
    once ``QUIET_SECONDS`` have passed since its last failure, so a database that flaps while
    it goes away or comes back makes one outage, not one per flap. Thread-safe; ``clock`` is
    ``time.monotonic`` unless given."""

    POOL = "database pool"
    QUIET_SECONDS = 3.0

    def __init__(self, logger: logging.Logger = log, clock=time.monotonic):
        self.log, self.clock = logger, clock
        self._guard = threading.Lock()
        self._failing: set[str] = set()
        self.started: float | None = None
        self.failed_passes = 0
        self.failed_connects = 0
        self._last_failure = 0.0

    def connect_failed(self, message: str) -> None:
        """Record a failed connection attempt reported by the database pool (``message``: the
        pool's log text)."""
        with self._guard:
            self._failing.add(self.POOL)
            self.failed_connects += 1
            self._last_failure = self.clock()
            if self.started is not None:
                return
            self.started = self.clock()
        first = message.strip().splitlines()[0] if message.strip() else "connection failed"
        self.log.warning("worker database connections failing (%s); waiting for the database", first)

    @property
    def open(self) -> bool:
        return self.started is not None

    def failed(self, loop: str, exc: BaseException) -> None:
        """Record a failed pass of ``loop``."""
        with self._guard:
            self._failing.add(loop)
            self.failed_passes += 1
            self._last_failure = self.clock()
            if self.started is not None:
                return
            self.started = self.clock()
        summary = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        self.log.warning("worker passes failing (loop %s: %s%s); backing off up to %.0f s between passes "
                         "until they succeed", loop, type(exc).__name__, f": {summary}" if summary else "", BACKOFF_CAP)
        self.log.debug("first failing pass of loop %s", loop, exc_info=exc)

    def passed(self, loop: str) -> None:
        """Record a successful pass of ``loop``; closes the outage when no loop is failing."""
        with self._guard:
            if self.started is None or not {loop, self.POOL} & self._failing:
                return
            if self.clock() - self._last_failure < self.QUIET_SECONDS:
                return  # too soon after a failure: maybe a flap
            self._failing -= {loop, self.POOL}  # a pass that worked got a database connection
            if self._failing:
                return
            duration, count, connects = self.clock() - self.started, self.failed_passes, self.failed_connects
            self.started, self.failed_passes, self.failed_connects = None, 0, 0
        self.log.warning("worker passes succeed again after %.1f s (%d failed passes, %d failed database "
                         "connection attempts)", duration, count, connects)


class PoolNoiseFilter(logging.Filter):
    """On the ``psycopg.pool`` logger while a worker runs: the pool's WARNING per failed
    connection attempt (several a second during a PostgreSQL outage) goes into the worker's
    ``OutageLog`` instead of the log; other pool records pass."""

    def __init__(self, outage: OutageLog):
        super().__init__()
        self.outage = outage

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno != logging.WARNING:
            return True
        message = record.getMessage()
        if "error connecting" in message:
            self.outage.connect_failed(message)
            return False
        if "discarding closed connection" in message:  # the pool dropping a connection a restart broke
            log.debug("%s", message)
            return False
        return True


def _close_connections() -> None:
    """``close_old_connections`` that never ends a loop (closing a connection to a database
    that went away may raise)."""
    try:
        close_old_connections()
    except Exception:
        log.debug("closing database connections failed", exc_info=True)


class Worker:
    """``runtime``: a ``Runtime``; ``poll_interval``: seconds a loop waits after finding no work
    (``UNS_POLL_INTERVAL``); ``stop_grace``: seconds in-flight channel attempts may finish
    after a stop (``UNS_STOP_GRACE_SECONDS``)."""

    LOOPS = ("dispatch", "timeout", "callback")

    def __init__(self, runtime, *, poll_interval: float | None = None, stop_grace: float | None = None,
                 clock=time.monotonic):
        self.runtime = runtime
        # Loop health for the metrics and runworker's /readyz (``loop_ages``), on ``clock``.
        self.clock = clock
        self.started_at = clock()
        self.last_pass: dict[str, float | None] = dict.fromkeys(self.LOOPS)
        self.poll_interval = float(poll_interval if poll_interval is not None else settings.UNS_POLL_INTERVAL)
        grace = stop_grace if stop_grace is not None else getattr(settings, "UNS_STOP_GRACE_SECONDS", 20.0)
        self._stop = StopSignal(grace)
        self._threads: list[threading.Thread] = []
        self.outage = OutageLog()
        self._pool_filter = PoolNoiseFilter(self.outage)
        # Ids of rows whose adapter call was still running when a stop's grace ended.
        self.in_flight: list[str] = []
        self._in_flight_guard = threading.Lock()
        self._dispatch_busy_until = 0.0  # time.monotonic() until which dispatch counts as busy

    @property
    def stop_grace(self) -> float:
        return self._stop.grace

    # one pass of each loop -------------------------------------------------------------
    def dispatch_pass(self) -> int:
        """One dispatch pass honouring a stop request; returns the number of rows it handled."""
        reports = _dispatch.dispatch(self.runtime, stop=self._stop)
        if reports:
            self._dispatch_busy_until = time.monotonic() + STORM_SECONDS
        left = [r.id for r in reports if r.status == _dispatch.IN_FLIGHT]
        released = sum(r.status == _dispatch.RELEASED for r in reports)
        if released:
            log.info("stopping: released %d claimed row(s) whose channels were not attempted", released)
        if left:
            with self._in_flight_guard:
                self.in_flight.extend(left)
        return len(reports)

    def timeout_pass(self) -> int:
        """Expire what is due, then fold the state counters (``counts.compact``) when they have
        grown and the closed buckets of the charts' rollups (``series.compact``); returns the
        number of notifications expired."""
        expired = len(self.runtime.expire())
        _counts.compact()
        _series.compact(self.runtime.clock())
        return expired

    def callback_pass(self) -> int:
        counts = self.runtime.deliver_callbacks()
        return sum(counts.values())

    def run_once(self) -> dict:
        """One pass of each loop; returns how many items each handled."""
        handled = {}
        for name in self.LOOPS:
            handled[name] = getattr(self, f"{name}_pass")()
            self._passed(name)
        return handled

    # loop health -------------------------------------------------------------------------
    def _passed(self, name: str) -> None:
        self.last_pass[name] = self.clock()

    def loop_ages(self) -> dict[str, float]:
        """``{loop: seconds}`` since each loop last finished a pass without an error (since
        the worker was made or started, for a loop that has not yet)."""
        now = self.clock()
        return {name: max(0.0, now - (last if last is not None else self.started_at))
                for name, last in self.last_pass.items()}

    def stale_loops(self, max_age: float) -> dict[str, float | None]:
        """``{loop: age in seconds, or None when it never passed}`` of the loops that have not
        finished a pass within ``max_age`` seconds (empty: every loop is healthy)."""
        ages = self.loop_ages()
        return {name: (None if self.last_pass[name] is None else ages[name])
                for name in self.LOOPS if self.last_pass[name] is None or ages[name] > max_age}

    # the loops ---------------------------------------------------------------------------
    def _idle_wait(self, name: str) -> float:
        """Seconds loop ``name`` waits after a pass that found nothing: the poll interval, or at
        least ``STORM_SWEEP_INTERVAL`` for the timeout and callback loops while dispatch is busy."""
        if name != "dispatch" and time.monotonic() < self._dispatch_busy_until:
            return max(self.poll_interval, STORM_SWEEP_INTERVAL)
        return self.poll_interval

    def _loop(self, name: str) -> None:
        step = getattr(self, f"{name}_pass")
        backoff = Backoff()
        log.info("worker loop %s started", name)
        try:
            while not self._stop.is_set():
                try:
                    handled = step()
                except Exception as exc:
                    self.outage.failed(name, exc)
                    self._stop.wait(backoff.next())
                    continue
                finally:
                    _close_connections()
                backoff.reset()
                self._passed(name)
                self.outage.passed(name)
                if not handled:
                    self._stop.wait(self._idle_wait(name))
        finally:
            _close_connections()
            log.info("worker loop %s stopped", name)

    def start(self) -> None:
        """Start the three loops in daemon threads (a stopped worker can start again)."""
        if self._threads:
            return
        self._stop.clear()
        self.in_flight = []
        self.started_at = self.clock()
        self.last_pass = dict.fromkeys(self.LOOPS)
        logging.getLogger("psycopg.pool").addFilter(self._pool_filter)
        for name in self.LOOPS:
            t = threading.Thread(target=self._loop, args=(name,), name=f"uns-{name}", daemon=True)
            t.start()
            self._threads.append(t)

    def request_stop(self) -> None:
        """Ask the loops to stop claiming and start the grace (safe from a signal handler; a
        second call ends the grace at once)."""
        self._stop.set()

    def stop(self, timeout: float | None = None) -> bool:
        """Stop claiming, give in-flight channel attempts the grace, then wait for the loops to
        settle and release (at most ``timeout`` seconds in all; default: the grace plus
        ``SETTLE_MARGIN_SECONDS``). Returns True when the stop was clean; False when attempts
        were still running at the end of the grace (their ids stay in ``in_flight``) or a loop
        did not finish in time, after one ERROR line saying which."""
        if not self._stop.is_set():
            self._stop.set()
        budget = self._stop.grace_left() + SETTLE_MARGIN_SECONDS if timeout is None else float(timeout)
        deadline = time.monotonic() + budget
        for t in self._threads:
            t.join(max(0.0, deadline - time.monotonic()))
        stuck = [t.name for t in self._threads if t.is_alive()]
        self._threads = []
        logging.getLogger("psycopg.pool").removeFilter(self._pool_filter)
        if self.outage.open:
            log.warning("worker stopped during an outage (%d failed passes)", self.outage.failed_passes)
        with self._in_flight_guard:
            left = list(self.in_flight)
        if left:
            log.error("uns worker stop grace (%.0f s) ended with %d channel attempt(s) still running; "
                      "their leases stay and they are recovered after expiry (the provider may see a repeat): %s",
                      self.stop_grace, len(left), ", ".join(left))
        if stuck:
            log.error("uns worker loops still busy %.0f s after the stop: %s (their claims are recovered "
                      "after lease expiry)", budget, ", ".join(stuck))
        return not left and not stuck

    @property
    def running(self) -> bool:
        return any(t.is_alive() for t in self._threads)

    @property
    def stopping(self) -> bool:
        """True once a stop was requested (the loops start no new pass)."""
        return self._stop.is_set()

    def loop_states(self) -> dict[str, bool]:
        """``{loop name: its thread is alive}`` for each of ``LOOPS`` (all False before
        ``start()`` and after ``stop()``); ``/readyz`` reports it."""
        alive = {t.name for t in self._threads if t.is_alive()}
        return {name: f"uns-{name}" in alive for name in self.LOOPS}

    def wait(self) -> None:
        """Block until a stop is requested (from a signal handler, say)."""
        while not self._stop.wait(0.5):
            pass
