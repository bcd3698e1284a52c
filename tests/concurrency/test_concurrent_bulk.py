"""Bulk actions under real concurrency on PostgreSQL (real threads, one connection each, one
barrier): each item is settled exactly once however many runs of the same bulk action race,
and when two bulk actions and single actions race over the same dead letters, each
notification takes exactly one transition and the per-item results say who won."""
import pytest

from notifications.models import BulkActionItem, Event, Notification
from notifications.runtime import Conflict
from notifications.adapters.base import DeliveryResult

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

N = 6


def dead_letters(rt, webhook, n, **fields):
    """``n`` dead letters accepted a millisecond apart (list order = acceptance order)."""
    ids = []
    for i in range(n):
        ids.append(rt.accept("alice", {"source": "billing", "title": f"refused {i}", "channels": ["ops-hook"],
                                       **fields}).notification.id)
        rt.clock.advance(0.001)
    webhook.default = DeliveryResult(False, retryable=False, error="HTTP 410 gone")
    while rt.dispatch():
        pass
    assert Notification.objects.filter(id__in=ids, dead_letter=True).count() == n
    return ids


def test_racing_runs_of_one_bulk_settle_each_item_once(rt, clock, webhook, channel, race):
    ids = dead_letters(rt, webhook, 40)
    bulk = rt.create_bulk("olga", {"action": "replay", "expected": 40})

    results, pids = race(N, lambda i: rt.run_bulk(bulk.id, f"op-{i}", 10))
    assert len(set(pids)) == N
    # the racing runs partition the items (SKIP LOCKED): no item is in two runs' results
    settled = [r["notification_id"] for out in results for r in out["results"]]
    assert len(settled) == len(set(settled))
    while rt.run_bulk(bulk.id, "olga")["state"] != "DONE":
        pass
    assert BulkActionItem.objects.filter(bulk=bulk, result="settled").count() == 40
    for nid in ids:
        assert Event.objects.filter(notification_id=nid, kind="REPLAY_REQUESTED").count() == 1
    assert Notification.objects.filter(id__in=ids, status="PENDING", cycle=2).count() == 40


def test_two_bulks_and_single_actions_race_each_notification_moves_once(rt, clock, webhook, channel, race):
    ids = dead_letters(rt, webhook, 30)
    replays = rt.create_bulk("olga", {"action": "replay", "expected": 30})
    resolves = rt.create_bulk("omar", {"action": "resolve", "expected": 30})

    def work(i):
        if i == 0:
            return ("bulk", [rt.run_bulk(replays.id, "olga", 100)])
        if i == 1:
            return ("bulk", [rt.run_bulk(resolves.id, "omar", 100)])
        won = []
        for nid in ids[i::4]:  # single replays by hand, racing the bulk actions
            try:
                rt.replay(nid, f"hand-{i}")
                won.append(nid)
            except Conflict:
                pass
        return ("single", won)

    results, pids = race(4, work)
    assert len(set(pids)) == 4
    single_wins = {nid for kind, out in results if kind == "single" for nid in out}
    by_result = {}
    for bulk in (replays, resolves):
        for item in BulkActionItem.objects.filter(bulk=bulk):
            assert item.result in ("settled", "refused")
            if item.result == "settled":
                by_result.setdefault(item.notification_id, []).append(bulk.action)
            else:
                assert item.code in ("not_dead_lettered", "concurrent_change"), item.code
    for nid in ids:
        replayed = Event.objects.filter(notification_id=nid, kind="REPLAY_REQUESTED").count()
        resolved = Event.objects.filter(notification_id=nid, kind="FAILURE_RESOLVED").count()
        assert replayed + resolved == 1, nid  # exactly one transition out of the DLQ
        winners = by_result.get(nid, []) + (["hand"] if nid in single_wins else [])
        assert len(winners) == 1, (nid, winners)  # and exactly one party says it did it
