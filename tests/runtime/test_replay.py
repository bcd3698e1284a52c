"""``Runtime.replay`` (reference 1.1, FAILED_DLQ -> PENDING_LEADER): a new cycle for an
unblocked dead-lettered notification; blocked while a recorded successor carries its obligation."""
import pytest

from notifications.models import Dedup, Notification
from notifications.runtime import Conflict, InvalidRequest, NotFound
from rthelpers import counts, fail, only_event, request, row, timeline

pytestmark = pytest.mark.django_db

LOSSY = [{"name": "lossy-best-effort", "match": {"source": "lossy"},
          "set": {"delivery_mode": "BEST_EFFORT", "max_attempts": 1}}]


def dead_lettered(rt, clock, webhook, attempts, **fields):
    """Accept and fail ``attempts`` times (the policy's max_attempts) into the DLQ."""
    n = rt.accept("alice", request(**fields)).notification
    for _ in range(attempts):
        clock.now = max(clock.now, row(n.id).next_attempt)
        webhook.script.append(fail())
        rt.dispatch()
    r = row(n.id)
    assert (r.status, r.dead_letter) == ("FAILED", True)
    return n.id


def test_replay_starts_a_new_cycle_and_then_delivers(rt, clock, webhook, channel):
    nid = dead_lettered(rt, clock, webhook, 5)  # bootstrap max_attempts
    clock.advance(600)
    out = rt.replay(nid, "oscar")
    assert out.id == nid
    r = row(nid)
    assert (r.status, r.dead_letter, r.cycle, r.cycle_attempts, r.attempts) == ("PENDING", False, 2, 0, 5)
    assert r.next_attempt == clock.now and r.lease_until == 0.0 and r.lease_token is None
    ev = only_event(nid, "REPLAY_REQUESTED")
    assert ev.payload == {"actor": "oscar", "cycle": 2, "cumulative_attempts": 5}
    assert ev.at == clock.now

    webhook.script.append(webhook.default)
    [report] = rt.dispatch()
    assert (report.status, report.attempt) == ("DELIVERED", 6)
    started = timeline(nid, "ATTEMPT_STARTED")[-1].payload
    assert started == {"attempt": 6, "cycle": 2, "cycle_attempt": 1, "recovery_may_repeat_provider_effect": False}
    result = timeline(nid, "DELIVERY_RESULT")[-1].payload
    assert (result["status"], result["cycle"], result["cycle_attempt"], result["attempt"]) == ("DELIVERED", 2, 1, 6)
    r = row(nid)
    assert (r.status, r.attempts, r.cycle, r.cycle_attempts) == ("DELIVERED", 6, 2, 1)


def test_replayed_cycle_gets_a_fresh_budget(rt, clock, webhook, channel, policy):
    policy(max_attempts=2)
    nid = dead_lettered(rt, clock, webhook, 2)
    rt.replay(nid, "oscar")
    webhook.script.append(fail())
    [report] = rt.dispatch()
    assert report.status == "PENDING"  # cycle_attempts restarted: 1 < 2
    clock.now = row(nid).next_attempt
    webhook.script.append(fail())
    [report] = rt.dispatch()
    assert (report.status, report.dead_letter) == ("FAILED", True)
    r = row(nid)
    assert (r.attempts, r.cycle, r.cycle_attempts) == (4, 2, 2)
    rt.replay(nid, "oscar")
    assert [e.payload for e in timeline(nid, "REPLAY_REQUESTED")] == [
        {"actor": "oscar", "cycle": 2, "cumulative_attempts": 2},
        {"actor": "oscar", "cycle": 3, "cumulative_attempts": 4},
    ]


def test_unknown_notification_is_not_found(rt, channel):
    before = counts()
    with pytest.raises(NotFound):
        rt.replay("00000000-0000-0000-0000-000000000000", "oscar")
    assert counts() == before


def test_only_dead_letters_replay(rt, clock, webhook, channel, policy):
    policy(rules=LOSSY)
    pending = rt.accept("alice", request()).notification.id
    clock.advance(1)
    delivered = rt.accept("alice", request()).notification.id
    webhook.script.extend([fail(), webhook.default])
    rt.dispatch()  # ``pending`` fails once (back to PENDING), ``delivered`` succeeds
    best_effort = rt.accept("alice", request(source="lossy")).notification.id
    webhook.script.append(fail())
    rt.dispatch()
    assert [(row(i).status, row(i).dead_letter) for i in (pending, delivered, best_effort)] == [
        ("PENDING", False), ("DELIVERED", False), ("FAILED", False)]

    for nid in (pending, delivered, best_effort):
        before = counts()
        with pytest.raises(Conflict) as err:
            rt.replay(nid, "oscar")
        assert err.value.code == "not_dead_lettered" and err.value.status == 409
        assert counts() == before


def test_resolved_failure_no_longer_replays(rt, clock, webhook, channel, policy):
    policy(max_attempts=1)
    nid = dead_lettered(rt, clock, webhook, 1)
    rt.resolve_failure(nid, "oscar")
    with pytest.raises(Conflict) as err:
        rt.replay(nid, "oscar")
    assert err.value.code == "not_dead_lettered"


