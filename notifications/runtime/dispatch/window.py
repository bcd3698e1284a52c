"""Window: the dispatch scheduler, one pass of claimed rows in a sliding window of adapter threads.

``dispatch`` claims a batch, runs its channel attempts in ``_Window`` (each after a committed
lease check, ``concurrency`` threads, one running attempt per claim, a per-channel cap), settles
finished claims in chunks as it goes and releases what a stop kept from starting. Without a stop
signal the pass runs until its last attempt answers. ``docs/explanation/dispatch.md`` gives the
rules and what a crash loses at each step.
"""
import logging
import time
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait

from django.db import close_old_connections

from ...adapters.base import ChannelTarget, DeliveryResult
from oncall import targets as oncall_targets

from ...models import Channel, Event
from .. import metrics as _metrics
from .. import timeline
from . import people
from .claim import IN_FLIGHT, Claim, DispatchReport, claim, confirm_leases, release_unattempted
from .settle import settle_batch, write_results

log = logging.getLogger("uns.dispatch")

_STOP_POLL_SECONDS = 0.25  # how often a pass waiting on its adapter calls looks for a stop


class _NoStop:
    """The stop signal of a pass that has none (``Runtime.dispatch``): it never fires."""

    @staticmethod
    def is_set() -> bool:
        return False

    @staticmethod
    def grace_left() -> float:
        return float("inf")


def _send(runtime, c: Claim, channel: str, targets: dict[str, ChannelTarget]) -> None:
    """Run one channel's adapter (its lease confirmed, no transaction open) and keep the answer
    as ``c.results[channel]`` and an unsaved CHANNEL_ATTEMPT_RESULT row for the settle.

    The lease check may be a while ago (the thread waited, or an earlier provider attempt was
    slow): if the lease has expired by the clock since (``lease_until`` as the last committed check left it, and only
    an expired lease can be taken over), the provider is not called and the claim is lease-lost.

    An adapter that makes several provider attempts in one channel attempt (Apprise: one per
    URL) gets ``context.provider`` (``_ProviderAttempts``): a committed lease check precedes each
    of them and each is its own CHANNEL_ATTEMPT_RESULT; its aggregate answer settles the channel
    without another row."""
    if runtime.clock() >= c.lease_until:
        c.lease_lost = True
        return
    if oncall_targets.is_people(channel):  # schedule:/team:/user:, resolved now (dispatch.people)
        provider = _ProviderAttempts(runtime, c, channel)
        started = runtime.clock()
        try:
            result = people.send(runtime, c, channel, provider)
        except Exception as exc:  # a resolution or adapter bug must not lose the attempt's record
            log.exception("paging %s raised for %s", channel, c.id, extra=c.log_extra)
            result = DeliveryResult(False, retryable=True, error=f"paging raised {type(exc).__name__}: {exc}")
        _metrics.observe_attempt(channel, runtime.clock() - started)
        if not provider.observed_count:
            c.result_events.append(_result_event(c, channel, result, runtime.clock()))
        c.results[channel] = result
        c.fail_over(channel, result, runtime.clock())
        return
    target = targets.get(channel)
    adapter = runtime.adapters.get(target.kind) if target else None
    provider = None
    if target is None:
        result = DeliveryResult(False, retryable=False, error=f"channel {channel!r} is no longer configured")
    elif adapter is None:
        result = DeliveryResult(False, retryable=False, error=f"no adapter for channel kind {target.kind!r}")
    else:
        provider = _ProviderAttempts(runtime, c, channel)
        started = runtime.clock()
        try:
            result = adapter.send(c.notification, target, c.context(provider))
        except Exception as exc:  # an adapter bug must not lose the attempt's record
            log.exception("adapter %s raised for %s", target.kind, c.id, extra=c.log_extra)
            result = DeliveryResult(False, retryable=True, error=f"adapter raised {type(exc).__name__}: {exc}")
        # Every adapter call passes here, so the latency histogram is observed once, for all.
        _metrics.observe_attempt(channel, runtime.clock() - started)
    if provider is None or not provider.observed_count:
        # One provider attempt (the adapter did not record its own): the answer is the record.
        c.result_events.append(_result_event(c, channel, result, runtime.clock()))
    c.results[channel] = result
    c.fail_over(channel, result, runtime.clock())


