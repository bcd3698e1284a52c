"""Concurrent callback workers on PostgreSQL: racing ``deliver_callbacks`` passes (each on its own
connection) claim every due outbox row once (``FOR UPDATE SKIP LOCKED`` plus the conditional
claim), so each response event is called back exactly once, with one counted attempt."""
import threading

import pytest

from notifications.models import Event
from notifications.runtime import Runtime

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def test_racing_callback_workers_send_each_event_once(rt, channel, clock, race):
    ids = []
    for i in range(20):
        nid = rt.accept("alice", {"source": "pager", "title": f"page {i}", "channels": ["ops-hook"],
                                  "require_ack": True}).notification.id
        ids.append(nid)
    rt.dispatch()
    for nid in ids:
        rt.acknowledge(nid, "bob")
    sent, lock = [], threading.Lock()

    def record(body):
        with lock:
            sent.append(body["event_id"])

    def drain(_i):
        worker = Runtime(clock=clock, adapters={}, callback=record, rng=lambda: 0.5)
        return worker.deliver_callbacks(limit=7)

    results, pids = race(6, drain)
    assert len(set(pids)) == 6
    events = Event.objects.filter(kind="ACKED")
    assert len(sent) == len(set(sent))  # no event called back twice
    assert sum(r["delivered"] for r in results) == len(sent)
    leftover = Runtime(clock=clock, adapters={}, callback=record).deliver_callbacks()
    assert sorted(sent) == sorted(e.id for e in events) and leftover["delivered"] == 20 - sum(
        r["delivered"] for r in results)
    assert set(events.values_list("callback_attempts", flat=True)) == {1}
    assert not events.filter(callback_pending=True).exists()
