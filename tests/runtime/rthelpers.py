"""Plain helpers for the runtime behaviour tests (import as ``from rthelpers import ...``)."""
from notifications.adapters.base import DeliveryResult
from notifications.models import AckAuditRecord, Dedup, Event, Notification, NotificationAuditRecord, PeopleAuditRecord


def timeline(notification_id, kind=None):
    """The events of one notification in timeline order ``(at, id)``, optionally of one kind."""
    qs = Event.objects.filter(notification_id=notification_id)
    if kind is not None:
        qs = qs.filter(kind=kind)
    return list(qs.order_by("at", "id"))


def kinds(notification_id):
    return [e.kind for e in timeline(notification_id)]


def only_event(notification_id, kind):
    """The single event of ``kind`` on the notification (fails when there are none or several)."""
    found = timeline(notification_id, kind)
    assert len(found) == 1, f"expected exactly one {kind} on {notification_id}, got {[e.kind for e in found]}"
    return found[0]


def row(notification_id) -> Notification:
    return Notification.objects.get(id=notification_id)


def counts():
    """Row counts of every table a transition writes, to prove that something wrote nothing."""
    return {
        "notifications": Notification.objects.count(),
        "events": Event.objects.count(),
        "dedup": Dedup.objects.count(),
        "delivery_audit": NotificationAuditRecord.objects.count(),
        "ack_audit": AckAuditRecord.objects.count(),
        "people_audit": PeopleAuditRecord.objects.count(),
    }


def request(**fields):
    """A valid SendNotificationRequest for the ``ops-hook`` channel, with ``fields`` overriding."""
    base = {"source": "billing", "title": "disk full", "channels": ["ops-hook"]}
    base.update(fields)
    return base


def fail(retryable=True, error="HTTP 503"):
    """A failed provider observation (same as ``tests/conftest.fail``, importable by name here:
    two ``conftest`` modules make ``from conftest import`` ambiguous)."""
    return DeliveryResult(False, retryable=retryable, error=error)


def people_audit(**filters):
    """The people-audit rows (``uns_people_audit_records``) matching ``filters``, oldest first."""
    return list(PeopleAuditRecord.objects.filter(**filters).order_by("at", "id"))
