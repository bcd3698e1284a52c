"""WebSocket routes under /ws/."""
from django.urls import path

from . import consumers

websocket_urlpatterns = [
    path("ws/timeline/<str:notification_id>/", consumers.TimelineConsumer.as_asgi()),
]
