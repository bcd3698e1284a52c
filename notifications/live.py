"""Live push of committed timeline events to WebSocket subscribers (the Channels layer).

``timeline.insert_events`` hands each committed batch of ``uns_events`` rows to the runtime's
``publish`` callable; ``channels_publisher()`` (the default, ``settings.UNS_EVENT_PUBLISHER``)
sends every event to two groups: ``timeline.<notification_id>`` and ``timeline.all``, as
``{"type": "timeline.event", "event": event_message(ev)}``. With ``REDIS_URL`` the layer is Redis,
so events written by a ``runworker`` process reach sockets held by any daphne process; without
it the layer is in-memory and only the embedded server process (which runs the worker loops
itself) publishes and subscribes.

Delivery is at most once and never blocks or fails a transition: sends are scheduled on an
event loop and the caller returns at once. The durable timeline is ``uns_events``; a subscriber
gets it as catch-up when it subscribes (and again whenever it re-subscribes).

Loops: the in-memory layer keeps asyncio queues that belong to the loop the consumers run on,
so sends must run on that loop. Consumers ``bind_loop()`` their server loop when they connect,
and the publisher schedules its sends there (thread-safely) while it runs. Without a running
bound loop (a ``runworker`` process, a management command) sends run on one private background
loop, which also keeps one Redis connection per process instead of one per call. One lock per
loop keeps a process's events in the order it committed them.

Outages: a failed send is counted, not logged with a traceback each (a 10 s Redis outage used to
write one per event per group). ``FailureTally`` writes one WARNING line when sends start
failing and one, with the duration and the counts, when a send succeeds again.
"""
import asyncio
import logging
import threading
import time
import weakref

from channels.layers import DEFAULT_CHANNEL_LAYER, get_channel_layer

from core.times import iso

from .models import Event
from .runtime import metrics as _metrics

log = logging.getLogger("uns.live")

TIMELINE_ALL = "timeline.all"
MESSAGE_TYPE = "timeline.event"

_bound_loop: asyncio.AbstractEventLoop | None = None


def timeline_group(notification_id: str) -> str:
    """The group of one notification's timeline. ``notification_id`` must already be a
    validated UUID string (group names are never built from raw client input)."""
    return f"timeline.{notification_id}"


def event_message(ev: Event) -> dict:
    """What a subscriber receives for one event (also the catch-up item shape)."""
    return {
        "id": ev.id,
        "notification_id": ev.notification_id,
        "kind": ev.kind,
        "at": ev.at,
        "at_iso": iso(ev.at),
        "payload": ev.payload,
    }


def bind_loop(loop: asyncio.AbstractEventLoop) -> None:
    """Route sends to ``loop`` (the server loop where this process's consumers live)."""
    global _bound_loop
    _bound_loop = loop


class _BackgroundLoop:
    """One daemon thread running an event loop, for processes without a server loop."""

    def __init__(self):
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self._run, name="uns-live-publisher", daemon=True)
        self.thread.start()

    def _run(self):
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()


