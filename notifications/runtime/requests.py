"""What the response verbs check about a request before they act, in one place: the client's ``request_id`` (idempotent retries),
the earlier event such a retry wrote, and the Conflict for a row not awaiting a response."""

from core import codes
from core.errors import Conflict, InvalidRequest
from core.transitions import TIMED_OUT

from ..models import Event, Notification

MAX_REQUEST_ID_LENGTH = 128
# The actor of a time-out (``responses.time_out``) and of the automatic escalation it starts.
TIMEOUT_ACTOR = "uns-timeout-worker"


def check_request_id(request_id, *, required: bool = False) -> str | None:
    """Return ``request_id`` (None when absent and not ``required``) unless it is not a string of
    1..128 characters: ``InvalidRequest`` (field ``request_id``). The one rule for the runtime's
    verbs (HTTP's ``Idempotency-Key``) and the WebSocket frames' ``request_id``."""
    if request_id is None and not required:
        return None
    if not isinstance(request_id, str) or not 0 < len(request_id) <= MAX_REQUEST_ID_LENGTH:
        message = f"must be a string of 1..{MAX_REQUEST_ID_LENGTH} characters"
        raise InvalidRequest(f"request_id {message}", errors=[{"field": "request_id", "message": message}])
    return request_id


def earlier(notification_id: str, kind: str, actor: str, request_id: str | None) -> Event | None:
    """The event an earlier call with the same ``request_id`` (and actor) wrote, if any."""
    if request_id is None:
        return None
    return (Event.objects.filter(notification_id=notification_id, kind=kind, payload__request_id=request_id,
                                 payload__actor=actor).order_by("at", "id").first())


def not_awaiting(row: Notification, verb: str):
    """The Conflict for a row whose ack state forbids ``verb`` (codes as in ``acknowledge``)."""
    if not row.notification.get("require_ack"):
        return Conflict("this notification does not require acknowledgement", code=codes.ACK_NOT_REQUIRED)
    if row.ack_status is None:
        return Conflict("this notification is not awaiting acknowledgement (not delivered yet)",
                        code=codes.NOT_AWAITING_ACK, status=row.status)
    if row.ack_status == TIMED_OUT:
        return Conflict(f"the acknowledgement deadline passed; a timed-out notification cannot be {verb}",
                        code=codes.ACK_TIMED_OUT, ack_status=row.ack_status)
    return Conflict(f"already {row.ack_status}; a settled notification cannot be {verb}",
                    code=codes.ACK_CONFLICT, ack_status=row.ack_status, actor=row.actor)
