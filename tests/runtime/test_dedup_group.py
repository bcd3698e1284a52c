"""Settlement of a dedup group when its leader settles (reference 1.1, PENDING_FOLLOWER exits):
DEDUP_SATISFIED on success; on failure the first follower is promoted (DEDUP_OWNER_PROMOTED),
the rest relinked (DEDUP_RELINKED) and the old leader records OBLIGATION_HANDED_OFF."""
import pytest

from notifications.models import Dedup, NotificationAuditRecord
from rthelpers import fail, kinds, only_event, request, row, timeline

pytestmark = pytest.mark.django_db


def group(rt, clock, followers=3):
    """A leader and ``followers`` followers accepted one second apart (so their order is known)."""
    leader = rt.accept("alice", request(dedup_key="disk-full")).notification
    ids = []
    for _ in range(followers):
        clock.advance(1)
        ids.append(rt.accept("alice", request(dedup_key="disk-full")).notification.id)
    return leader.id, ids


def test_leader_success_satisfies_every_follower(rt, clock, webhook, channel):
    leader, followers = group(rt, clock)
    clock.advance(5)
    [report] = rt.dispatch()
    assert (report.id, report.status) == (leader, "DELIVERED")
    for fid in followers:
        r = row(fid)
        assert (r.status, r.dedup_owner_id, r.dedup_generation) == ("DEDUPLICATED", leader, 1)
        satisfied = only_event(fid, "DEDUP_SATISFIED")
        assert satisfied.payload == {"previous_owner_id": leader, "owner_id": leader, "generation": 1}
        assert satisfied.at == clock.now
        assert not timeline(fid, "ATTEMPT_STARTED")
    assert len(webhook.calls) == 1
    assert Dedup.objects.get(key=row(leader).dedup_key).until == clock.now + 300.0
    assert row(leader).dedup_successor_id is None
    assert not timeline(leader, "OBLIGATION_HANDED_OFF")


def test_leader_retry_leaves_followers_alone(rt, clock, webhook, channel):
    leader, followers = group(rt, clock, followers=2)
    webhook.script.append(fail())
    [report] = rt.dispatch()
    assert report.status == "PENDING"
    for fid in followers:
        assert row(fid).dedup_owner_id == leader
        assert kinds(fid) == ["ACCEPTED", "DEDUP_LINKED"]


def test_leader_exhaustion_promotes_first_follower_and_relinks_the_rest(rt, clock, webhook, channel, policy):
    policy(max_attempts=1)
    leader, (first, second, third) = group(rt, clock)
    clock.advance(5)
    webhook.script.append(fail())
    [report] = rt.dispatch()
    assert (report.status, report.dead_letter) == ("FAILED", True)
    now = clock.now

    promoted = row(first)
    assert (promoted.status, promoted.dedup_owner_id, promoted.dedup_generation) == ("PENDING", None, 1)
    assert promoted.next_attempt == now
    ev = only_event(first, "DEDUP_OWNER_PROMOTED")
    assert ev.payload == {"previous_owner_id": leader, "owner_id": first, "generation": 1}
    assert ev.at == now

    for fid in (second, third):
        r = row(fid)
        assert (r.status, r.dedup_owner_id, r.dedup_generation) == ("PENDING", first, 1)
        assert only_event(fid, "DEDUP_RELINKED").payload == {"previous_owner_id": leader, "owner_id": first,
                                                             "generation": 1}

    old = row(leader)
    assert (old.status, old.dead_letter, old.dedup_successor_id) == ("FAILED", True, first)
    assert only_event(leader, "OBLIGATION_HANDED_OFF").payload == {"successor_id": first, "generation": 1}
    window = Dedup.objects.get(key=old.dedup_key)
    assert (window.owner_id, window.generation) == (first, 1)

    # newcomers now follow the promoted leader
    clock.advance(1)
    newcomer = rt.accept("alice", request(dedup_key="disk-full")).notification
    assert only_event(newcomer.id, "DEDUP_LINKED").payload == {"owner_id": first, "generation": 1,
                                                               "owner_status": "PENDING"}

    # the promoted leader is dispatched and its success satisfies the relinked followers
    [report] = rt.dispatch()
    assert (report.id, report.status) == (first, "DELIVERED")
    for fid in (second, third, newcomer.id):
        assert row(fid).status == "DEDUPLICATED"
        assert only_event(fid, "DEDUP_SATISFIED").payload == {"previous_owner_id": first, "owner_id": first,
                                                              "generation": 1}
    assert NotificationAuditRecord.objects.filter(notification_id=first, status="DELIVERED").count() == 1


def test_promotion_chain_hands_off_again_when_the_successor_fails(rt, clock, webhook, channel, policy):
    policy(max_attempts=1)
    leader, (first, second) = group(rt, clock, followers=2)
    webhook.script.append(fail())
    rt.dispatch()
    webhook.script.append(fail(retryable=False, error="HTTP 404"))
    [report] = rt.dispatch()
    assert (report.id, report.status) == (first, "FAILED")
    assert row(first).dedup_successor_id == second
    assert only_event(second, "DEDUP_OWNER_PROMOTED").payload == {"previous_owner_id": first, "owner_id": second,
                                                                  "generation": 1}
    assert row(second).dedup_owner_id is None
    assert [r.id for r in rt.dispatch()] == [second]
    assert row(second).status == "DELIVERED"


def test_best_effort_leader_failure_also_hands_off(rt, clock, webhook, channel, policy):
    policy(delivery_mode="BEST_EFFORT", max_attempts=1)
    leader, (first,) = group(rt, clock, followers=1)
    webhook.script.append(fail())
    [report] = rt.dispatch()
    assert (report.status, report.dead_letter) == ("FAILED", False)
    assert row(first).dedup_owner_id is None
    assert row(leader).dedup_successor_id == first
    assert only_event(leader, "OBLIGATION_HANDED_OFF").payload == {"successor_id": first, "generation": 1}


def test_failed_leader_without_followers_hands_off_nothing(rt, clock, webhook, channel, policy):
    policy(max_attempts=1)
    leader, _ = group(rt, clock, followers=0)
    webhook.script.append(fail())
    rt.dispatch()
    assert row(leader).dedup_successor_id is None
    assert not timeline(leader, "OBLIGATION_HANDED_OFF")
