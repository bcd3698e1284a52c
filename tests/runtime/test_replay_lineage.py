"""Replay follows the whole ``dedup_successor_id`` chain (architecture: "replay conflicts when a
successor is pending/delivered or lineage cannot be established"), not only its first link.

L hands off to F1, F1 fails and hands off to F2: whatever F2 does decides whether L may replay."""
import pytest

from notifications.models import Dedup, Notification
from notifications.runtime import Conflict
from notifications.runtime.dlq import MAX_LINEAGE_LINKS, replay_blockers
from rthelpers import counts, fail, request, row

pytestmark = pytest.mark.django_db

PERMANENT = fail(retryable=False, error="HTTP 404")


def chain(rt, clock, webhook, length):
    """A leader and ``length - 1`` followers on one dedup key; each leader in turn fails
    permanently (dead-lettered at once) and hands the obligation to the next. Returns the ids,
    leader first; the last one is PENDING and owns the window."""
    ids = []
    for _ in range(length):
        ids.append(rt.accept("alice", request(dedup_key="disk-full")).notification.id)
        clock.advance(1)
    for failed, successor in zip(ids, ids[1:]):
        webhook.script.append(PERMANENT)
        [report] = rt.dispatch()
        assert (report.id, report.status) == (failed, "FAILED")
        assert row(failed).dedup_successor_id == successor and row(failed).dead_letter is True
    return ids


def test_replay_is_blocked_when_a_later_successor_delivered(rt, clock, webhook, channel):
    leader, f1, f2 = chain(rt, clock, webhook, 3)
    [report] = rt.dispatch()
    assert (report.id, report.status) == (f2, "DELIVERED")
    clock.advance(3600)  # the suppression window expired: only the recorded lineage can block
    assert Dedup.objects.get(key=row(leader).dedup_key).until < clock.now
    before = counts()
    for nid in (leader, f1):
        with pytest.raises(Conflict) as err:
            rt.replay(nid, "oscar")
        assert err.value.code == "replay_blocked" and err.value.status == 409
        assert (err.value.extra["successor_id"], err.value.extra["successor_status"]) == (f2, "DELIVERED")
    assert counts() == before
    assert (row(leader).status, row(leader).cycle) == ("FAILED", 1)


def test_replay_is_blocked_while_a_later_successor_is_pending(rt, clock, webhook, channel):
    leader, _f1, f2 = chain(rt, clock, webhook, 3)
    with pytest.raises(Conflict) as err:
        rt.replay(leader, "oscar")
    assert (err.value.code, err.value.extra["successor_id"], err.value.extra["successor_status"]) == \
        ("replay_blocked", f2, "PENDING")


def test_a_missing_link_anywhere_in_the_chain_is_lineage_unknown(rt, clock, webhook, channel):
    leader, f1, f2 = chain(rt, clock, webhook, 3)
    rt.dispatch()
    Notification.objects.filter(id=f2).delete()  # e.g. pruned by retention
    before = counts()
    with pytest.raises(Conflict) as err:
        rt.replay(leader, "oscar")
    assert err.value.code == "replay_lineage_unknown" and err.value.status == 409
    assert (err.value.extra["successor_id"], err.value.extra["successor_status"]) == (f2, None)
    assert counts() == before


def test_replay_proceeds_when_every_successor_failed(rt, clock, webhook, channel):
    leader, f1, f2 = chain(rt, clock, webhook, 3)
    webhook.script.append(PERMANENT)
    rt.dispatch()
    assert row(f2).status == "FAILED" and row(f2).dedup_successor_id is None
    assert replay_blockers([row(leader)], clock.now) == {}
    rt.replay(leader, "oscar")
    assert (row(leader).status, row(leader).cycle) == ("PENDING", 2)


def test_a_cycle_in_the_recorded_lineage_terminates(rt, clock, webhook, channel):
    leader, f1, f2 = chain(rt, clock, webhook, 3)
    webhook.script.append(PERMANENT)
    rt.dispatch()
    Notification.objects.filter(id=f2).update(dedup_successor_id=f1)  # corrupt: f1 -> f2 -> f1
    assert replay_blockers([row(leader), row(f1), row(f2)], clock.now) == {}


def test_a_chain_longer_than_the_bound_is_lineage_unknown(rt, clock, webhook, channel):
    ids = chain(rt, clock, webhook, 2)
    # Lengthen the recorded lineage past the bound with FAILED rows (cheaper than real handoffs).
    template = row(ids[1])
    tail = ids[1]
    for i in range(MAX_LINEAGE_LINKS + 1):
        Notification.objects.filter(id=tail).update(status="FAILED", dead_letter=True)
        nxt = f"00000000-0000-0000-0000-{i:012d}"
        Notification.objects.filter(id=tail).update(dedup_successor_id=nxt)
        template.id, template.key, template.dedup_successor_id = nxt, f"k{i}", None
        template.save(force_insert=True)
        tail = nxt
    blocker = replay_blockers([row(ids[0])], clock.now)[ids[0]]
    assert blocker["code"] == "replay_lineage_unknown"


def test_the_dlq_listing_follows_chains_in_one_query_per_level(rt, clock, webhook, channel,
                                                               django_assert_max_num_queries):
    heads = []
    for key in ("a", "b", "c", "d"):
        ids = []
        for _ in range(3):
            ids.append(rt.accept("alice", request(dedup_key=key)).notification.id)
            clock.advance(1)
        heads.append(ids)
    for _ in range(2):  # fail each current leader: two handoffs per group
        webhook.script.extend([PERMANENT] * 4)
        rt.dispatch()
    rt.dispatch()  # the four third rows deliver
    rows = [row(ids[0]) for ids in heads] + [row(ids[1]) for ids in heads]
    # windows, then the first level (successors and window owners), then one more level
    with django_assert_max_num_queries(3):
        blockers = replay_blockers(rows, clock.now + 3600)
    for ids in heads:
        for nid in ids[:2]:
            assert (blockers[nid]["code"], blockers[nid]["successor_id"]) == ("replay_blocked", ids[2])
