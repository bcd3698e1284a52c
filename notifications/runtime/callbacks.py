"""``deliver_callbacks``: drain the callback outbox of ACKED / DISMISSED / TIMED_OUT events.

Enqueueing does not depend on the writing process's configuration: every ACKED, DISMISSED and
TIMED_OUT event is written with ``callback_pending`` true (``timeline.event``), so a web process
without ``UNS_CALLBACK_URL`` loses nothing. The destination is resolved by the process that
drains the outbox (``runtime.callback``, from ``UNS_CALLBACK_URL`` / ``UNS_CALLBACK_SECRET`` of
the worker). A worker with no destination closes each due row without sending it:
``callback_pending`` false, ``callback_attempts`` 0 and ``callback_error = NO_DESTINATION`` (the
record that it was never sent), counted as ``skipped``.

Attempts (at most ``MAX_CALLBACK_ATTEMPTS``, counted when claimed): a due row with fewer than 3
attempts is claimed with a fencing ``callback_token``, ``callback_until = now + lease`` and
``callback_attempts + 1`` in one committed transaction, before any I/O; so a worker stopped
mid-callback (even SIGKILL) has already counted its attempt, and the row is claimed again only
after the lease. A row whose third attempt was claimed and whose lease expired without an
answer (its worker died) is never claimed again: it gives up. The callback runs outside any
transaction and its result is written only if the token still matches.

The sender is the webhook channel's (``adapters.webhook.WebhookAdapter.post``): the pooled
client, the whole-request deadline, Standard Webhooks signing with ``UNS_CALLBACK_SECRET``
(``webhook-id`` = the event id, the same on every attempt), the same classification. A
retryable failure (408, 429, 5xx, timeout, transport error, or a callable that raised) waits
``max(CALLBACK_BACKOFF[n-1], min(Retry-After, UNS_RETRY_AFTER_MAX_SECONDS))``
(``core.transitions.retry_delay_seconds``, the channels' rule); a permanent one (other 4xx, 3xx) is
not retried. Giving up (permanent failure, third attempt failed, or third attempt lost) leaves
the event out of the outbox with its ``callback_error`` and writes ``CALLBACK_FAILED`` on the
notification's timeline in the same transaction (payload: ``event_id``, ``event_kind``,
``attempts``, ``reason`` = ``permanent_failure`` | ``attempts_exhausted`` | ``worker_lost``,
``error``, ``status_code``).
"""
import logging

from django.conf import settings
from django.db import transaction
from django.db.models import F

from core.keys import canonical_json, new_id
from core.transitions import retry_delay_seconds

from ..adapters.base import DeliveryResult
from ..adapters.webhook import WebhookAdapter, validate_url
from ..logformat import log_ids
from ..models import Event, Notification
from ..redaction import mask_string
from . import timeline

log = logging.getLogger("uns.callbacks")

MAX_CALLBACK_ATTEMPTS = 3
CALLBACK_BACKOFF = (5.0, 30.0, 120.0)
NO_DESTINATION = "not sent: no callback destination configured (UNS_CALLBACK_URL) on the worker that drained it"
WORKER_LOST = "the worker making the last attempt stopped before recording an answer (lease expired)"

# CALLBACK_FAILED reasons.
PERMANENT = "permanent_failure"
EXHAUSTED = "attempts_exhausted"
LOST = "worker_lost"


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
    """POSTs ``callback_body`` JSON to ``url`` through ``sender`` (a ``WebhookAdapter``: the
    webhook channel's pooled, deadline-bounded sender), signed with ``secret`` when given, with
    ``webhook-id`` = the event id. ``timeout``: seconds for the whole request (default
    ``UNS_WEBHOOK_TIMEOUT``). Returns the sender's ``DeliveryResult``; never raises for an
    HTTP failure. The secret is never logged or put into a result."""

    def __init__(self, url: str, *, secret: str = "", sender=None, timeout: float | None = None):
        self.url = validate_url(url)
        self._secret = secret or ""
        self.sender = sender if sender is not None else WebhookAdapter()
        self.timeout = timeout

    def __call__(self, body: dict) -> DeliveryResult:
        return self.sender.post(self.url, canonical_json(body), message_id=body["event_id"], secret=self._secret,
                                timeout=self.timeout, user_agent="UNS-callback/1")

    def __repr__(self) -> str:  # never the secret
        return f"HttpCallback({mask_string(self.url)!r}, signed={bool(self._secret)})"


def configured_callback(adapters: dict):
    """The callback this process sends with: an ``HttpCallback`` to ``UNS_CALLBACK_URL`` signed
    with ``UNS_CALLBACK_SECRET`` on ``adapters["webhook"]`` (the runtime's webhook adapter, so
    callbacks share its client), or None when ``UNS_CALLBACK_URL`` is unset or empty. Raises
    ``ValueError`` for a URL that is not http(s)."""
    url = getattr(settings, "UNS_CALLBACK_URL", None)
    if not url:
        return None
    sender = adapters.get("webhook")
    if not isinstance(sender, WebhookAdapter):
        sender = None
    return HttpCallback(url, secret=getattr(settings, "UNS_CALLBACK_SECRET", "") or "", sender=sender)


