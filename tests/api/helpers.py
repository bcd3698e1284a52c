"""Helpers shared by the API tests: row counters for "nothing half-written" checks, the problem
details assertion, and drivers that take a notification to a given state."""
from core.codes import CATALOG
from notifications.models import AckAuditRecord, Dedup, Event, Notification, NotificationAuditRecord

PROBLEM = "application/problem+json"


def row_counts() -> dict:
    """Rows in every table a write path touches."""
    return {
        "uns_notifications": Notification.objects.count(),
        "uns_events": Event.objects.count(),
        "uns_dedup": Dedup.objects.count(),
        "notification_audit_records": NotificationAuditRecord.objects.count(),
        "ack_audit_records": AckAuditRecord.objects.count(),
    }


def assert_problem(response, status: int, code: str) -> dict:
    """``response`` is RFC 9457 problem details with ``status`` and the stable ``code``."""
    assert response.status_code == status, response.content
    assert response["Content-Type"].startswith(PROBLEM), response["Content-Type"]
    body = response.json()
    assert body["status"] == status
    assert body["code"] == code, body
    assert body["type"] == f"urn:uns:problem:{code}"
    assert isinstance(body["title"], str) and body["title"]
    if code in CATALOG:  # one title per code, whichever layer refused (DRF's class name never leaks)
        assert body["title"] == CATALOG[code].title, body
    assert isinstance(body["detail"], str) and body["detail"]
    return body


def submit(client, **fields) -> dict:
    """POST a valid notification (overridable fields); returns the 202/200 body."""
    body = {"source": "billing", "title": "card declined", "channels": ["ops-hook"], **fields}
    response = client.post("/api/v1/notifications", body, format="json")
    assert response.status_code in (200, 202), response.content
    return response.json()


def drive_to_dlq(rt, clock, webhook, client, **fields) -> str:
    """Submit a notification whose every attempt fails retryably until it is dead-lettered."""
    from notifications.adapters.base import DeliveryResult

    webhook.default = DeliveryResult(False, retryable=True, error="HTTP 503")
    nid = submit(client, **fields)["id"]
    exhaust(rt, clock, webhook, nid)
    return nid


def exhaust(rt, clock, webhook, nid: str) -> float:
    """Fail every attempt of ``nid`` retryably, an hour apart, until it is dead-lettered; then
    the webhook succeeds again. Returns the time of the dead-lettering settle (epoch seconds)."""
    from notifications.adapters.base import DeliveryResult

    webhook.default = DeliveryResult(False, retryable=True, error="HTTP 503")
    for _ in range(20):
        rt.dispatch()
        row = Notification.objects.get(id=nid)
        if row.status != "PENDING":
            break
        clock.advance(3600)
    webhook.default = DeliveryResult(True, message_id="fake")
    row = Notification.objects.get(id=nid)
    assert (row.status, row.dead_letter) == ("FAILED", True)
    return clock.now