def _result_event(c: Claim, channel: str, result: DeliveryResult, now: float) -> Event:
    """The CHANNEL_ATTEMPT_RESULT row of one provider observation (reference section 3)."""
    return timeline.event(c.id, timeline.CHANNEL_ATTEMPT_RESULT, {
        "lease_token": c.lease_token,
        "attempt": c.attempt,
        "cycle": c.cycle,
        "cycle_attempt": c.cycle_attempt,
        "channel": channel,
        "success": result.success,
        "message_id": result.message_id,
        "error": result.error,
        # metadata is the catalog's free-form field: the provider's Retry-After (seconds) rides
        # there, as the catalog fixes the payload's own keys.
        "metadata": {**result.metadata, "retryable": result.retryable,
                     **({"retry_after_seconds": result.retry_after} if result.retry_after is not None else {})},
        "provider_observed_at": now,
    }, now)


class _ProviderAttempts:
    """``adapters.base.ProviderAttempts`` for one channel attempt of one claim: the lease check
    before each provider attempt after the first is ``confirm_leases`` for this one row (a
    committed conditional UPDATE plus CHANNEL_ATTEMPT_STARTED), so a built-in provider retry
    never runs on a lost lease; each observation is a CHANNEL_ATTEMPT_RESULT for the settle."""

    def __init__(self, runtime, c: Claim, channel: str):
        self._runtime, self._claim, self._channel = runtime, c, channel
        self.begun = 0
        self.observed_count = 0

    def begin(self) -> bool:
        c = self._claim
        if c.lease_lost or self._runtime.clock() >= c.lease_until:
            c.lease_lost = True
            return False
        self.begun += 1
        if self.begun == 1:  # the window's check preceded this channel's first provider attempt
            return True
        return bool(confirm_leases(self._runtime, [(c, self._channel)]))

    def observed(self, result: DeliveryResult) -> None:
        self.observed_count += 1
        self._claim.result_events.append(_result_event(self._claim, self._channel, result, self._runtime.clock()))

    def succeeded_before(self) -> set[str]:
        c = self._claim
        if c.attempt <= 1:
            return set()
        payloads = Event.objects.filter(notification_id=c.id, kind=timeline.CHANNEL_ATTEMPT_RESULT,
                                        payload__channel=self._channel,
                                        payload__success=True).values_list("payload", flat=True)
        keys = {((p.get("metadata") or {}).get("provider_key")) for p in payloads}
        keys.discard(None)
        return keys


