"""``uns_people_audit_records``: each person's action writes exactly one row, in the action's own
transaction, naming the actor, the action, the object (type, id, title) and the time; a refused
action writes none; system work (deliveries, time-outs, the policy bootstrap) writes none."""
from copy import deepcopy

import pytest
from django.contrib.auth import get_user_model

from notifications.adapters.fake import FakeAdapter
from notifications.models import Channel, Notification, PeopleAuditRecord
from notifications.runtime import Conflict, channels, oncall
from notifications.runtime.maintenance import DAY, maintain
from policies import store
from policies.content import BOOTSTRAP_CONTENT, DEFAULT_POLICY_ID
from rthelpers import counts, fail, people_audit, request, row

pytestmark = pytest.mark.django_db


def one(**filters) -> PeopleAuditRecord:
    found = people_audit(**filters)
    assert len(found) == 1, [(r.actor, r.action, r.object_id) for r in found]
    return found[0]


def dead_lettered(rt, clock, webhook, title):
    n = rt.accept("svc", request(title=title)).notification
    webhook.script.append(fail(retryable=False, error="HTTP 404"))
    rt.dispatch()
    assert row(n.id).dead_letter
    return n.id


def awaiting(rt, clock, title):
    n = rt.accept("svc", request(title=title, require_ack=True)).notification
    clock.advance(1)
    rt.dispatch()
    assert row(n.id).ack_status == "PENDING"
    return n.id


def test_delivery_and_time_out_are_no_ones_action(rt, clock, webhook, channel):
    awaiting(rt, clock, "disk full")
    dead_lettered(rt, clock, webhook, "node down")
    clock.advance(10 ** 6)
    assert rt.expire()  # TIMED_OUT by uns-timeout-worker
    assert PeopleAuditRecord.objects.count() == 0


def test_replay_and_resolve_write_one_row_each_with_title_actor_and_time(rt, clock, webhook, channel):
    replayed = dead_lettered(rt, clock, webhook, "node down")
    resolved = dead_lettered(rt, clock, webhook, "disk gone")
    clock.advance(60)
    rt.replay(replayed, "oscar")
    r = one(action="REPLAY_REQUESTED")
    assert (r.actor, r.object_type, r.object_id, r.object_title, r.at, r.bulk_action_id, r.detail) == (
        "oscar", "notification", replayed, "node down", clock.now, None, {"cycle": 2})
    clock.advance(5)
    rt.resolve_failure(resolved, "olga")
    rt.resolve_failure(resolved, "olga")  # the idempotent repeat changes nothing: no second row
    r = one(action="FAILURE_RESOLVED")
    assert (r.actor, r.object_type, r.object_id, r.object_title, r.at) == (
        "olga", "notification", resolved, "disk gone", clock.now)
    assert PeopleAuditRecord.objects.count() == 2


def test_a_refused_replay_writes_nothing(rt, clock, webhook, channel):
    nid = awaiting(rt, clock, "not dead")
    before = counts()
    with pytest.raises(Conflict):
        rt.replay(nid, "oscar")
    with pytest.raises(Conflict):
        rt.resolve_failure(nid, "oscar")
    assert counts() == before


def test_ack_dismiss_snooze_write_one_row_each(rt, clock, channel):
    acked, dismissed, snoozed = (awaiting(rt, clock, t) for t in ("cpu hot", "fan loud", "disk slow"))
    rt.acknowledge(acked, "alice")
    rt.acknowledge(acked, "alice")  # idempotent repeat
    clock.advance(1)
    rt.acknowledge(dismissed, "bob", dismiss=True)
    clock.advance(1)
    rt.snooze(snoozed, "carol", 600, request_id="s-1")
    rt.snooze(snoozed, "carol", 600, request_id="s-1")  # same request: no second snooze
    got = [(r.actor, r.action, r.object_id, r.object_title) for r in people_audit()]
    assert got == [("alice", "ACKED", acked, "cpu hot"), ("bob", "DISMISSED", dismissed, "fan loud"),
                   ("carol", "SNOOZED", snoozed, "disk slow")]
    assert one(action="SNOOZED").detail == {"seconds": 600.0, "deadline": clock.now + 600}


def test_a_refused_ack_writes_nothing(rt, clock, channel):
    nid = awaiting(rt, clock, "cpu hot")
    rt.acknowledge(nid, "alice")
    before = counts()
    with pytest.raises(Conflict):
        rt.acknowledge(nid, "mallory")  # another actor
    with pytest.raises(Conflict):
        rt.snooze(nid, "mallory", 600)
    assert counts() == before


