"""The shared row loader: one notification by id, for every runtime verb that acts on one."""
import re

from ..models import Notification
from .errors import NotFound

# Every notification id is a lowercase UUID string (keys.new_id).
ID_SHAPE = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def get(notification_id: str) -> Notification:
    """The row, or ``NotFound``. A value that cannot be an id is not found without a query (a
    NUL byte, say, is an error on PostgreSQL rather than a miss)."""
    shaped = isinstance(notification_id, str) and ID_SHAPE.fullmatch(notification_id)
    row = Notification.objects.filter(id=notification_id).first() if shaped else None
    if row is None:
        raise NotFound(f"notification {notification_id} does not exist", notification_id=notification_id)
    return row