class FailureTally:
    """Counts failed live-push sends across one outage of the channel layer (thread-safe).

    ``failed(exc, event_id)``: the first failure logs one WARNING line with the error (its
    traceback at DEBUG only); later ones are only counted. ``succeeded()``: if failures were
    counted, logs one WARNING line with the outage's duration in seconds, the failed sends and
    the events that missed their live push; then starts afresh. ``summary()``: the same counts
    without ending the outage (for a shutdown during one). ``clock`` defaults to
    ``time.monotonic``."""

    def __init__(self, logger: logging.Logger = log, clock=time.monotonic):
        self.log, self.clock = logger, clock
        self._guard = threading.Lock()
        self.started: float | None = None
        self.sends = 0
        self._events: set = set()

    def failed(self, exc: BaseException, event_id=None) -> None:
        _metrics.LIVE_PUSH_FAILURES.inc()  # every failed send passes here (uns_live_push_failures_total)
        with self._guard:
            self.sends += 1
            self._events.add(event_id)
            if self.started is not None:
                return
            self.started = self.clock()
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        self.log.warning("live push to the channel layer failing (%s%s); counting failures until a send "
                         "succeeds (subscribers catch up from the timeline)", type(exc).__name__,
                         f": {text}" if text else "")
        self.log.debug("first failed live push", exc_info=exc)

    def succeeded(self) -> None:
        if self.started is None:  # the common case, without taking the lock
            return
        with self._guard:
            if self.started is None:
                return
            duration, sends, events = self.clock() - self.started, self.sends, len(self._events)
            self.started, self.sends, self._events = None, 0, set()
        self.log.warning("live push to the channel layer succeeds again after %.1f s (%d sends failed, "
                         "%d events not pushed live)", duration, sends, events)

    def summary(self) -> str | None:
        """``None`` when no outage is open, else one line with its counts so far."""
        with self._guard:
            if self.started is None:
                return None
            return (f"live push to the channel layer still failing after {self.clock() - self.started:.1f} s "
                    f"({self.sends} sends failed, {len(self._events)} events not pushed live)")


class ChannelsPublisher:
    """``publish(events)``: send committed events to their timeline groups (see module doc)."""

    def __init__(self, alias: str = DEFAULT_CHANNEL_LAYER):
        self.alias = alias
        self.failures = FailureTally()
        self._background: _BackgroundLoop | None = None
        self._guard = threading.Lock()
        self._locks: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock]" = weakref.WeakKeyDictionary()
        self._pending: set = set()

    def _target_loop(self) -> asyncio.AbstractEventLoop:
        loop = _bound_loop
        if loop is not None and loop.is_running() and not loop.is_closed():
            return loop
        with self._guard:
            if self._background is None:
                self._background = _BackgroundLoop()
            return self._background.loop

    def __call__(self, events) -> None:
        messages = [event_message(ev) for ev in events]
        if not messages:
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is not None:  # called on a loop thread: schedule, never block the loop
            running.create_task(self._send(messages))
            return
        future = asyncio.run_coroutine_threadsafe(self._send(messages), self._target_loop())
        with self._guard:
            self._pending.add(future)
        future.add_done_callback(self._done)

    def _done(self, future) -> None:
        with self._guard:
            self._pending.discard(future)

    async def _send(self, messages: list[dict]) -> None:
        layer = get_channel_layer(self.alias)
        if layer is None:
            return
        loop = asyncio.get_running_loop()
        lock = self._locks.get(loop)
        if lock is None:
            lock = self._locks[loop] = asyncio.Lock()
        async with lock:
            for message in messages:
                body = {"type": MESSAGE_TYPE, "event": message}
                for group in (timeline_group(message["notification_id"]), TIMELINE_ALL):
                    try:
                        await layer.group_send(group, body)
                    except Exception as exc:  # a layer outage loses live pushes, never the timeline
                        self.failures.failed(exc, message["id"])
                    else:
                        self.failures.succeeded()

    def drain(self, timeout: float = 5.0) -> bool:
        """Wait up to ``timeout`` seconds for scheduled sends (tests, graceful shutdown).
        Returns True when none is left pending. Logs the failure counts if the channel layer
        is failing at that moment."""
        with self._guard:
            pending = list(self._pending)
        drained = True
        for future in pending:
            try:
                future.result(timeout)
            except Exception:
                drained = False
                break
        summary = self.failures.summary()
        if summary:
            log.warning("%s", summary)
        return drained


_publisher: ChannelsPublisher | None = None
_publisher_guard = threading.Lock()


def channels_publisher() -> ChannelsPublisher:
    """The process's publisher (the ``UNS_EVENT_PUBLISHER`` default factory)."""
    global _publisher
    with _publisher_guard:
        if _publisher is None:
            _publisher = ChannelsPublisher()
        return _publisher
