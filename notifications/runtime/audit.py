"""Builders for the append-only audit rows a transition writes in its own transaction:
``notification_audit_records`` (one per settled delivery attempt) and ``ack_audit_records``
(one per acknowledgement transition). Callers bulk-insert what these return."""

from core.keys import new_id

from ..models import AckAuditRecord, NotificationAuditRecord


def delivery_audit(row, *, status: str, outcome: dict, at: float) -> NotificationAuditRecord:
    """An unsaved ``notification_audit_records`` row for one settled attempt of ``row`` (a
    ``Notification``, or anything with its ``id`` and ``notification``)."""
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
