"""WebSocket consumers (Channels). Authenticate in ``connect()``, ``accept()`` last."""
import asyncio

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from . import selectors
from .api.permissions import VIEW_CONSOLE
from .models import Event, Notification

POLL_SECONDS = 0.5


class TimelineConsumer(AsyncJsonWebsocketConsumer):
    """``/ws/timeline/{id}/``: sends ``{"type": "event", "event": {...}}`` for every timeline event
    of one notification, the existing ones first, then new ones as they commit (from any process,
    read from ``uns_events``). Needs the console capability; closes with 4401 (unauthenticated),
    4403 (no capability) or 4404 (unknown id)."""

    async def connect(self):
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=4401)
            return
        if not await database_sync_to_async(user.has_perm)(VIEW_CONSOLE):
            await self.close(code=4403)
            return
        self.notification_id = self.scope["url_route"]["kwargs"]["notification_id"]
        if not await database_sync_to_async(Notification.objects.filter(id=self.notification_id).exists)():
            await self.close(code=4404)
            return
        self.seen: set[str] = set()
        await self.accept()
        self.poller = asyncio.create_task(self._poll())

    async def disconnect(self, code):
        poller = getattr(self, "poller", None)
        if poller:
            poller.cancel()

    @database_sync_to_async
    def _new_events(self):
        events = Event.objects.filter(notification_id=self.notification_id).order_by("at", "id")
        return [selectors.event_view(ev) for ev in events if ev.id not in self.seen]

    async def _poll(self):
        while True:
            for ev in await self._new_events():
                self.seen.add(ev["id"])
                await self.send_json({"type": "event", "event": ev})
            await asyncio.sleep(POLL_SECONDS)

    async def receive_json(self, content, **kwargs):
        await self.send_json({"type": "error", "code": "read_only", "detail": "this socket only streams events"})
