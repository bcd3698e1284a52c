"""In-app ``console`` channel: records the notification in the console inbox table."""
import uuid

from ..models import InboxMessage
from .base import AttemptContext, ChannelTarget, DeliveryResult


class ConsoleAdapter:
    """Idempotent per (notification, channel): a recovered attempt does not duplicate the entry."""

    def __init__(self, clock):
        self._clock = clock

    def send(self, notification: dict, target: ChannelTarget, context: AttemptContext) -> DeliveryResult:
        entry_id = str(uuid.uuid5(uuid.NAMESPACE_URL, f"uns-inbox:{notification['id']}:{target.name}"))
        InboxMessage.objects.get_or_create(
            id=entry_id,
            defaults={
                "notification_id": notification["id"],
                "channel": target.name,
                "title": notification["title"],
                "body": notification.get("body", ""),
                "severity": notification["severity"],
                "delivered_at": self._clock(),
            },
        )
        return DeliveryResult(True, message_id=entry_id, answer=f"in-app inbox entry {entry_id} written")