class AdapterThreads:
    """The window's adapter threads: ``width`` pool threads (``uns-attempt-*``); each call gives
    back the database connection it used (an adapter such as ``console`` writes) when it ends.
    ``submit(fn, *args) -> Future``; ``shutdown()`` returns at once, leaving running calls to
    finish on their own (a pass under a stop returns when the grace ends)."""

    def __init__(self, width: int):
        self._pool = ThreadPoolExecutor(max_workers=width, thread_name_prefix="uns-attempt")

    def submit(self, fn, *args) -> Future:
        return self._pool.submit(self._call, fn, *args)

    @staticmethod
    def _call(fn, *args):
        try:
            return fn(*args)
        finally:
            close_old_connections()

    def shutdown(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


def _channel_cap(width: int) -> int:
    """The most adapter threads of one pass that one channel may hold while another channel has
    work in the pass: ``ceil(width / 2)`` (all of them when ``width`` is 1)."""
    return max(1, -(-width // 2))


class _Window:
    """The attempts of one pass, in a sliding window (``docs/explanation/dispatch.md``):
    ``width`` (``runtime.concurrency``) adapter threads; whenever threads are free, the next
    ready rows (each claim's next channel, claim order, one channel attempt per claim at a time)
    are confirmed together, one committed lease check with CHANNEL_ATTEMPT_STARTED for all of
    them (``confirm_leases``), and start at once; a claim with nothing left to attempt joins the
    next settle chunk, settled (``settle_batch``) once its oldest member has waited
    ``SETTLE_INTERVAL`` seconds or nothing is left to run.

    ``run()`` returns ``(reports, unattempted, in_flight, errors)``: the settled chunks'
    reports, claims to release, claims whose adapter call still runs (left to their lease), and
    the exceptions raised (their claims are in none of the lists: left to their lease)."""

    SETTLE_INTERVAL = 0.1  # seconds a finished claim waits at most for its chunk's settle
    GATHER = 0.005  # seconds a free thread waits at most for others, so confirms are batched
    REFILL_IDLE = 0.25  # seconds between refill claims that found nothing due
    SLOW_AFTER = 0.5  # seconds without an answer after which the running attempts count as slow

    def __init__(self, runtime, claims: list[Claim], targets, stop, limit: int | None = None):
        self.runtime, self.claims, self.targets, self.stop = runtime, list(claims), targets, stop
        self.limit = limit or runtime.batch_size
        # Refill (``_refill``) only this long into the pass, so a pass (and the worker loop's
        # age that readiness watches) stays bounded: a quarter lease, then the slowest attempt.
        self.refill_until = time.monotonic() + runtime.lease_seconds / 4
        self.refill_after: float | None = None
        self.answered_at = time.monotonic()  # when an attempt last answered (or the pass began)
        self.width = max(1, runtime.concurrency)
        self.cap = _channel_cap(self.width)
        # Free threads that make a group: a confirm waits (GATHER) for this many, a refill for them.
        self.group = max(1, self.width // 2)
        self.ready: list[Claim] = []
        self.running: dict = {}  # future -> (claim, channel)
        self.finished: list[Claim] = []  # attempted, waiting for the next settle chunk
        self.finished_since: float | None = None  # monotonic time the oldest of them finished
        self.free_since: float | None = None  # monotonic time a thread became free with rows ready
        self.reports: list[DispatchReport] = []
        self.errors: list = []
        self.failed: set[str] = set()
        self.done_ids: set[str] = set()
        self._take(self.claims)

    def _take(self, claims: list[Claim]) -> None:
        """Queue fresh ``claims``: those with a channel to attempt become ready (claim order), the
        rest (nothing to attempt) join the next settle chunk."""
        for c in claims:
            if not c.lease_lost and c.next_channel() is not None:
                self.ready.append(c)
            else:
                self._finish(c)

    # refilling ---------------------------------------------------------------------------
    def _refill(self) -> None:
        """Claim another batch into the running window when only slow attempts hold it: nothing
        ready, at least half the threads free (or any, once no attempt answered for
        ``SLOW_AFTER`` seconds), attempts still running, no stop and no error,
        within ``refill_until``. The claim is the usual one (committed before any I/O, fenced),
        leaving out every row this pass claimed and their dedup groups: one pass attempts each
        notification at most once, and a row its settles made due again (a zero-backoff retry, a
        promoted dedup successor) belongs to the next pass. A claim that found nothing is not
        retried for ``REFILL_IDLE`` seconds. Without this the
        worker's next claim waited for the batch's slowest attempt (up to its channel's
        timeout), and rows accepted meanwhile for fast channels waited with it. Both databases: on
        SQLite the claim is one short write transaction, queued on the process's write queue
        (``uns_project.sqlite``) like every other (trial finding: in the embedded mode a 20 s
        receiver held a critical page on another channel for 18 s)."""
        free = self.width - len(self.running)
        now = time.monotonic()
        # Fewer than half the threads free: wait for them while answers come in (a busy window
        # claims in groups); once no answer came for ``SLOW_AFTER`` seconds, only slow attempts
        # hold the window and one free thread is enough (trial finding: 9 attempts on a 30 s
        # receiver in a 16-thread window left 7 threads idle and held a critical page for a
        # fast channel 8 s; 8 attempts left 8 free and it went in 0.1 s).
        if (self.ready or not self.running or self.stop.is_set() or self.errors or free < 1
                or (free < self.group and now - self.answered_at < self.SLOW_AFTER)):
            return
        if now >= self.refill_until or (self.refill_after is not None and now < self.refill_after):
            return
        try:
            more = claim(self.runtime, self.limit, exclude=[c.id for c in self.claims])
        except Exception as exc:  # the database went away: what is running keeps its lease
            self.errors.append(exc)
            return
        if not more:
            self.refill_after = now + self.REFILL_IDLE
            return
        self.refill_after = None
        missing = {ch for c in more for ch in c.all_channels()} - set(self.targets)
        if missing:
            self.targets = {**self.targets, **_targets(missing)}
        self.claims += more
        self._take(more)

    # choosing and starting -------------------------------------------------------------
    def _pick(self, free: int) -> list[tuple[Claim, str]]:
        """Up to ``free`` ready (claim, channel) pairs in claim order. A channel already holding
        ``cap`` threads gets another only when no other channel has a row ready or running
        (so a slow receiver cannot take every thread, and a pass with one channel uses all)."""
        busy: dict[str, int] = {}
        for _c, ch in self.running.values():
            busy[ch] = busy.get(ch, 0) + 1
        pairs = [(c, c.next_channel()) for c in self.ready]
        channels = {ch for _c, ch in pairs} | set(busy)
        picked = []
        for c, ch in pairs:
            if len(picked) >= free:
                break
            if busy.get(ch, 0) >= self.cap and len(channels) > 1:
                continue
            busy[ch] = busy.get(ch, 0) + 1
            picked.append((c, ch))
        return picked

    def _start(self, pool) -> None:
        free = self.width - len(self.running)
        if free <= 0 or not self.ready:
            self.free_since = None
            return
        picked = self._pick(free)
        if not picked:  # every ready row's channel is at its cap: wait for an answer
            self.free_since = None
            return
        now = time.monotonic()
        if self.free_since is None:
            self.free_since = now
        # Batch the confirms: start when half the threads are free, when every ready row fits,
        # when nothing runs, or when a free thread has waited GATHER seconds.
        if (len(picked) < min(self.group, len(self.ready)) and self.running
                and now - self.free_since < self.GATHER):
            return
        self.free_since = None
        chosen = {c.id for c, _ch in picked}
        self.ready = [c for c in self.ready if c.id not in chosen]
        try:
            held = confirm_leases(self.runtime, picked)
        except Exception as exc:  # the database went away: these claims keep their lease
            self.errors.append(exc)
            self.failed.update(chosen)
            return
        held_ids = {c.id for c, _ch in held}
        for c, _ch in picked:
            if c.id not in held_ids:
                self._finish(c)  # LEASE_LOST: its adapter never runs
        for c, ch in held:
            self.running[pool.submit(_send, self.runtime, c, ch, self.targets)] = (c, ch)

    # finishing and settling --------------------------------------------------------------
    def _finish(self, c: Claim) -> None:
        if not self.finished:
            self.finished_since = time.monotonic()
        self.finished.append(c)
        self.done_ids.add(c.id)

    def _collect(self, done) -> None:
        if done:
            self.answered_at = time.monotonic()
        for f in done:
            c, _ch = self.running.pop(f)
            if f.exception() is not None:
                self.errors.append(f.exception())
                self.failed.add(c.id)
            elif c.lease_lost or c.next_channel() is None:
                self._finish(c)
            else:
                self.ready.insert(0, c)  # its next channel first: the claim settles sooner

    def _settle(self, force: bool = False) -> None:
        if not self.finished:
            return
        if not force and time.monotonic() - self.finished_since < self.SETTLE_INTERVAL:
            return
        chunk, self.finished = self.finished, []
        try:
            self.reports += settle_batch(self.runtime, chunk)
        except Exception as exc:  # the database went away: these claims keep their lease
            self.errors.append(exc)
            self.failed.update(c.id for c in chunk)

    def _timeout(self) -> float:
        """Seconds to wait for an adapter call before looking again (stop, settle, gather)."""
        t = _STOP_POLL_SECONDS
        now = time.monotonic()
        if self.finished:
            t = min(t, max(0.0, self.SETTLE_INTERVAL - (now - self.finished_since)))
        if self.free_since is not None:
            t = min(t, max(0.0, self.GATHER - (now - self.free_since)))
        if self.stop.is_set():
            t = min(t, self.stop.grace_left())
        return t

    def run(self) -> tuple[list, list, list, list]:
        pool = AdapterThreads(self.width)
        try:
            while True:
                self._refill()
                if not self.stop.is_set() and not self.errors:
                    self._start(pool)
                self._settle()
                if not self.running:
                    if self.stop.is_set() or self.errors or not self.ready:
                        break
                    continue
                if self.stop.is_set() and self.stop.grace_left() <= 0:
                    break
                done, _pending = wait(list(self.running), timeout=self._timeout(), return_when=FIRST_COMPLETED)
                self._collect(done)
        finally:
            pool.shutdown()
        in_flight = [c for c, _ch in self.running.values()]
        still = {c.id for c in in_flight}
        unattempted = []
        for c in self.claims:
            if c.id in self.failed or c.id in still or c.id in self.done_ids:
                continue
            # a ready claim the stop (or an error) kept from its next channel
            if c.channel_started:
                self.finished.append(c)  # settled with what its earlier channels observed
            else:
                unattempted.append(c)
        self._settle(force=True)
        return self.reports, unattempted, in_flight, self.errors


def _targets(names) -> dict[str, ChannelTarget]:
    return {
        ch.name: ChannelTarget(ch.name, ch.kind, ch.config or {}, ch.secret)
        for ch in Channel.objects.filter(name__in=list(names), enabled=True)
    }


def dispatch(runtime, limit: int | None = None, stop=None) -> list[DispatchReport]:
    """One dispatch pass: claim up to ``limit`` (default ``runtime.batch_size``) rows (committed),
    attempt their channels in the sliding window (``_Window``: ``runtime.concurrency`` adapter
    threads, a committed lease check before each attempt, no transaction open around an adapter),
    settle finished claims in chunks as the window runs. Returns one ``DispatchReport`` per
    claimed row (the window's refills included).

    ``stop``: a stop signal (``notifications.runtime.worker.StopSignal``: ``is_set()``,
    ``grace_left()`` in seconds), or None for a stop that never fires (the pass ends when its last
    attempt answers). Once it is set no channel starts; the reports then also carry ``RELEASED``
    (never attempted, claim undone) and ``IN_FLIGHT`` (adapter still running when the grace
    ended; lease kept) rows. If an attempt or a settle raised (the database went away, say), the
    rest is still settled and released, then the first exception is raised; that claim keeps its
    lease and what its adapters answered is written when it can be.
    """
    stop = _NoStop() if stop is None else stop
    if stop.is_set():
        return []
    claims = claim(runtime, limit or runtime.batch_size)
    if not claims:
        return []
    targets = _targets({ch for c in claims for ch in c.all_channels()})
    window = _Window(runtime, claims, targets, stop, limit)
    reports, unattempted, in_flight, errors = window.run()
    claims = window.claims  # with the refills
    if unattempted:
        reports += release_unattempted(runtime, unattempted)
    if in_flight:
        write_results(runtime, in_flight)  # what their earlier channels observed
        reports += [DispatchReport(c.id, IN_FLIGHT, attempt=c.attempt) for c in in_flight]
    if errors:
        # Claims whose attempt or settle raised keep their lease; what their adapters answered is kept.
        seen = {r.id for r in reports}
        write_results(runtime, [c for c in claims if c.id not in seen])
        raise errors[0]
    return reports