def handed_off(rt, clock, webhook, policy):
    """A leader that exhausted into the DLQ and handed its obligation to a promoted follower."""
    policy(max_attempts=1)
    leader = rt.accept("alice", request(dedup_key="disk-full")).notification.id
    clock.advance(1)
    follower = rt.accept("alice", request(dedup_key="disk-full")).notification.id
    webhook.script.append(fail())
    rt.dispatch()
    assert row(leader).dedup_successor_id == follower
    assert row(leader).dead_letter is True
    return leader, follower


def test_replay_is_blocked_while_the_successor_is_pending(rt, clock, webhook, channel, policy):
    leader, successor = handed_off(rt, clock, webhook, policy)
    before = counts()
    with pytest.raises(Conflict) as err:
        rt.replay(leader, "oscar")
    assert err.value.code == "replay_blocked"
    assert err.value.extra["successor_id"] == successor
    assert err.value.extra["successor_status"] == "PENDING"
    assert counts() == before
    assert row(leader).status == "FAILED" and row(leader).dead_letter is True


def test_replay_is_blocked_once_the_successor_delivered(rt, clock, webhook, channel, policy):
    leader, successor = handed_off(rt, clock, webhook, policy)
    [report] = rt.dispatch()
    assert (report.id, report.status) == (successor, "DELIVERED")
    # long after the successor's suppression window: the recorded lineage alone still blocks
    clock.advance(3600)
    assert Dedup.objects.get(key=row(leader).dedup_key).until < clock.now
    with pytest.raises(Conflict) as err:
        rt.replay(leader, "oscar")
    assert err.value.code == "replay_blocked"
    assert err.value.extra["successor_id"] == successor
    assert err.value.extra["successor_status"] == "DELIVERED"


def test_replay_lineage_unknown_when_the_successor_row_is_gone(rt, clock, webhook, channel, policy):
    leader, successor = handed_off(rt, clock, webhook, policy)
    rt.dispatch()
    Notification.objects.filter(id=successor).delete()  # e.g. pruned by retention
    before = counts()
    with pytest.raises(Conflict) as err:
        rt.replay(leader, "oscar")
    assert err.value.code == "replay_lineage_unknown"
    assert err.value.extra["successor_id"] == successor
    assert counts() == before


def test_replay_is_unblocked_when_the_successor_failed_too(rt, clock, webhook, channel, policy):
    leader, successor = handed_off(rt, clock, webhook, policy)
    webhook.script.append(fail())
    rt.dispatch()
    assert (row(successor).status, row(successor).dead_letter) == ("FAILED", True)
    rt.replay(leader, "oscar")
    r = row(leader)
    assert (r.status, r.cycle) == ("PENDING", 2)
    window = Dedup.objects.get(key=r.dedup_key)
    assert window.owner_id == leader
    assert r.dedup_generation == window.generation == 2
    # the successor's own replay is now blocked by the live owner of the window
    with pytest.raises(Conflict) as err:
        rt.replay(successor, "oscar")
    assert err.value.code == "replay_blocked"


def test_replayed_leader_owns_its_window_again(rt, clock, webhook, channel, policy):
    policy(max_attempts=1)
    leader = dead_lettered(rt, clock, webhook, 1, dedup_key="disk-full")
    window = Dedup.objects.get(key=row(leader).dedup_key)
    assert (window.owner_id, window.generation) == (leader, 1)
    rt.replay(leader, "oscar")
    assert row(leader).dedup_generation == 1  # still the owner: same generation
    newcomer = rt.accept("alice", request(dedup_key="disk-full")).notification.id
    assert only_event(newcomer, "DEDUP_LINKED").payload == {"owner_id": leader, "generation": 1,
                                                            "owner_status": "PENDING"}


def test_replay_is_blocked_by_a_live_newer_owner_of_the_window(rt, clock, webhook, channel, policy):
    policy(max_attempts=1)
    leader = dead_lettered(rt, clock, webhook, 1, dedup_key="disk-full")
    newer = rt.accept("alice", request(dedup_key="disk-full")).notification.id  # FAILED owners never suppress
    assert row(newer).dedup_owner_id is None and row(newer).dedup_generation == 2
    before = counts()
    with pytest.raises(Conflict) as err:
        rt.replay(leader, "oscar")
    assert err.value.code == "replay_blocked"
    assert err.value.extra["successor_id"] == newer
    assert counts() == before


@pytest.mark.parametrize("actor", ["", None])
def test_replay_needs_an_actor(rt, clock, webhook, channel, policy, actor):
    policy(max_attempts=1)
    nid = dead_lettered(rt, clock, webhook, 1)
    before = counts()
    with pytest.raises(InvalidRequest) as err:
        rt.replay(nid, actor)
    assert err.value.code == "actor_required"
    assert counts() == before
    assert (row(nid).status, row(nid).dead_letter) == ("FAILED", True)
