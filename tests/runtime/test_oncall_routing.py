"""Routing to people (issue 22): a policy or request naming ``schedule:``, ``team:`` or
``user:`` pages the people it resolves to AT SEND TIME through their verified contact methods
in order; the timeline records who was paged through what (ONCALL_RESOLVED, then each contact
method's CHANNEL_ATTEMPT_RESULT naming the person); nobody on call fails over or dead-letters
with the reason; activation and intake refuse a target that does not exist."""
import pytest
from django.contrib.auth import get_user_model

from core.errors import InvalidRequest, UnknownChannel
from notifications.adapters.base import DeliveryResult
from notifications.models import Channel, InboxMessage
from notifications.runtime import oncall as oncall_service
from oncall.models import ContactMethod
from policies import store
from rthelpers import only_event, request, row, timeline

pytestmark = pytest.mark.django_db

DAY = 86400.0
OP = "olga"


def person(name, *urls, verified=True):
    """A user with one webhook contact method per url (in order), verified or not."""
    user = get_user_model().objects.create_user(name)
    for i, url in enumerate(urls):
        ContactMethod.objects.create(id=f"{name}-{i}", user=user, position=i, kind="webhook", config={"url": url},
                                     secret=f"whsec_{name}{i}", created_at=0.0,
                                     verification=ContactMethod.VERIFIED if verified else ContactMethod.UNVERIFIED)
    return user


@pytest.fixture
def crew(db):
    person("ann", "http://127.0.0.1:9/ann")
    person("bob", "http://127.0.0.1:9/bob")
    person("cid", "http://127.0.0.1:9/cid")
    person("dan", "http://127.0.0.1:9/dan-unverified", verified=False)


def schedule(name, members, start="2027-01-15T00:00"):
    oncall_service.create_schedule(name, time_zone="UTC", actor=OP)
    oncall_service.add_layer(name, {"members": members, "rotation_unit": "days", "rotation_count": 1,
                                    "start": start, "time_zone": "UTC"}, actor=OP)


def paged_urls(webhook):
    return [call["target"].config["url"] for call in webhook.calls]


def send(rt, clock, **fields):
    n = rt.accept("alice", request(**fields)).notification
    clock.advance(1)
    reports = rt.dispatch()
    return n.id, reports


def test_a_schedule_pages_whoever_is_on_call_when_it_is_sent(rt, clock, webhook, crew):
    schedule("db", ["ann", "bob"])
    nid, [report] = send(rt, clock, channels=["schedule:db"])
    assert report.status == "DELIVERED"
    assert paged_urls(webhook) == ["http://127.0.0.1:9/ann"]
    resolved = only_event(nid, "ONCALL_RESOLVED")
    assert resolved.payload["target"] == "schedule:db" and resolved.payload["at"] == clock.now
    assert [(p["user"], p["source"], [c["id"] for c in p["contact_methods"]]) for p in resolved.payload["people"]] \
        == [("ann", "layer", ["ann-0"])]
    result = only_event(nid, "CHANNEL_ATTEMPT_RESULT")
    assert result.payload["channel"] == "schedule:db" and result.payload["success"] is True
    assert result.payload["metadata"]["user"] == "ann" and result.payload["metadata"]["contact_method"] == "ann-0"
    assert "whsec_ann0" not in str([e.payload for e in timeline(nid)])  # no secret on the timeline
    clock.advance(DAY)  # the rotation hands over to bob
    send(rt, clock, channels=["schedule:db"])
    assert paged_urls(webhook)[-1] == "http://127.0.0.1:9/bob"


def test_resolution_happens_at_send_time_not_at_accept(rt, clock, webhook, crew):
    schedule("db", ["ann", "bob"])
    n = rt.accept("alice", request(channels=["schedule:db"])).notification
    assert timeline(n.id, "ONCALL_RESOLVED") == []  # accept resolved nobody
    oncall_service.add_override("db", "cid", clock.now, clock.now + 3600, actor=OP)
    clock.advance(1)
    rt.dispatch()
    assert paged_urls(webhook) == ["http://127.0.0.1:9/cid"]
    people = only_event(n.id, "ONCALL_RESOLVED").payload["people"]
    assert people[0]["user"] == "cid" and people[0]["source"] == "override"


def test_contact_methods_in_order_unverified_never_paged(rt, clock, webhook, crew):
    eve = person("eve", "http://127.0.0.1:9/eve-first", "http://127.0.0.1:9/eve-second")
    ContactMethod.objects.create(id="eve-x", user=eve, position=0, kind="webhook", config={"url": "http://u/x"},
                                 created_at=0.0)  # unverified, first in order: skipped
    webhook.script.append(DeliveryResult(False, retryable=False, error="HTTP 410"))
    nid, [report] = send(rt, clock, channels=["user:eve"])
    assert report.status == "DELIVERED"
    assert paged_urls(webhook) == ["http://127.0.0.1:9/eve-first", "http://127.0.0.1:9/eve-second"]
    results = timeline(nid, "CHANNEL_ATTEMPT_RESULT")
    assert [(r.payload["metadata"]["contact_method"], r.payload["success"]) for r in results] == [
        ("eve-0", False), ("eve-1", True)]
    # a lease check (CHANNEL_ATTEMPT_STARTED) precedes each of the two provider attempts
    assert len(timeline(nid, "CHANNEL_ATTEMPT_STARTED")) == 2


