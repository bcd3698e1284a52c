"""Builders for the append-only rows a transition writes in its own transaction:
``uns_events`` (timeline and callback outbox), ``notification_audit_records`` and
``ack_audit_records``. Callers bulk-insert what these return; events go through
``insert_events`` so that every committed event is also published live."""
import logging

from django.db import transaction

from ..models import AckAuditRecord, Event, NotificationAuditRecord
from .identity import new_event_id, new_id

# Event kinds of the support reference, section 3.
ACCEPTED = "ACCEPTED"
DEDUP_LINKED = "DEDUP_LINKED"
ATTEMPT_STARTED = "ATTEMPT_STARTED"
CHANNEL_ATTEMPT_STARTED = "CHANNEL_ATTEMPT_STARTED"
CHANNEL_ATTEMPT_RESULT = "CHANNEL_ATTEMPT_RESULT"
LEASE_LOST = "LEASE_LOST"
DELIVERY_RESULT = "DELIVERY_RESULT"
OBLIGATION_HANDED_OFF = "OBLIGATION_HANDED_OFF"
DEDUP_SATISFIED = "DEDUP_SATISFIED"
DEDUP_OWNER_PROMOTED = "DEDUP_OWNER_PROMOTED"
DEDUP_RELINKED = "DEDUP_RELINKED"
ACKED = "ACKED"
DISMISSED = "DISMISSED"
TIMED_OUT = "TIMED_OUT"
REPLAY_REQUESTED = "REPLAY_REQUESTED"
FAILURE_RESOLVED = "FAILURE_RESOLVED"
# Response verbs beyond the reference's catalog (issue 4): snooze and escalation.
SNOOZED = "SNOOZED"
ESCALATED = "ESCALATED"
ESCALATION_FAILED = "ESCALATION_FAILED"

CALLBACK_KINDS = frozenset({ACKED, DISMISSED, TIMED_OUT})

log = logging.getLogger("uns.events")


def insert_events(runtime, events: list[Event]) -> list[Event]:
    """Insert ``uns_events`` rows and, once the enclosing transaction commits (at once in
    autocommit), hand them to ``runtime.publish`` (the live push; see ``notifications.live``).
    Every runtime event insert goes through here, so no committed event skips the live stream
    and no rolled-back one reaches it.

    Publishing is best effort (at most once): the rows are the durable timeline and a
    subscriber catches up from them. A failing publisher is logged and never fails the write.
    """
    if not events:
        return events
    Event.objects.bulk_create(events)
    publish = getattr(runtime, "publish", None)
    if publish is not None:
        transaction.on_commit(lambda: _publish(publish, events))
    return events


def _publish(publish, events: list[Event]) -> None:
    try:
        publish(events)
    except Exception:  # the live push must never undo or fail a committed transition
        log.exception("publishing %d committed event(s) failed", len(events))


def event(notification_id: str, kind: str, payload: dict, at: float, *, callbacks_enabled: bool = False) -> Event:
    """An unsaved ``uns_events`` row. ACKED / DISMISSED / TIMED_OUT join the callback outbox
    (``callback_pending``) when the runtime has a callback; ``callback_until`` starts at ``at``."""
    return Event(
        id=new_event_id(),
        notification_id=notification_id,
        kind=kind,
        at=at,
        payload=payload,
        callback_pending=callbacks_enabled and kind in CALLBACK_KINDS,
        callback_until=at,
        callback_token=None,
        callback_attempts=0,
        callback_error=None,
    )


def delivery_audit(row, *, status: str, outcome: dict, at: float) -> NotificationAuditRecord:
    """An unsaved ``notification_audit_records`` row for one settled attempt of ``row``."""
    n = row.notification
    resolution = n["metadata"]["uns_resolution"]
    return NotificationAuditRecord(
        id=new_id(),
        notification_id=row.id,
        notification_type=n.get("intent") or "notification",
        status=status,
        channels_attempted=outcome.get("channels_attempted", []),
        channels_succeeded=outcome.get("channels_succeeded", []),
        channels_failed=outcome.get("channels_failed", []),
        error_message=outcome.get("error_message"),
        intent=n.get("intent"),
        delivery_mode=resolution["effective"]["delivery_mode"],
        autonomy_mode=n.get("autonomy_mode"),
        agent_id=n.get("agent_id"),
        policy_config_id=resolution["policy_id"],
        policy_config_hash=resolution["policy_hash"],
        delivered_at=at if status == "DELIVERED" else None,
        created_at=at,
    )


def ack_audit(notification_id: str, *, old: str | None, new: str, actor: str, at: float, metadata) -> AckAuditRecord:
    """An unsaved ``ack_audit_records`` row."""
    return AckAuditRecord(
        id=new_id(),
        notification_id=notification_id,
        old_status=old,
        new_status=new,
        acked_by=actor,
        acked_at=at,
        ack_metadata=metadata,
        created_at=at,
    )
