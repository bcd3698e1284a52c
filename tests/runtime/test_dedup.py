"""Intake coalescing (reference 1.1 entry states): PENDING_LEADER, PENDING_FOLLOWER behind a live
PENDING leader, DEDUPLICATED behind a DELIVERED leader inside its window; a new generation
when the window expired or the owner FAILED. Pending ownership survives the window's TTL."""
import pytest

from core.keys import dedup_digest
from notifications.models import Dedup
from rthelpers import counts, fail, kinds, only_event, request, row, timeline

pytestmark = pytest.mark.django_db

WINDOW = 300.0  # bootstrap dedup_window_seconds


def accept(rt, principal="alice", **fields):
    return rt.accept(principal, request(dedup_key="disk-full", **fields)).notification


def test_first_request_leads_generation_one(rt, clock, channel):
    leader = accept(rt)
    r = row(leader.id)
    effective_hash = only_event(leader.id, "ACCEPTED").payload["effective_hash"]
    assert r.dedup_key == dedup_digest("alice", "billing", "disk-full", effective_hash)
    assert (r.status, r.dedup_owner_id, r.dedup_generation) == ("PENDING", None, 1)
    window = Dedup.objects.get(key=r.dedup_key)
    assert (window.owner_id, window.generation, window.until) == (leader.id, 1, clock.now + WINDOW)
    assert kinds(leader.id) == ["ACCEPTED"]


def test_duplicate_behind_pending_leader_is_a_follower(rt, clock, channel):
    leader = accept(rt)
    clock.advance(10)
    follower = accept(rt, title="disk full again")  # the title is not part of the dedup identity
    r = row(follower.id)
    assert (r.status, r.dedup_owner_id, r.dedup_generation, r.dedup_key) == (
        "PENDING", leader.id, 1, row(leader.id).dedup_key)
    linked = only_event(follower.id, "DEDUP_LINKED")
    assert linked.payload == {"owner_id": leader.id, "generation": 1, "owner_status": "PENDING"}
    assert linked.at == clock.now
    assert kinds(follower.id) == ["ACCEPTED", "DEDUP_LINKED"]
    window = Dedup.objects.get(key=r.dedup_key)
    assert (window.owner_id, window.generation) == (leader.id, 1)


def test_duplicate_behind_delivered_leader_in_window_is_deduplicated(rt, clock, channel):
    leader = accept(rt)
    clock.advance(5)
    rt.dispatch()
    delivered_at = row(leader.id).delivered_at
    clock.now = delivered_at + WINDOW - 1
    dup = accept(rt)
    r = row(dup.id)
    assert (r.status, r.dedup_owner_id, r.dedup_generation) == ("DEDUPLICATED", leader.id, 1)
    assert r.ack_status is None and r.delivered_at is None
    assert only_event(dup.id, "DEDUP_LINKED").payload == {"owner_id": leader.id, "generation": 1,
                                                          "owner_status": "DELIVERED"}
    # a satisfied duplicate is never dispatched
    clock.advance(3600)
    assert rt.dispatch() == []


def test_window_runs_from_delivery_and_expiry_starts_a_new_generation(rt, clock, channel):
    leader = accept(rt)
    clock.advance(100)
    rt.dispatch()
    delivered_at = row(leader.id).delivered_at
    assert Dedup.objects.get(key=row(leader.id).dedup_key).until == delivered_at + WINDOW

    clock.now = delivered_at + WINDOW  # the window is [delivered_at, delivered_at + window)
    newcomer = accept(rt)
    r = row(newcomer.id)
    assert (r.status, r.dedup_owner_id, r.dedup_generation) == ("PENDING", None, 2)
    assert not timeline(newcomer.id, "DEDUP_LINKED")
    window = Dedup.objects.get(key=r.dedup_key)
    assert (window.owner_id, window.generation, window.until) == (newcomer.id, 2, clock.now + WINDOW)

    follower = accept(rt)
    assert only_event(follower.id, "DEDUP_LINKED").payload == {"owner_id": newcomer.id, "generation": 2,
                                                               "owner_status": "PENDING"}


@pytest.mark.parametrize("mode", ["GUARANTEED", "BEST_EFFORT"])
def test_failed_owners_never_suppress(rt, clock, webhook, channel, policy, mode):
    policy(delivery_mode=mode)
    leader = accept(rt)
    webhook.script.append(fail(retryable=False, error="HTTP 410"))
    rt.dispatch()
    assert row(leader.id).status == "FAILED"
    clock.advance(1)  # well inside the window
    newcomer = accept(rt)
    r = row(newcomer.id)
    assert (r.status, r.dedup_owner_id, r.dedup_generation) == ("PENDING", None, 2)
    assert Dedup.objects.get(key=r.dedup_key).owner_id == newcomer.id


def test_pending_ownership_survives_window_expiry(rt, clock, webhook, channel, policy):
    policy(backoff={"base_seconds": 1000.0, "factor": 2.0, "cap_seconds": 5000.0, "jitter": 0.0})
    leader = accept(rt)
    webhook.script.append(fail())
    rt.dispatch()  # back to PENDING, next attempt 1000 s away
    clock.advance(WINDOW * 3)
    assert Dedup.objects.get(key=row(leader.id).dedup_key).until < clock.now
    late = accept(rt)
    r = row(late.id)
    assert (r.status, r.dedup_owner_id, r.dedup_generation) == ("PENDING", leader.id, 1)
    assert only_event(late.id, "DEDUP_LINKED").payload["owner_status"] == "PENDING"


def test_undispatched_leader_keeps_ownership_after_window(rt, clock, channel):
    leader = accept(rt)
    clock.advance(WINDOW + 1)
    late = accept(rt)
    assert row(late.id).dedup_owner_id == leader.id


@pytest.mark.parametrize("other", [
    pytest.param({"principal": "bob"}, id="other-principal"),
    pytest.param({"source": "payroll"}, id="other-source"),
    pytest.param({"dedup_key": "cpu-hot"}, id="other-dedup-key"),
    pytest.param({"severity": "critical"}, id="other-effective-settings"),
])
def test_dedup_scope_is_principal_source_key_and_effective_settings(rt, channel, other):
    leader = accept(rt)
    fields = dict(other)
    principal = fields.pop("principal", "alice")
    body = request(**{"dedup_key": "disk-full", **fields})
    second = rt.accept(principal, body).notification
    r = row(second.id)
    assert r.dedup_owner_id is None and r.dedup_generation == 1
    assert r.dedup_key != row(leader.id).dedup_key


def test_no_dedup_key_means_no_coalescing(rt, channel):
    a = rt.accept("alice", request()).notification
    b = rt.accept("alice", request()).notification
    assert row(a.id).dedup_key is None and row(b.id).dedup_owner_id is None
    assert Dedup.objects.count() == 0


def test_zero_window_disables_coalescing(rt, channel, policy):
    policy(dedup_window_seconds=0)
    a = accept(rt)
    b = accept(rt)
    assert row(a.id).dedup_key is None and row(b.id).dedup_key is None
    assert row(b.id).dedup_owner_id is None
    assert Dedup.objects.count() == 0


def test_idempotent_repeat_of_a_follower_links_nothing_new(rt, channel):
    accept(rt)
    follower = rt.accept("alice", request(dedup_key="disk-full", idempotency_key="i-1")).notification
    before = counts()
    again = rt.accept("alice", request(dedup_key="disk-full", idempotency_key="i-1"))
    assert (again.created, again.notification.id) == (False, follower.id)
    assert counts() == before