def test_a_team_pages_every_member(rt, clock, webhook, crew):
    oncall_service.create_team("dba", members=["bob", "dan", "ann"], actor=OP)
    nid, [report] = send(rt, clock, channels=["team:dba"])
    assert report.status == "DELIVERED"
    assert paged_urls(webhook) == ["http://127.0.0.1:9/bob", "http://127.0.0.1:9/ann"]  # dan: nothing verified
    people = only_event(nid, "ONCALL_RESOLVED").payload["people"]
    assert [(p["user"], len(p["contact_methods"])) for p in people] == [("bob", 1), ("dan", 0), ("ann", 1)]


def test_nobody_on_call_dead_letters_with_the_reason(rt, clock, webhook, crew):
    schedule("later", ["ann"], start="2027-02-01T00:00")  # nobody on call until February
    nid, [report] = send(rt, clock, channels=["schedule:later"])
    assert (report.status, report.dead_letter) == ("FAILED", True)
    assert webhook.calls == []
    result = only_event(nid, "CHANNEL_ATTEMPT_RESULT")
    assert "nobody is on call in schedule 'later'" in result.payload["error"]
    assert only_event(nid, "ONCALL_RESOLVED").payload["reason"].startswith("nobody is on call")
    assert row(nid).dead_letter


def test_nobody_on_call_fails_over_to_the_fallback(rt, clock, webhook, crew, policy):
    Channel.objects.create(name="ops-hook", kind="webhook", config={"url": "http://127.0.0.1:9/ops"})
    schedule("later", ["ann"], start="2027-02-01T00:00")
    policy(channels=["schedule:later"], fallback_channels={"schedule:later": ["ops-hook"]})
    nid, [report] = send(rt, clock, channels=None)
    assert report.status == "DELIVERED"
    assert paged_urls(webhook) == ["http://127.0.0.1:9/ops"]
    failed_over = only_event(nid, "CHANNEL_FAILED_OVER").payload
    assert (failed_over["channel"], failed_over["fallback"]) == ("schedule:later", "ops-hook")


def test_two_level_escalation_pages_each_schedules_person(rt, clock, webhook, crew, policy):
    schedule("primary", ["ann"])
    schedule("secondary", ["bob"])
    policy(channels=["schedule:primary"], escalation={"levels": [
        {"channels": ["schedule:primary"], "wait_seconds": 60},
        {"channels": ["schedule:secondary"], "wait_seconds": 60}]})
    n = rt.accept("alice", request(channels=None, require_ack=True)).notification
    clock.advance(1)
    rt.dispatch()
    clock.now = row(n.id).deadline
    rt.expire()  # level 1
    clock.advance(1)
    rt.dispatch()
    clock.advance(60)
    rt.expire()  # level 2
    clock.advance(1)
    rt.dispatch()
    assert paged_urls(webhook) == ["http://127.0.0.1:9/ann"] * 2 + ["http://127.0.0.1:9/bob"]
    levels = [e.payload["escalation_id"] for e in timeline(n.id, "ESCALATED")]
    assert [only_event(e, "ONCALL_RESOLVED").payload["people"][0]["user"] for e in levels] == ["ann", "bob"]


def test_activation_and_intake_refuse_a_target_that_does_not_exist(rt, crew):
    schedule("db", ["ann"])
    content = {"defaults": {"channels": ["schedule:db", "schedule:nope"], "escalation": {"target": "team:ghosts"}},
               "governance": {"approval": {"channels": ["user:zed", "user:ann"]}}}
    assert store.channel_errors(content) == [
        {"field": "defaults.channels", "message": "schedule 'nope' does not exist"},
        {"field": "defaults.escalation.target", "message": "team 'ghosts' does not exist"},
        {"field": "governance.approval.channels", "message": "user 'zed' does not exist or is inactive"},
    ]
    with pytest.raises(UnknownChannel):
        rt.accept("alice", request(channels=["schedule:nope"]))
    with pytest.raises(UnknownChannel):
        rt.accept("alice", request(channels=["user:zed"]))
    assert rt.accept("alice", request(channels=["user:ann"])).notification.status == "PENDING"


def test_deleting_a_routed_schedule_is_refused(rt, crew, policy):
    schedule("db", ["ann"])
    policy(channels=["schedule:db"])
    rt.accept("alice", request(channels=None))  # initialises the policy authority from the file
    with pytest.raises(Exception) as exc:
        oncall_service.delete_schedule("db", actor=OP)
    assert getattr(exc.value, "code", None) == "target_routed"
    with pytest.raises(InvalidRequest):
        oncall_service.add_override("db", "ann", 10.0, 5.0, actor=OP)


def test_in_app_inbox_contact_methods_get_one_entry_per_person(rt, clock, crew):
    for name in ("fay", "gus"):
        user = get_user_model().objects.create_user(name)
        ContactMethod.objects.create(id=f"{name}-inbox", user=user, kind="console", verification="VERIFIED",
                                     created_at=0.0)
    oncall_service.create_team("night", members=["fay", "gus"], actor=OP)
    nid, [report] = send(rt, clock, channels=["team:night"])
    assert report.status == "DELIVERED"
    assert sorted(InboxMessage.objects.filter(notification_id=nid).values_list("channel", flat=True)) == [
        "user:fay", "user:gus"]
