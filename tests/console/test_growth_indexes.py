"""The indexes the console's lists read as the tables grow (``bench/run.py``'s growth
phase): the DLQ by failure time (``ix_uns_dlq_failed`` over ``uns_notifications.failed_at``, which
the settle that dead-letters a row writes) and the people audit newest first under each of its
filters (``ix_people_audit_*``). Each list still returns the right rows in the right order, and
its query's plan names the index (PostgreSQL's planner with sequential scans off, since the
tables here are tiny; SQLite's too for the full index)."""
import importlib

import pytest
from django.db import connection, transaction
from django.http import QueryDict

from notifications.adapters.base import DeliveryResult
from notifications import selectors
from notifications.models import Notification, NotificationAuditRecord, PeopleAuditRecord
from notifications.runtime import dlq, lists

pytestmark = pytest.mark.django_db


def _plan(qs) -> str:
    with transaction.atomic():
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SET LOCAL enable_seqscan = off")
        return qs.explain()


def walk(client, path: str) -> list[str]:
    ids, cursor = [], None
    while True:
        page = client.get(path + (f"&cursor={cursor}" if cursor else "")).json()
        ids += [i["id"] for i in page["items"]]
        cursor = page["next"]
        if not cursor:
            return ids


@pytest.fixture
def dead(rt, clock, webhook, channel):
    """Five dead letters accepted a second apart that failed one at a time in acceptance order,
    then the first one replayed and failed again last: failure order ids[1..4], ids[0]."""
    webhook.default = DeliveryResult(False, retryable=False, error="HTTP 410 gone")
    ids = []
    for i in range(5):
        ids.append(rt.accept("svc", {"source": "db", "title": f"gone {i}", "channels": ["ops-hook"]}).notification.id)
        clock.advance(1)
    for _ in ids:
        rt.dispatch(limit=1)  # the oldest due first
        clock.advance(1)
    rt.replay(ids[0], "oscar")
    clock.advance(1)
    rt.dispatch()
    return ids


def _failed_audit(nid: str) -> float:
    return (NotificationAuditRecord.objects.filter(notification_id=nid, status="FAILED").order_by("-created_at")
            .values_list("created_at", flat=True).first())


def test_the_settle_writes_failed_at_the_time_of_its_failed_audit_row(dead):
    rows = {n.id: n for n in Notification.objects.filter(id__in=dead)}
    assert all(rows[nid].dead_letter and rows[nid].failed_at == _failed_audit(nid) for nid in dead)
    assert rows[dead[0]].failed_at > rows[dead[4]].failed_at  # the replayed one: its second failure
    assert NotificationAuditRecord.objects.filter(notification_id=dead[0], status="FAILED").count() == 2


def test_the_dlq_by_failure_time_pages_in_order_both_ways(ui, dead, clock):
    client = ui()
    expected = [*dead[1:], dead[0]]
    assert walk(client, "/ui/dlq?limit=2&sort=failed") == expected
    assert walk(client, "/ui/dlq?limit=2&sort=-failed") == list(reversed(expected))
    assert walk(client, "/ui/dlq?limit=2") == dead  # acceptance order, unchanged
    body = client.get("/ui/dlq?sort=failed&limit=1").json()
    assert body["items"][0]["failed_at"] == _failed_audit(dead[1])
    assert body["items"][0]["age_seconds"] == pytest.approx(clock.now - _failed_audit(dead[1]))
    assert dlq.oldest_dead_letter_failed_at() == _failed_audit(dead[1])


# SQLite takes a partial index only when the query spells the index's condition with literals,
# and Django binds them as parameters; the scaled mode (PostgreSQL) is where the DLQ grows.
@pytest.mark.postgres
def test_failure_order_and_oldest_failure_read_the_failure_index(dead):
    qs = lists.dead_letters()
    assert "ix_uns_dlq_failed" in _plan(qs.order_by("failed_at", "id")[:3])
    assert "ix_uns_dlq_failed" in _plan(qs.order_by("-failed_at", "-id")[:3])
    assert "ix_uns_dlq_failed" in _plan(lists.dead_letter_rows().filter(failed_at__isnull=False)
                                        .order_by("failed_at", "id").values("failed_at")[:1])


def test_the_migration_fills_failed_at_from_the_newest_failed_audit_row(dead):
    backfill = importlib.import_module("notifications.migrations.0012_dlq_failed_at").BACKFILL
    want = dict(Notification.objects.filter(id__in=dead).values_list("id", "failed_at"))
    Notification.objects.update(failed_at=None)
    with connection.cursor() as cursor:
        cursor.execute(backfill)
    assert dict(Notification.objects.filter(id__in=dead).values_list("id", "failed_at")) == want
    assert not Notification.objects.exclude(status="FAILED").filter(failed_at__isnull=False).exists()


AUDIT_SHAPES = {
    # filter -> the index its page must be read from
    "": "ix_people_audit_at",
    "actor=ana": "ix_people_audit_actor",
    "action=ACKED": "ix_people_audit_action",
    "object_type=notification": "ix_people_audit_type",
    "object_type=channel&object_id=pager": "ix_people_audit_object",
    "bulk_action_id=b": "ix_people_audit_bulk",
}


def test_the_people_audit_reads_each_filter_newest_first_from_its_index(ui, rt, clock, channel):
    ids = []
    for i in range(4):
        nid = rt.accept("svc", {"source": "s", "title": f"ack {i}", "channels": ["console"],
                                "require_ack": True}).notification.id
        rt.dispatch()
        ids.append(nid)
    for nid in ids[:3]:
        rt.acknowledge(nid, "ana")  # the first three at the same time: the id breaks the tie
    clock.advance(1)
    rt.acknowledge(ids[3], "ana")
    rows = list(PeopleAuditRecord.objects.order_by("-at", "-id").values_list("object_id", flat=True))
    assert rows[0] == ids[3] and sorted(rows[1:]) == sorted(ids[:3])
    assert [i["object_id"] for i in ui().get("/ui/audit?action=ACKED&limit=100").json()["items"]] == rows
    # SQLite names the index of each filter shape. PostgreSQL, on a table this small, may pick
    # any of them that reads the page in order (no sort of the rows): the bench's growth phase
    # shows each shape's own index at 10 k and 1 M rows.
    exact = connection.vendor == "sqlite"
    for query, index in AUDIT_SHAPES.items():
        filters, _ = selectors.parse_audit_query(QueryDict(query))
        for shape in (filters, {**filters, "since": 1.0, "until": 2e9}):
            plan = _plan(selectors.audit_rows(shape).order_by("-at", "-id")[:101])
            assert (index if exact else "ix_people_audit_") in plan, (query, shape, plan)
            assert "Sort" not in plan and "TEMP B-TREE" not in plan, (query, shape, plan)
