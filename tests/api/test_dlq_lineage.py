"""Replay over HTTP follows the whole successor chain: L -> F1 -> F2 (DELIVERED) is a 409 for L
long after the window expired, and the DLQ listing names the same blocker."""
import pytest

from notifications.adapters.base import DeliveryResult
from notifications.models import Notification

from .helpers import assert_problem, row_counts, submit

pytestmark = pytest.mark.django_db

PERMANENT = DeliveryResult(False, retryable=False, error="HTTP 404")


def test_replay_of_a_leader_whose_later_successor_delivered_is_a_409(api_rt, clock, webhook, channel, api):
    producer = api(groups=("producer",), name="billing-svc")
    operator = api(groups=("operator",), name="ops-olga")
    ids = []
    for _ in range(3):
        ids.append(submit(producer, dedup_key="disk-full")["id"])
        clock.advance(1)
    leader, f1, f2 = ids
    webhook.script.extend([PERMANENT, PERMANENT])
    api_rt.dispatch()  # L fails: F1 promoted
    api_rt.dispatch()  # F1 fails: F2 promoted
    [report] = api_rt.dispatch()
    assert (report.id, report.status) == (f2, "DELIVERED")
    clock.advance(3600)  # the suppression window is long expired
    sent = len(webhook.calls)

    before = row_counts()
    body = assert_problem(operator.post(f"/api/v1/dlq/{leader}/replay"), 409, "replay_blocked")
    assert (body["successor_id"], body["successor_status"]) == (f2, "DELIVERED")
    assert row_counts() == before
    assert api_rt.dispatch() == []  # nothing is sent again
    assert len(webhook.calls) == sent

    items = {i["id"]: i for i in operator.get("/api/v1/dlq").json()["items"]}
    assert set(items) == {leader, f1}
    for nid in (leader, f1):
        assert items[nid]["replay_blocked"] is True
        assert items[nid]["replay_blocker"] == {"code": "replay_blocked", "successor_id": f2,
                                                 "successor_status": "DELIVERED"}

    Notification.objects.filter(id=f2).delete()
    body = assert_problem(operator.post(f"/api/v1/dlq/{leader}/replay"), 409,
                          "replay_lineage_unknown")
    assert (body["successor_id"], body["successor_status"]) == (f2, None)
