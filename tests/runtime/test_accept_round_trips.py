"""Accept in few statements without loosening a rule: what one accept sends to the
database once this process has verified the current snapshot, and the checks the folded
statement still makes (a channel disabled after the snapshot was cached is refused)."""
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from notifications.models import Channel, Event, Notification
from notifications.runtime import UnknownChannel
from policies import resolution

pytestmark = pytest.mark.django_db


def req(**fields):
    return {"source": "svc", "title": "disk full", **fields}


def _statements(fn):
    with CaptureQueriesContext(connection) as queries:
        result = fn()
    return result, [q["sql"] for q in queries if q["sql"].split(None, 1)[0].upper() not in
                    ("BEGIN", "COMMIT", "SAVEPOINT", "RELEASE")]


def test_a_new_leader_is_four_statements_and_a_repeat_one(rt, channel):
    rt.accept("alice", req(title="warm"))  # bootstraps and verifies the snapshot in this process
    first, sql = _statements(lambda: rt.accept("alice", req(channels=["ops-hook"], idempotency_key="k")))
    assert first.created
    assert len(sql) == 4, sql
    lock, insert, events, rollup = sql
    assert "notification_policy_revisions" in lock and "notification_policy_snapshots" in lock
    assert "uns_channels" in lock and "uns_notifications" in lock  # channel check and key lookup folded in
    if connection.vendor == "postgresql":
        assert "FOR SHARE OF r" in lock
    assert insert.startswith("INSERT INTO uns_notifications") and "ON CONFLICT (key) DO NOTHING" in insert
    assert "uns_events" in events
    assert rollup.startswith("INSERT INTO uns_series_rollups")  # the charts' counters (runtime.series)

    again, sql = _statements(lambda: rt.accept("alice", req(channels=["ops-hook"], idempotency_key="k")))
    assert not again.created and again.notification.id == first.notification.id
    assert len(sql) == 1, sql
    assert again.notification.notification == first.notification.notification  # the row, converted as the ORM does


def test_the_policy_channels_are_checked_in_the_locked_statement_when_none_are_named(rt):
    rt.accept("alice", req(title="warm"))
    _, sql = _statements(lambda: rt.accept("alice", req(title="second")))
    assert len(sql) == 4, sql
    assert "uns_channels" in sql[0]


def test_a_channel_disabled_after_the_snapshot_was_cached_is_refused(rt, channel):
    rt.accept("alice", req(title="warm"))  # caches the snapshot naming ``console``
    assert resolution.cached_current() is not None
    rt.accept("alice", req(channels=["ops-hook"]))
    Channel.objects.filter(name="console").update(enabled=False)
    Channel.objects.filter(name="ops-hook").update(enabled=False)
    before = (Notification.objects.count(), Event.objects.count())
    with pytest.raises(UnknownChannel):
        rt.accept("alice", req(title="policy default channel"))
    with pytest.raises(UnknownChannel) as err:
        rt.accept("alice", req(channels=["ops-hook"]))
    assert err.value.extra["errors"] == [{"field": "channels", "message": "not configured: ['ops-hook']"}]
    assert (Notification.objects.count(), Event.objects.count()) == before


def test_a_dedup_leader_writes_its_window_in_one_upsert_and_a_follower_reads_the_owner(rt):
    rt.accept("alice", req(title="warm"))
    leader, sql = _statements(lambda: rt.accept("alice", req(dedup_key="d")))
    assert [s for s in sql if "uns_dedup" in s and not s.startswith("SELECT")] == [sql[1]]
    assert sql[1].startswith("INSERT INTO uns_dedup") and "DO UPDATE" in sql[1]
    assert len(sql) == 5, sql  # ... and the events' time-series rollup
    follower, sql = _statements(lambda: rt.accept("alice", req(dedup_key="d", title="again")))
    assert follower.notification.dedup_owner_id == leader.notification.id
    assert len(sql) == 6, sql  # + the owner's status, a new statement after the window lock (events: one INSERT)


def test_a_repeat_is_answered_while_the_policy_snapshot_is_unusable(rt):
    from notifications.runtime import Conflict, PolicyUnavailable
    from policies.models import PolicySnapshot

    first = rt.accept("alice", req(idempotency_key="k"))
    PolicySnapshot.objects.all().delete()
    again = rt.accept("alice", req(idempotency_key="k"))
    assert not again.created and again.notification.id == first.notification.id
    with pytest.raises(Conflict):
        rt.accept("alice", req(idempotency_key="k", title="another request"))
    with pytest.raises(PolicyUnavailable):
        rt.accept("alice", req(idempotency_key="new"))