def _call(callback, body: dict) -> DeliveryResult:
    """Run ``callback(body)``: its ``DeliveryResult``; None is a success (a plain callable), an
    exception a retryable failure."""
    try:
        result = callback(body)
    except Exception as exc:  # a callable's failure must not lose the attempt's record
        return DeliveryResult(False, retryable=True, error=mask_string(f"{type(exc).__name__}: {exc}"))
    return DeliveryResult(True) if result is None else result


def _gave_up_event(ev: Event, *, attempts: int, reason: str, error: str | None, status_code, now: float) -> Event:
    return timeline.event(ev.notification_id, timeline.CALLBACK_FAILED, {
        "event_id": ev.id,
        "event_kind": ev.kind,
        "attempts": attempts,
        "reason": reason,
        "error": error,
        "status_code": status_code,
    }, now)


def _close_lost(runtime, now: float, limit: int) -> int:
    """Give up rows whose last permitted attempt was claimed and whose lease expired (their
    worker died mid-callback): fenced on the token, with CALLBACK_FAILED. Caller's transaction."""
    lost = list(Event.objects.select_for_update(skip_locked=True)
                .filter(callback_pending=True, callback_until__lte=now, callback_attempts__gte=MAX_CALLBACK_ATTEMPTS)
                .order_by("callback_until")[:limit])
    events = []
    for ev in lost:
        error = ev.callback_error or WORKER_LOST
        if Event.objects.filter(id=ev.id, callback_pending=True, callback_token=ev.callback_token).update(
                callback_pending=False, callback_token=None, callback_error=error[:2000]):
            events.append(_gave_up_event(ev, attempts=ev.callback_attempts, reason=LOST, error=error,
                                         status_code=None, now=now))
    timeline.insert_events(runtime, events)
    return len(events)


def deliver_callbacks(runtime, limit: int = 100) -> dict:
    """One pass over due outbox rows (``callback_until <= now``, oldest first, at most ``limit``).
    Returns ``{"delivered": n, "failed": n, "gave_up": n, "skipped": n}``: sent, failed and due
    again later, given up (CALLBACK_FAILED written), closed unsent for want of a destination.
    See the module doc for the claim, the attempt limit and the backoff."""
    counts = {"delivered": 0, "failed": 0, "gave_up": 0, "skipped": 0}
    now = runtime.clock()
    claimed = []
    with transaction.atomic():
        counts["gave_up"] += _close_lost(runtime, now, limit)
        due = list(
            Event.objects.select_for_update(skip_locked=True)
            .filter(callback_pending=True, callback_until__lte=now, callback_attempts__lt=MAX_CALLBACK_ATTEMPTS)
            .order_by("callback_until")[:limit]
        )
        for ev in due:
            fence = Event.objects.filter(id=ev.id, callback_pending=True, callback_token=ev.callback_token,
                                         callback_attempts=ev.callback_attempts)
            if runtime.callback is None:
                counts["skipped"] += fence.update(callback_pending=False, callback_token=None,
                                                  callback_error=NO_DESTINATION)
                continue
            token = new_id()
            if fence.update(callback_token=token, callback_until=now + runtime.lease_seconds,
                            callback_attempts=F("callback_attempts") + 1):
                ev.callback_token, ev.callback_attempts = token, ev.callback_attempts + 1
                claimed.append(ev)
    if counts["skipped"]:
        log.info("closed %d callback(s) unsent: no callback destination configured (UNS_CALLBACK_URL)",
                 counts["skipped"])
    rows = {n.id: n for n in Notification.objects.filter(id__in=[ev.notification_id for ev in claimed])}
    for ev in claimed:
        result = _call(runtime.callback, callback_body(ev, rows.get(ev.notification_id)))
        fence = Event.objects.filter(id=ev.id, callback_pending=True, callback_token=ev.callback_token)
        if result.success:
            fence.update(callback_pending=False, callback_error=None, callback_token=None)
            counts["delivered"] += 1
            continue
        error = (result.error or "callback failed")[:2000]
        permanent = not result.retryable
        done = permanent or ev.callback_attempts >= MAX_CALLBACK_ATTEMPTS
        later = runtime.clock()
        retry_at = later + retry_delay_seconds(
            backoff=CALLBACK_BACKOFF[min(ev.callback_attempts, len(CALLBACK_BACKOFF)) - 1],
            retry_after=None if permanent else result.retry_after,
            retry_after_max=runtime.retry_after_max_seconds)
        with transaction.atomic():
            won = fence.update(callback_pending=not done, callback_error=error, callback_until=retry_at,
                               callback_token=None)
            if won and done:
                timeline.insert_events(runtime, [_gave_up_event(
                    ev, attempts=ev.callback_attempts, reason=PERMANENT if permanent else EXHAUSTED, error=error,
                    status_code=result.metadata.get("status_code"), now=later)])
        if won:
            counts["gave_up" if done else "failed"] += 1
        log.warning("callback for event %s failed (attempt %s%s): %s", ev.id, ev.callback_attempts,
                    ", giving up" if done else "", error, extra=log_ids(ev.notification_id))
    return counts
