"""ASGI entry point: HTTP (Django), WebSocket (Channels, ``/ws/``) and lifespan (embedded worker)."""
import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "uns_project.settings")

from notifications.http_threads import asgi_application  # noqa: E402

django_asgi_app = asgi_application()  # Django's, on the database threads with PostgreSQL (UNS_HTTP_THREADS)

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402

from notifications.asgi_limits import BodyLimitMiddleware  # noqa: E402
from notifications.lifespan import LifespanApp  # noqa: E402
from notifications.routing import websocket_urlpatterns  # noqa: E402
from notifications.ws_auth import origin_check  # noqa: E402

lifespan = LifespanApp()

application = ProtocolTypeRouter({
    # /api/ bodies over UNS_MAX_BODY_BYTES are refused before Django reads them.
    "http": BodyLimitMiddleware(django_asgi_app),
    # A browser's Origin must be an allowed host (the session cookie); clients without one
    # authenticate with a token (notifications.ws_auth).
    "websocket": origin_check(AuthMiddlewareStack(URLRouter(websocket_urlpatterns))),
    "lifespan": lifespan,
})
