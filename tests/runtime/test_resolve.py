"""``Runtime.resolve_failure`` (reference 1.1, FAILED_DLQ -> FAILED_RESOLVED): clear dead_letter
without replaying; repeatable; only for dead letters."""
import pytest

from notifications.runtime import Conflict, InvalidRequest, NotFound
from rthelpers import counts, fail, only_event, request, row

pytestmark = pytest.mark.django_db

LOSSY = [{"name": "lossy-best-effort", "match": {"source": "lossy"},
          "set": {"delivery_mode": "BEST_EFFORT", "max_attempts": 1}}]


def dead_lettered(rt, webhook, **fields):
    n = rt.accept("alice", request(**fields)).notification
    webhook.script.append(fail(retryable=False, error="HTTP 404"))
    rt.dispatch()
    assert (row(n.id).status, row(n.id).dead_letter) == ("FAILED", True)
    return n.id


def test_resolve_clears_the_dead_letter_flag(rt, clock, webhook, channel):
    nid = dead_lettered(rt, webhook)
    before = row(nid)
    clock.advance(120)
    out = rt.resolve_failure(nid, "oscar")
    assert out.id == nid
    r = row(nid)
    assert (r.status, r.dead_letter) == ("FAILED", False)
    # nothing else about the obligation changes
    assert (r.attempts, r.cycle, r.cycle_attempts, r.outcome) == (before.attempts, before.cycle,
                                                                  before.cycle_attempts, before.outcome)
    ev = only_event(nid, "FAILURE_RESOLVED")
    assert ev.payload == {"actor": "oscar"}
    assert ev.at == clock.now
    # resolved, not replayed: never dispatched again
    clock.advance(86_400)
    assert rt.dispatch() == []


def test_resolve_repeat_is_idempotent(rt, clock, webhook, channel):
    nid = dead_lettered(rt, webhook)
    rt.resolve_failure(nid, "oscar")
    before = counts()
    again = rt.resolve_failure(nid, "oscar")
    assert (again.status, again.dead_letter) == ("FAILED", False)
    assert counts() == before
    assert only_event(nid, "FAILURE_RESOLVED").payload == {"actor": "oscar"}


def test_resolving_a_non_dead_letter_is_a_conflict(rt, clock, webhook, channel, policy):
    policy(rules=LOSSY)
    pending = rt.accept("alice", request()).notification.id
    clock.advance(1)
    delivered = rt.accept("alice", request()).notification.id
    webhook.script.extend([fail(), webhook.default])
    rt.dispatch()
    best_effort = rt.accept("alice", request(source="lossy")).notification.id
    webhook.script.append(fail())
    rt.dispatch()
    assert [(row(i).status, row(i).dead_letter) for i in (pending, delivered, best_effort)] == [
        ("PENDING", False), ("DELIVERED", False), ("FAILED", False)]

    for nid in (pending, delivered, best_effort):
        before = counts()
        with pytest.raises(Conflict) as err:
            rt.resolve_failure(nid, "oscar")
        assert err.value.code == "not_dead_lettered" and err.value.status == 409
        assert counts() == before


def test_unknown_notification_is_not_found(rt, channel):
    before = counts()
    with pytest.raises(NotFound) as err:
        rt.resolve_failure("00000000-0000-0000-0000-000000000000", "oscar")
    assert err.value.status == 404
    assert counts() == before


def test_resolved_leader_keeps_its_handoff(rt, clock, webhook, channel):
    leader = rt.accept("alice", request(dedup_key="d")).notification.id
    clock.advance(1)
    follower = rt.accept("alice", request(dedup_key="d")).notification.id
    webhook.script.append(fail(retryable=False, error="HTTP 404"))
    rt.dispatch()
    rt.resolve_failure(leader, "oscar")
    r = row(leader)
    assert (r.status, r.dead_letter, r.dedup_successor_id) == ("FAILED", False, follower)
    assert row(follower).dedup_owner_id is None and row(follower).status == "PENDING"


@pytest.mark.parametrize("actor", ["", None])
def test_resolve_needs_an_actor(rt, clock, webhook, channel, actor):
    nid = dead_lettered(rt, webhook)
    before = counts()
    with pytest.raises(InvalidRequest) as err:
        rt.resolve_failure(nid, actor)
    assert err.value.code == "actor_required"
    assert counts() == before
    assert row(nid).dead_letter is True
