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
loop, which also keeps one Redis connection per process instead of one per call. One flusher per
loop (below) keeps a process's events in the order it committed them.

Cost: events committed while a send is under way queue per loop and go out together in the next
send (one flusher per loop, so commit order holds). On the Redis layer one pipelined round trip
per send reads which of the send's groups have subscribers (the layer's own expiry trim and
member read, as ``group_send`` does first); only those groups then get the layer's
``group_send``. Before, every event cost two ``group_send`` calls of two round trips each even
with nobody subscribed, about 1 to 2.5 ms of the web process's CPU per accept or ACK
(``bench/floor.py``). A socket that subscribes after the read gets the event from its catch-up
(it joins before it reads, and the event is already committed).

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
from channels_redis.core import RedisChannelLayer

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
        # Per loop with a flusher scheduled: the messages waiting for it (no key: no flusher).
        self._queued: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, list]" = weakref.WeakKeyDictionary()
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
        loop = running or self._target_loop()
        with self._guard:  # queue behind a scheduled flusher of that loop, or schedule one
            queued = self._queued.get(loop)
            if queued is not None:
                queued.extend(messages)
                return
            self._queued[loop] = messages
        if running is not None:  # called on a loop thread: schedule, never block the loop
            running.create_task(self._flush(loop))
            return
        future = asyncio.run_coroutine_threadsafe(self._flush(loop), loop)
        with self._guard:
            self._pending.add(future)
        future.add_done_callback(self._done)

    def _done(self, future) -> None:
        with self._guard:
            self._pending.discard(future)

    async def _flush(self, loop: asyncio.AbstractEventLoop) -> None:
        """On ``loop``: send what is queued for it, again until nothing is (the only sender of
        that loop, so messages go out in the order they were queued)."""
        while True:
            with self._guard:
                messages = self._queued.get(loop)
                if not messages:
                    self._queued.pop(loop, None)
                    return
                self._queued[loop] = []
            try:
                await self._send(messages)
            except Exception:  # noqa: BLE001 - _send counts its failures; never stop the flusher
                log.debug("live push send failed", exc_info=True)

    async def _send(self, messages: list[dict]) -> None:
        """Send ``messages`` to their groups (``_flush``, the loop's one sender, calls it)."""
        layer = get_channel_layer(self.alias)
        if layer is None:
            return
        sends = [(group, {"type": MESSAGE_TYPE, "event": message}, message["id"])
                 for message in messages for group in (timeline_group(message["notification_id"]), TIMELINE_ALL)]
        if isinstance(layer, RedisChannelLayer):
            try:
                watched = await _watched_groups(layer, {group for group, _, _ in sends})
            except Exception as exc:  # a layer outage loses live pushes, never the timeline
                for _, _, event_id in sends:
                    self.failures.failed(exc, event_id)
                return
            self.failures.succeeded()
            sends = [send for send in sends if send[0] in watched]
        for group, body, event_id in sends:
            try:
                await layer.group_send(group, body)
            except Exception as exc:
                self.failures.failed(exc, event_id)
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


async def _watched_groups(layer: RedisChannelLayer, groups: set[str]) -> set[str]:
    """The ``groups`` that have members on the Redis ``layer``, read in one pipelined round trip
    per Redis host: each group's expired members trimmed and its members read, as
    ``RedisChannelLayer.group_send`` does before sending."""
    by_host: dict[int, list[str]] = {}
    for group in groups:
        by_host.setdefault(layer.consistent_hash(group), []).append(group)
    watched = set()
    expired = int(time.time()) - layer.group_expiry
    for index, names in by_host.items():
        async with layer.connection(index).pipeline(transaction=False) as pipe:
            for group in names:
                key = layer._group_key(group)
                pipe.zremrangebyscore(key, min=0, max=expired)
                pipe.zcard(key)
            counts = (await pipe.execute())[1::2]
        watched.update(group for group, count in zip(names, counts) if count)
    return watched


_publisher: ChannelsPublisher | None = None
_publisher_guard = threading.Lock()


def channels_publisher() -> ChannelsPublisher:
    """The process's publisher (the ``UNS_EVENT_PUBLISHER`` default factory)."""
    global _publisher
    with _publisher_guard:
        if _publisher is None:
            _publisher = ChannelsPublisher()
        return _publisher
