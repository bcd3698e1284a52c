"""``deliver_callbacks``: drain the callback outbox of ACKED / DISMISSED / TIMED_OUT events.

Each pending event is claimed with a fencing ``callback_token`` and ``callback_until = now +
lease`` (committed), the callback runs outside any transaction, and the result is written only
if the token still matches. A failure backs off (``CALLBACK_BACKOFF`` seconds per attempt);
after ``MAX_CALLBACK_ATTEMPTS`` the event leaves the outbox with its last ``callback_error``.
"""
import logging

import httpx
from django.db import transaction
from django.db.models import F

from ..logformat import log_ids
from ..models import Event, Notification
from .keys import canonical_json, new_id

log = logging.getLogger("uns.callbacks")

MAX_CALLBACK_ATTEMPTS = 3
CALLBACK_BACKOFF = (5.0, 30.0, 120.0)


def callback_body(event: Event, notification: Notification | None) -> dict:
    """What a callback receives: the event and the notification's response state."""
    return {
        "event_id": event.id,
        "kind": event.kind,
        "at": event.at,
        "payload": event.payload,
        "notification": None if notification is None else {
            "id": notification.id,
            "status": notification.status,
            "ack_status": notification.ack_status,
            "actor": notification.actor,
            "responded_at": notification.responded_at,
            "source": notification.notification.get("source"),
            "title": notification.notification.get("title"),
        },
    }


class HttpCallback:
    """POSTs ``callback_body`` JSON to ``url``; any non-2xx or transport error raises."""

    def __init__(self, url: str, timeout: float = 10.0, transport=None):
        self.url, self.timeout, self.transport = url, timeout, transport

    def __call__(self, body: dict) -> None:
        with httpx.Client(timeout=self.timeout, transport=self.transport) as client:
            response = client.post(self.url, content=canonical_json(body),
                                   headers={"content-type": "application/json", "user-agent": "UNS-callback/1"})
            response.raise_for_status()


def deliver_callbacks(runtime, limit: int = 100) -> dict:
    """One pass over due outbox rows. Returns ``{"delivered": n, "failed": n, "gave_up": n}``."""
    counts = {"delivered": 0, "failed": 0, "gave_up": 0}
    if runtime.callback is None:
        return counts
    now = runtime.clock()
    claimed = []
    with transaction.atomic():
        due = list(
            Event.objects.select_for_update(skip_locked=True)
            .filter(callback_pending=True, callback_until__lte=now)
            .order_by("callback_until")[:limit]
        )
        for ev in due:
            token = new_id()
            if Event.objects.filter(id=ev.id, callback_pending=True, callback_token=ev.callback_token).update(
                callback_token=token, callback_until=now + runtime.lease_seconds,
                callback_attempts=F("callback_attempts") + 1,
            ):
                ev.callback_token, ev.callback_attempts = token, ev.callback_attempts + 1
                claimed.append(ev)
    rows = {n.id: n for n in Notification.objects.filter(id__in=[ev.notification_id for ev in claimed])}
    for ev in claimed:
        try:
            runtime.callback(callback_body(ev, rows.get(ev.notification_id)))
        except Exception as exc:
            error = f"{type(exc).__name__}: {exc}"[:2000]
            done = ev.callback_attempts >= MAX_CALLBACK_ATTEMPTS
            retry_at = runtime.clock() + CALLBACK_BACKOFF[min(ev.callback_attempts, len(CALLBACK_BACKOFF)) - 1]
            Event.objects.filter(id=ev.id, callback_token=ev.callback_token).update(
                callback_pending=not done, callback_error=error, callback_until=retry_at, callback_token=None,
            )
            counts["gave_up" if done else "failed"] += 1
            log.warning("callback for event %s failed (attempt %s): %s", ev.id, ev.callback_attempts, error,
                        extra=log_ids(ev.notification_id))
        else:
            Event.objects.filter(id=ev.id, callback_token=ev.callback_token).update(
                callback_pending=False, callback_error=None, callback_token=None,
            )
            counts["delivered"] += 1
    return counts
