"""Live push of committed timeline events to WebSocket subscribers (the Channels layer).

``records.insert_events`` hands each committed batch of ``uns_events`` rows to the runtime's
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
"""
import asyncio
import logging
import threading
import weakref

from channels.layers import DEFAULT_CHANNEL_LAYER, get_channel_layer

from .models import Event
from .selectors import iso

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


class ChannelsPublisher:
    """``publish(events)``: send committed events to their timeline groups (see module doc)."""

    def __init__(self, alias: str = DEFAULT_CHANNEL_LAYER):
        self.alias = alias
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
                    except Exception:  # a layer outage loses live pushes, never the timeline
                        log.exception("live push of event %s to %s failed", message["id"], group)

    def drain(self, timeout: float = 5.0) -> bool:
        """Wait up to ``timeout`` seconds for scheduled sends (tests, graceful shutdown).
        Returns True when none is left pending."""
        with self._guard:
            pending = list(self._pending)
        for future in pending:
            try:
                future.result(timeout)
            except Exception:
                return False
        return True


_publisher: ChannelsPublisher | None = None
_publisher_guard = threading.Lock()


def channels_publisher() -> ChannelsPublisher:
    """The process's publisher (the ``UNS_EVENT_PUBLISHER`` default factory)."""
    global _publisher
    with _publisher_guard:
        if _publisher is None:
            _publisher = ChannelsPublisher()
        return _publisher
