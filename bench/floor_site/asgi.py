"""The bench's ASGI application: ``uns_project.asgi``'s stack plus the floor ladder's rungs.

HTTP ``/floor/bare`` and WebSocket ``/floor/ws-bare/`` are answered by a bare ASGI callable
before anything of the project runs. WebSocket ``/floor/ws-echo/`` is a Channels consumer
echoing each frame behind the project's WebSocket stack (origin check, ``AuthMiddlewareStack``,
``URLRouter``); ``/floor/ws-recheck/`` is ``RespondConsumer`` with its database work replaced by
the credentials re-check alone (frame validation, one ``ws_auth.database_call``, the token and
capability read). Everything else is the project's application.
"""
import json
import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "floor_site.settings")

from uns_project.asgi import django_asgi_app, lifespan  # noqa: E402

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.generic.websocket import AsyncWebsocketConsumer  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from django.urls import path  # noqa: E402

from notifications import ws_auth  # noqa: E402
from notifications.asgi_limits import BodyLimitMiddleware  # noqa: E402
from notifications.consumers import RespondConsumer  # noqa: E402
from notifications.routing import websocket_urlpatterns  # noqa: E402
from notifications.ws_auth import origin_check  # noqa: E402


def _ok(text: str) -> str:
    try:
        request_id = json.loads(text).get("request_id")
    except (ValueError, AttributeError):
        request_id = None
    return json.dumps({"request_id": request_id, "ok": True, "notification": {}})


class EchoConsumer(AsyncWebsocketConsumer):
    async def receive(self, text_data=None, bytes_data=None):
        await self.send(text_data=_ok(text_data or ""))


class RecheckConsumer(RespondConsumer):
    def _respond(self, action, nid, message, request_id):
        refusal = ws_auth.recheck(self.scope, self.principal, self.capability)
        return (refusal, None) if refusal else (None, {})


_project = ProtocolTypeRouter({
    "http": BodyLimitMiddleware(django_asgi_app),
    "websocket": origin_check(AuthMiddlewareStack(URLRouter([
        path("floor/ws-echo/", EchoConsumer.as_asgi()),
        path("floor/ws-recheck/", RecheckConsumer.as_asgi()),
        *websocket_urlpatterns,
    ]))),
    "lifespan": lifespan,
})


async def application(scope, receive, send):
    if scope["type"] == "http" and scope["path"] == "/floor/bare":
        more = True
        while more:
            more = (await receive()).get("more_body", False)
        await send({"type": "http.response.start", "status": 202,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", b"20")]})
        await send({"type": "http.response.body", "body": b'{"status":"PENDING"}'})
        return
    if scope["type"] == "websocket" and scope["path"] == "/floor/ws-bare/":
        while True:
            message = await receive()
            if message["type"] == "websocket.connect":
                await send({"type": "websocket.accept"})
            elif message["type"] == "websocket.receive":
                await send({"type": "websocket.send", "text": _ok(message.get("text") or "")})
            else:
                return
    await _project(scope, receive, send)