def test_escalate_writes_one_row_on_the_original(rt, clock, channel, policy):
    Channel.objects.create(name="oncall", kind="console", config={})
    policy(escalation={"target": "oncall"})
    nid = awaiting(rt, clock, "db down")
    result = rt.escalate(nid, "bob", "nobody is looking")
    r = one(action="ESCALATED")
    assert (r.actor, r.object_id, r.object_title) == ("bob", nid, "db down")
    assert r.detail == {"reason": "nobody is looking", "level": 1, "number": 1, "escalation_id": result.escalation.id}
    # The escalation's own notification was accepted by the runtime, not by a person: no row.
    assert PeopleAuditRecord.objects.count() == 1


def test_a_bulk_action_writes_its_own_row_and_one_per_item_it_settled(rt, clock, webhook, channel):
    ids = [dead_lettered(rt, clock, webhook, f"node down {i}") for i in range(3)]
    created = rt.create_bulk("oscar", {"action": "replay", "filter": {"source": "billing"}, "expected": 3})
    r = one(action="BULK_ACTION_CREATED")
    assert (r.actor, r.object_type, r.object_id, r.bulk_action_id) == ("oscar", "bulk_action", created.id, created.id)
    assert r.object_title == "replay 3 of 3 matching (dlq)"
    assert (r.detail["action"], r.detail["matched"], r.detail["total"]) == ("replay", 3, 3)
    rt.replay(ids[1], "olga")  # settled by hand first: the bulk action's item is refused
    rt.run_bulk(created.id, "oscar")
    items = people_audit(bulk_action_id=created.id, action="REPLAY_REQUESTED")
    assert sorted(r.object_id for r in items) == sorted([ids[0], ids[2]])
    assert {r.actor for r in items} == {"oscar"}
    assert one(action="REPLAY_REQUESTED", bulk_action_id=None).actor == "olga"


def test_channel_changes_write_one_row_each_and_never_a_secret(clock):
    secret = "whsec_c2VydmljZS10ZXN0LWtleQ=="
    channels.create("pager", "webhook", {"url": "http://127.0.0.1:9/hook"}, secret, actor="alice", clock=clock)
    clock.advance(1)
    channels.update("pager", {"timeout": 5}, actor="bob", clock=clock)
    clock.advance(1)
    channels.rotate_secret("pager", "plain-rotated-signing-key", actor="bob", clock=clock)
    clock.advance(1)
    channels.disable("pager", actor="carol", clock=clock)
    channels.disable("pager", actor="carol", clock=clock)  # already disabled: nothing happens
    clock.advance(1)
    channels.enable("pager", actor="carol", clock=clock)
    clock.advance(1)
    webhook = FakeAdapter()
    channels.send_test("pager", adapters={"webhook": webhook}, actor="dave", clock=clock)
    clock.advance(1)
    channels.delete("pager", actor="erin", clock=clock)
    got = [(r.actor, r.action, r.object_type, r.object_id, r.object_title) for r in people_audit()]
    assert got == [(actor, action, "channel", "pager", "pager (webhook)") for actor, action in [
        ("alice", "CHANNEL_CREATED"), ("bob", "CHANNEL_UPDATED"), ("bob", "CHANNEL_SECRET_ROTATED"),
        ("carol", "CHANNEL_DISABLED"), ("carol", "CHANNEL_ENABLED"), ("dave", "CHANNEL_TESTED"),
        ("erin", "CHANNEL_DELETED")]]
    assert one(action="CHANNEL_TESTED").detail == {"success": True}
    assert one(action="CHANNEL_UPDATED").detail == {"changed": ["timeout"]}
    stored = list(PeopleAuditRecord.objects.values_list("detail", "object_title"))
    assert "c2VydmljZS10ZXN0LWtleQ" not in repr(stored) and "plain-rotated" not in repr(stored)


def test_a_refused_channel_change_writes_nothing(clock):
    channels.create("pager", "webhook", {"url": "http://127.0.0.1:9/hook"}, "", actor="alice", clock=clock)
    before = PeopleAuditRecord.objects.count()
    with pytest.raises(Conflict):
        channels.create("pager", "webhook", {"url": "http://127.0.0.1:9/hook"}, "", actor="alice", clock=clock)
    assert PeopleAuditRecord.objects.count() == before


