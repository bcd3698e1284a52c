"""The hand-written hot-path statements (``rows.quoted_columns`` / ``from_values`` / ``insert``)
store and load exactly what the ORM does."""
import pytest
from django.db import connection

from notifications.models import Event, Notification
from notifications.runtime import rows, timeline

pytestmark = pytest.mark.django_db


def _fields(obj):
    return {f.attname: getattr(obj, f.attname) for f in type(obj)._meta.concrete_fields}


def test_get_loads_the_row_the_orm_loads(rt):
    nid = rt.accept("alice", {"source": "s", "title": "t", "metadata": {"k": [1, "two"]},
                              "dedup_key": "d"}).notification.id
    raw, orm = rows.get(nid), Notification.objects.get(id=nid)
    assert _fields(raw) == _fields(orm)
    assert raw._state.adding is False and raw._state.db == "default"
    raw.save(update_fields=["outcome"])  # a loaded row saves as an UPDATE, not an INSERT


def test_insert_stores_what_bulk_create_stores_past_one_batch():
    many = [timeline.event("n-%d" % i, timeline.ACCEPTED, {"i": i, "nested": {"x": None}}, 1.5 + i)
            for i in range(connection.ops.bulk_batch_size(Event._meta.concrete_fields, [None] * 2000) + 7)]
    rows.insert(Event, many)
    stored = {e.id: e for e in Event.objects.filter(id__in=[e.id for e in many])}
    assert len(stored) == len(many)
    for event in many:
        assert _fields(stored[event.id]) == _fields(event)
        assert event._state.adding is False
