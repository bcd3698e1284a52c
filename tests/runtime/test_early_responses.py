"""A response that comes before the delivery is not lost (``runtime.early``): a resolve withholds
the page (no attempt, no escalation), one that found the page in flight withholds its retry or
settles the delivered notification; an acknowledge settles it as soon as it is delivered; bad
calls are refused and write nothing."""
import pytest

from notifications.models import EarlyResponse, Notification
from notifications.runtime import Conflict, NotFound
from rthelpers import counts, kinds, only_event, request, row

pytestmark = pytest.mark.django_db


def pending(rt, **fields):
    return rt.accept("alice", request(require_ack=True, **fields)).notification.id


def test_resolve_before_delivery_withholds_the_page_at_once(rt, clock, channel, webhook):
    nid = pending(rt)
    out = rt.respond_before_delivery(nid, "pd", dismiss=True, resolved=True, metadata={"via": "pagerduty"})
    assert out == {"notification_id": nid, "response": "DISMISSED", "resolved": True, "withheld": True,
                   "followers_withheld": []}
    r = row(nid)
    assert (r.status, r.dead_letter, r.ack_status, r.attempts) == ("FAILED", False, None, 0)
    assert kinds(nid) == ["ACCEPTED", "RESPONSE_BEFORE_DELIVERY", "DELIVERY_WITHHELD"]
    assert only_event(nid, "DELIVERY_WITHHELD").payload["reason"] == "resolved_before_delivery"
    clock.advance(3600)
    assert rt.run_once()["dispatched"] == [] and rt.expire() == []
    assert webhook.calls == []
    assert EarlyResponse.objects.get(notification_id=nid).honoured_at is not None


def test_acknowledge_before_delivery_is_settled_when_delivered(rt, clock, channel, webhook):
    nid = pending(rt)
    out = rt.respond_before_delivery(nid, "pd", dismiss=False, resolved=False)
    assert out["withheld"] is False and row(nid).status == "PENDING"
    rt.run_once()
    r = row(nid)
    assert (r.status, r.ack_status, r.actor) == ("DELIVERED", "ACKED", "pd")
    assert r.response_metadata == {"before_delivery": True,
                                   "responded_at": only_event(nid, "RESPONSE_BEFORE_DELIVERY").at}
    clock.advance(86400)
    assert rt.expire() == []  # nothing left to time out or escalate


def test_a_resolve_that_found_the_page_in_flight_withholds_its_retry(rt, clock, channel, webhook):
    nid = pending(rt)
    from notifications.runtime.dispatch import claim
    [c] = claim(rt, 10)                               # in flight: the resolve cannot withhold it now
    out = rt.respond_before_delivery(nid, "pd", dismiss=True, resolved=True)
    assert out["withheld"] is False
    from notifications.runtime.dispatch.claim import release_unattempted
    release_unattempted(rt, [c])
    assert row(nid).status == "PENDING"               # the attempt ended without a delivery
    clock.advance(60)
    assert rt.dispatch() == []                        # the next claim withholds it
    assert row(nid).status == "FAILED" and webhook.calls == []


def test_a_resolve_after_an_in_flight_delivery_dismisses_it(rt, clock, channel, webhook):
    nid = pending(rt)
    Notification.objects.filter(id=nid).update(lease_until=clock.now + 60, lease_token="t" * 36)  # a worker holds it
    assert rt.respond_before_delivery(nid, "pd", dismiss=True, resolved=True)["withheld"] is False
    Notification.objects.filter(id=nid).update(status="DELIVERED", ack_status="PENDING", deadline=clock.now + 900,
                                               delivered_at=clock.now, lease_until=0, lease_token=None)
    rt.expire()
    r = row(nid)
    assert (r.ack_status, r.actor) == ("DISMISSED", "pd")


def test_bad_early_responses_are_refused(rt, clock, channel):
    with pytest.raises(NotFound):
        rt.respond_before_delivery("nope", "pd", dismiss=True, resolved=True)
    nid = rt.accept("alice", request()).notification.id  # no ACK required
    before = counts()
    with pytest.raises(Conflict) as err:
        rt.respond_before_delivery(nid, "pd", dismiss=True, resolved=True)
    assert err.value.code == "ack_not_required" and counts() == before
    delivered = pending(rt, idempotency_key="d", dedup_key="d")
    rt.dispatch()
    with pytest.raises(Conflict) as err:
        rt.respond_before_delivery(delivered, "pd", dismiss=False, resolved=False)
    assert err.value.code == "not_awaiting_ack"


def test_a_pause_lets_a_resolve_that_comes_within_it_page_nobody(rt, clock, channel, webhook, policy):
    policy(pause_seconds=30)
    nid = pending(rt)
    r = row(nid)
    assert r.next_attempt == clock.now + 30
    assert r.notification["metadata"]["uns_resolution"]["effective"]["pause_seconds"] == 30
    clock.advance(10)
    assert rt.dispatch() == []                        # still paused
    assert rt.respond_before_delivery(nid, "pd", dismiss=True, resolved=True)["withheld"] is True
    clock.advance(3600)
    assert rt.dispatch() == [] and webhook.calls == []
    late = pending(rt, idempotency_key="late", dedup_key="late")
    clock.advance(30)
    assert [x.id for x in rt.dispatch()] == [late]    # a pause delays, it does not drop


def test_the_pause_setting_is_validated_and_left_out_when_zero(rt, clock, channel, policy):
    from policies.content import validate_content
    content = policy(pause_seconds=0)
    nid = pending(rt)
    assert "pause_seconds" not in row(nid).notification["metadata"]["uns_resolution"]["effective"]
    for bad in (-1, 7200, "10", True):
        broken = {**content, "defaults": {**content["defaults"], "pause_seconds": bad}}
        assert [e["field"] for e in validate_content(broken)] == ["defaults.pause_seconds"]


def test_resolving_a_leader_resolves_its_pending_followers_in_the_same_transaction(rt, clock, channel, webhook):
    leader = pending(rt, dedup_key="k", idempotency_key="1")
    follower = pending(rt, dedup_key="k", idempotency_key="2")
    assert row(follower).dedup_owner_id == leader
    assert rt.respond_before_delivery(leader, "pd", dismiss=True, resolved=True)["followers_withheld"] == [follower]
    for nid in (leader, follower):
        r = row(nid)
        assert (r.status, r.dead_letter) == ("FAILED", False)
        assert only_event(nid, "DELIVERY_WITHHELD").payload["reason"] == "resolved_before_delivery"
    assert "DEDUP_OWNER_PROMOTED" not in kinds(follower)  # nobody took the resolved alert over
    clock.advance(60)
    assert rt.dispatch() == [] and webhook.calls == []
