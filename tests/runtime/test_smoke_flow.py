import pytest

from notifications.models import Event

pytestmark = pytest.mark.django_db


def test_accept_dispatch_ack_flow(rt, clock, channel):
    res = rt.accept("alice", {"source": "svc", "title": "disk full", "channels": ["ops-hook"], "require_ack": True})
    assert res.created and res.notification.status == "PENDING"
    reports = rt.dispatch()
    assert [r.status for r in reports] == ["DELIVERED"]
    row = rt.acknowledge(res.notification.id, "bob")
    assert row.ack_status == "ACKED" and row.actor == "bob"
    kinds = list(Event.objects.filter(notification_id=row.id).order_by("at", "id").values_list("kind", flat=True))
    assert set(kinds) == {"ACCEPTED", "ATTEMPT_STARTED", "CHANNEL_ATTEMPT_STARTED", "CHANNEL_ATTEMPT_RESULT",
                          "DELIVERY_RESULT", "ACKED"}