def test_policy_lifecycle_writes_one_row_per_action_not_for_the_bootstrap(clock):
    store.ensure_initialized(clock=clock)
    assert PeopleAuditRecord.objects.count() == 0
    content = deepcopy(BOOTSTRAP_CONTENT)
    content["defaults"]["max_attempts"] = 2
    v2 = store.create_draft(DEFAULT_POLICY_ID, content, actor="alice", clock=clock)
    content["defaults"]["max_attempts"] = 3
    clock.advance(1)
    store.edit_draft(DEFAULT_POLICY_ID, v2.version, content, actor="alice", clock=clock)
    clock.advance(1)
    store.activate(DEFAULT_POLICY_ID, v2.version, actor="bob", clock=clock)  # retires v1: part of it
    clock.advance(1)
    clone = store.clone(DEFAULT_POLICY_ID, v2.version, actor="carol", new_policy_id="billing", clock=clock)
    clock.advance(1)
    store.retire("billing", clone.version, actor="dave", clock=clock)
    got = [(r.actor, r.action, r.object_type, r.object_id, r.object_title) for r in people_audit()]
    assert got == [
        ("alice", "POLICY_CREATED", "policy", DEFAULT_POLICY_ID, f"{DEFAULT_POLICY_ID} v2"),
        ("alice", "POLICY_EDITED", "policy", DEFAULT_POLICY_ID, f"{DEFAULT_POLICY_ID} v2"),
        ("bob", "POLICY_ACTIVATED", "policy", DEFAULT_POLICY_ID, f"{DEFAULT_POLICY_ID} v2"),
        ("carol", "POLICY_CLONED", "policy", "billing", "billing v1"),
        ("dave", "POLICY_RETIRED", "policy", "billing", "billing v1"),
    ]
    activated = one(action="POLICY_ACTIVATED").detail
    assert (activated["version"], activated["replaced"], activated["to_status"]) == (2, 1, "ACTIVE")


def test_retention_keeps_the_audit_of_what_it_prunes(rt, clock, webhook, channel):
    """uns_maintain prunes terminal notifications with their timelines and delivery/ack audit;
    the people audit outlives them (it never prunes ``uns_people_audit_records``), and its title
    still says what the pruned object was."""
    nid = dead_lettered(rt, clock, webhook, "node down")
    rt.resolve_failure(nid, "olga")
    clock.advance(100 * DAY)
    report = maintain(rt, cutoff=clock.now - 90 * DAY, apply=True, operator="oscar")
    assert report.rows["uns_notifications"] == 1 and not Notification.objects.filter(id=nid).exists()
    r = one(action="FAILURE_RESOLVED")
    assert (r.object_id, r.object_title, r.actor) == (nid, "node down", "olga")


def test_a_bulk_ack_names_its_bulk_action_and_a_responders_metadata_cannot(rt, clock, channel):
    """The bulk action an ACK belonged to comes from ``runtime.bulk``; a responder who writes
    ``bulk_action_id`` into its own ACK's metadata does not make it part of one."""
    mine, bulked = awaiting(rt, clock, "cpu hot"), awaiting(rt, clock, "fan loud")
    rt.acknowledge(mine, "mallory", metadata={"bulk_action_id": "forged"})
    assert one(action="ACKED", object_id=mine).bulk_action_id is None
    created = rt.create_bulk("rita", {"action": "ack", "filter": {}, "expected": 1})
    rt.run_bulk(created.id, "rita")
    assert one(action="ACKED", object_id=bulked).bulk_action_id == created.id


def test_silences_and_on_call_changes_are_people_actions(rt, clock):
    """Creating and expiring a silence, and creating a schedule, a team, an override and a
    contact method, each write one people-audit row naming who did it (issue 23's one audit)."""
    made = rt.create_silence("olga", {"matchers": [{"name": "source", "op": "=", "value": "db-01"}],
                                      "comment": "db migration", "duration_seconds": 3600})
    rt.expire_silence(made.id, "oscar")
    assert (one(action="SILENCE_CREATED").actor, one(action="SILENCE_CREATED").object_title) == ("olga", "db migration")
    assert one(action="SILENCE_EXPIRED", object_id=made.id).actor == "oscar"
    get_user_model().objects.create_user("ann")
    oncall.create_team("dba", members=["ann"], actor="olga")
    oncall.create_schedule("db", time_zone="UTC", actor="olga")
    oncall.add_override("db", "ann", clock.now, clock.now + 3600, actor="oscar")
    oncall.create_contact_method("ann", "webhook", {"url": "http://127.0.0.1:9/ann"}, "whsec_YW5uLXNpZ25pbmcta2V5", actor="ann")
    assert one(action="TEAM_CREATED").object_id == "dba"
    assert one(action="SCHEDULE_CREATED").actor == "olga"
    assert (one(action="SCHEDULE_OVERRIDE_ADDED").actor, one(action="SCHEDULE_OVERRIDE_ADDED").object_type) == ("oscar", "schedule")
    created = one(action="CONTACT_METHOD_CREATED")
    assert created.actor == "ann" and "YW5uLXNpZ25pbmcta2V5" not in str(created.detail)
