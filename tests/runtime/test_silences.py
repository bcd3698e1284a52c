"""Silences on the fake clock: matching (each operator, metadata labels, anchored RE2), a
matching notification accepted and visible but not sent while the silence holds (one SILENCED
event naming the silence), a non-matching one sent, the ACK deadline paused, the escalation chain
deferred, expiry by itself and "expire now", no burst of old pages at the end (ADR 0007), the
audit trail, and bad input refused before anything is written."""
import pytest

from notifications.models import Channel, Silence, SilenceAuditRecord, SilenceHold
from notifications.runtime import InvalidRequest, NotFound, silences
from notifications.runtime.silences import matches
from rthelpers import counts, kinds, only_event, request, row, timeline

pytestmark = pytest.mark.django_db

HOUR = 3600.0


def silence(rt, *matchers, seconds=HOUR, starts_at=None, comment="db migration"):
    body = {"matchers": [dict(zip(("name", "op", "value"), m)) for m in matchers], "comment": comment,
            "duration_seconds": seconds}
    if starts_at is not None:
        body["starts_at"] = starts_at
    return rt.create_silence("olga", body)


# --- matching (pure) ---------------------------------------------------------------------------

N = {"source": "db-01", "severity": "critical", "dedup_key": "disk:/var",
     "metadata": {"team": "storage", "alertmanager": {"labels": {"alertname": "DiskFull", "env": "prod"}},
                  "count": 3, "flag": True}}


def m(name, op, value):
    return {"name": name, "op": op, "value": value}


@pytest.mark.parametrize("matcher, expected", [
    (m("source", "=", "db-01"), True),
    (m("source", "=", "db-0"), False),
    (m("source", "!=", "db-02"), True),
    (m("source", "!=", "db-01"), False),
    (m("source", "=~", "db-.*"), True),
    (m("source", "=~", "db"), False),            # anchored: a substring is not a match
    (m("source", "=~", "b-01"), False),          # anchored at the start too
    (m("source", "=~", "db-01|web-01"), True),   # the alternation is anchored as a whole
    (m("source", "!~", "web-.*"), True),
    (m("source", "!~", "db-.*"), False),
    (m("severity", "=", "critical"), True),
    (m("dedup_key", "=~", "disk:.*"), True),
    (m("metadata.team", "=", "storage"), True),
    (m("metadata.alertmanager.labels.alertname", "=", "DiskFull"), True),
    (m("metadata.alertmanager.labels.env", "=~", "prod|staging"), True),
    (m("metadata.count", "=", "3"), True),
    (m("metadata.flag", "=", "true"), True),
    (m("metadata.missing", "=", ""), True),       # a missing label is the empty string
    (m("metadata.missing", "!=", "x"), True),
    (m("metadata.missing", "=~", ".+"), False),
    (m("metadata.alertmanager", "=", ""), True),  # an object is no scalar: empty
])
def test_each_operator_matches_as_alertmanager(matcher, expected):
    assert matches([matcher], N) is expected


def test_all_matchers_must_match():
    assert matches([m("source", "=", "db-01"), m("severity", "=", "critical")], N)
    assert not matches([m("source", "=", "db-01"), m("severity", "=", "info")], N)


# --- bad input ---------------------------------------------------------------------------------

@pytest.mark.parametrize("body, field", [
    ({"matchers": [m("source", "=~", "db-(")], "comment": "x", "duration_seconds": 60}, "matchers[0].value"),
    ({"matchers": [m("hostname", "=", "a")], "comment": "x", "duration_seconds": 60}, "matchers[0].name"),
    ({"matchers": [m("metadata.", "=", "a")], "comment": "x", "duration_seconds": 60}, "matchers[0].name"),
    ({"matchers": [m("source", "=~", ".*")], "comment": "x", "duration_seconds": 60}, "matchers"),
    ({"matchers": [m("source", "=", "a")], "comment": "x", "starts_at": 1_800_000_600.0,
      "ends_at": 1_800_000_500.0}, "ends_at"),
    ({"matchers": [m("source", "=", "a")], "comment": "x", "ends_at": 1_700_000_000.0}, "ends_at"),
    ({"matchers": [m("source", "=", "a")], "comment": "x"}, "ends_at"),
    ({"matchers": [m("source", "=", "a")], "comment": "x", "duration_seconds": -5}, "duration_seconds"),
    ({"matchers": [m("source", "~", "a")], "comment": "x", "duration_seconds": 60}, "matchers.op"),
    ({"matchers": [], "comment": "x", "duration_seconds": 60}, "matchers"),
    ({"matchers": [m("source", "=", "a")], "duration_seconds": 60}, "comment"),
    ({"matchers": [m("source", "=~", "a" * 2000)], "comment": "x", "duration_seconds": 60}, "matchers.value"),
])
def test_bad_silences_are_refused_and_write_nothing(rt, body, field):
    with pytest.raises(InvalidRequest) as err:
        rt.create_silence("olga", body)
    assert [e["field"] for e in err.value.extra["errors"]] == [field]
    assert Silence.objects.count() == 0 and SilenceAuditRecord.objects.count() == 0


# --- suppression of deliveries -------------------------------------------------------------------

def test_a_matching_notification_is_accepted_but_not_sent_while_a_non_matching_one_is(rt, clock, channel, webhook):
    s = silence(rt, ("source", "=", "billing"))
    held = rt.accept("alice", request()).notification
    other = rt.accept("alice", request(source="payroll")).notification
    reports = {r.id: r.status for r in rt.dispatch()}
    assert reports == {other.id: "DELIVERED"}
    assert len(webhook.calls) == 1
    r = row(held.id)
    assert (r.status, r.attempts, r.cycle_attempts, r.lease_token, r.next_attempt) == ("PENDING", 0, 0, None, s.ends_at)
    ev = only_event(held.id, "SILENCED")
    assert ev.payload["silence_id"] == s.id and ev.payload["scope"] == "delivery" and ev.payload["until"] == s.ends_at
    assert "ATTEMPT_STARTED" not in kinds(held.id)
    # a later pass while the silence holds: the row is not even due
    clock.advance(600)
    assert rt.dispatch() == []
    assert len(timeline(held.id, "SILENCED")) == 1


def test_a_maintenance_window_starts_later(rt, clock, channel, webhook):
    s = silence(rt, ("source", "=", "billing"), starts_at=clock.now + 600)
    assert silences.state(s, clock.now) == "pending"
    first = rt.accept("alice", request(idempotency_key="a")).notification
    assert [r.status for r in rt.dispatch()] == ["DELIVERED"]
    clock.advance(600)
    assert silences.state(s, clock.now) == "active"
    second = rt.accept("alice", request(idempotency_key="b", dedup_key="other")).notification
    assert rt.dispatch() == []
    assert row(first.id).status == "DELIVERED" and row(second.id).status == "PENDING"


def test_expiry_by_itself_then_a_fresh_held_notification_is_delivered(rt, clock, channel, webhook, settings):
    settings.UNS_SILENCE_FRESHNESS_SECONDS = 300
    s = silence(rt, ("source", "=", "billing"), seconds=600)
    clock.advance(400)
    held = rt.accept("alice", request()).notification
    assert rt.dispatch() == []
    clock.now = s.ends_at  # nothing ran to end it
    assert silences.state(Silence.objects.get(id=s.id), clock.now) == "expired"
    assert [(r.id, r.status) for r in rt.dispatch()] == [(held.id, "DELIVERED")]  # 200 s old: fresh


def test_no_burst_at_the_end_stale_held_notifications_are_withheld(rt, clock, channel, webhook, settings):
    settings.UNS_SILENCE_FRESHNESS_SECONDS = 300
    s = silence(rt, ("severity", "=~", "warning|critical"))
    old = [rt.accept("alice", request(severity="critical", idempotency_key=str(i), dedup_key=str(i))).notification
           for i in range(3)]
    assert rt.dispatch() == []
    clock.now = s.ends_at - 100
    fresh = rt.accept("alice", request(severity="warning", dedup_key="fresh")).notification
    assert rt.dispatch() == []
    clock.now = s.ends_at
    reports = {r.id: r.status for r in rt.dispatch()}
    assert reports == {fresh.id: "DELIVERED"}
    assert webhook.calls and len(webhook.calls) == 1
    for n in old:
        r = row(n.id)
        assert (r.status, r.dead_letter, r.attempts) == ("FAILED", False, 0)
        ev = only_event(n.id, "DELIVERY_WITHHELD")
        assert ev.payload["reason"] == "silence_ended_stale"
        assert "older than the freshness bound" in r.outcome["error_message"]


def test_expire_now_brings_held_notifications_back_at_once(rt, clock, channel, webhook):
    s = silence(rt, ("source", "=", "billing"), seconds=10 * HOUR)
    held = rt.accept("alice", request()).notification
    assert rt.dispatch() == []
    clock.advance(60)
    expired = rt.expire_silence(s.id, "olga")
    assert expired.ends_at == clock.now and expired.expired_by == "olga"
    assert row(held.id).next_attempt == clock.now
    assert [r.status for r in rt.dispatch()] == ["DELIVERED"]  # 60 s old: fresh
    assert rt.expire_silence(s.id, "someone-else").expired_by == "olga"  # idempotent
    audit = list(SilenceAuditRecord.objects.filter(silence_id=s.id).values_list("action", "actor"))
    assert audit == [("CREATE", "olga"), ("EXPIRE", "olga")]


def test_edit_is_audited_and_retimes_what_it_holds(rt, clock, channel):
    s = silence(rt, ("source", "=", "billing"), seconds=HOUR)
    held = rt.accept("alice", request()).notification
    rt.dispatch()
    edited = rt.update_silence(s.id, "piet", {"duration_seconds": 600, "comment": "shorter"})
    assert edited.ends_at == clock.now + 600 and edited.starts_at == s.starts_at
    assert row(held.id).next_attempt == edited.ends_at
    [rec] = SilenceAuditRecord.objects.filter(silence_id=s.id, action="UPDATE")
    assert (rec.actor, rec.comment, rec.ends_at, rec.matchers) == ("piet", "shorter", edited.ends_at, s.matchers)
    with pytest.raises(NotFound):
        rt.update_silence("nope", "piet", {"comment": "x"})


def test_followers_of_a_held_leader_are_not_sent_after_the_silence_either(rt, clock, channel, webhook, settings):
    settings.UNS_SILENCE_FRESHNESS_SECONDS = 300
    s = silence(rt, ("dedup_key", "=", "k"))
    leader = rt.accept("alice", request(dedup_key="k", idempotency_key="1")).notification
    follower = rt.accept("alice", request(dedup_key="k", idempotency_key="2")).notification
    assert row(follower.id).dedup_owner_id == leader.id
    rt.dispatch()
    clock.now = s.ends_at + 1000
    for _ in range(3):
        rt.dispatch()
    assert row(leader.id).status == "FAILED" and row(follower.id).status == "FAILED"
    assert webhook.calls == []


# --- ACK deadlines and escalations ----------------------------------------------------------------

def delivered(rt, clock, **fields):
    n = rt.accept("alice", request(require_ack=True, **fields)).notification
    clock.advance(5)
    [report] = rt.dispatch()
    assert report.status == "DELIVERED"
    return n.id


def test_the_ack_deadline_does_not_run_while_silenced(rt, clock, channel):
    nid = delivered(rt, clock)
    deadline = row(nid).deadline                      # 15 min after delivery
    clock.advance(300)                                # 10 min left
    s = silence(rt, ("source", "=", "billing"), seconds=HOUR)
    clock.now = deadline
    assert rt.expire() == []
    r = row(nid)
    assert r.ack_status == "PENDING" and r.deadline == s.ends_at + 600
    ev = only_event(nid, "SILENCED")
    assert ev.payload["scope"] == "deadline" and ev.payload["deadline_after"] == s.ends_at + 600
    assert SilenceHold.objects.get(notification_id=nid).remaining == 600
    clock.now = s.ends_at + 599
    assert rt.expire() == []
    clock.now = s.ends_at + 600
    assert rt.expire() == [nid]


def test_expiring_early_gives_back_only_the_time_left(rt, clock, channel):
    nid = delivered(rt, clock)
    deadline = row(nid).deadline
    s = silence(rt, ("source", "=", "billing"), seconds=10 * HOUR)
    clock.now = deadline
    rt.expire()
    clock.advance(60)
    rt.expire_silence(s.id, "olga")
    assert row(nid).deadline == clock.now + (deadline - s.starts_at)


@pytest.fixture
def chained(policy, db):
    Channel.objects.create(name="lead", kind="console", config={})
    return policy(escalation={"levels": [{"channels": ["lead"], "wait_seconds": 60},
                                         {"channels": ["lead"], "wait_seconds": 60, "repeat": 3}]})


def test_escalations_are_deferred_while_silenced(rt, clock, channel, chained):
    nid = delivered(rt, clock)
    clock.now = row(nid).deadline
    assert rt.expire() == [nid]                       # timed out before the silence: level 1 fires
    assert len(timeline(nid, "ESCALATED")) == 1
    s = silence(rt, ("source", "=", "billing"), seconds=HOUR)
    clock.advance(60)                                 # level 1 repeats now, but the silence holds
    assert rt.expire() == []
    assert len(timeline(nid, "ESCALATED")) == 1
    assert row(nid).escalation_due == s.ends_at
    assert only_event(nid, "SILENCED").payload["scope"] == "escalation"
    clock.now = s.ends_at + 10 * HOUR
    rt.expire()
    assert len(timeline(nid, "ESCALATED")) == 2       # one step, not a burst of the missed ones


def test_a_silence_with_no_active_match_reads_the_silences_once_per_pass(rt, clock, channel, django_assert_max_num_queries):
    silence(rt, ("source", "=", "nothing-like-this"))
    for i in range(20):
        rt.accept("alice", request(idempotency_key=str(i), dedup_key=str(i)))
    from django.db import connection
    from django.test.utils import CaptureQueriesContext
    with CaptureQueriesContext(connection) as ctx:
        rt.dispatch()
    assert sum("uns_silences" in q["sql"] for q in ctx.captured_queries) == 1
    assert sum("uns_silence_holds" in q["sql"] for q in ctx.captured_queries) == 0


def test_preview_counts_open_matches_and_writes_nothing(rt, clock, channel):
    for i, source in enumerate(["billing", "billing", "payroll"]):
        rt.accept("alice", request(source=source, idempotency_key=str(i), dedup_key=str(i)))
    before = counts()
    p = silences.preview({"matchers": [m("source", "=", "billing")]})
    assert p["matched"] == 2 and p["complete"] and {x["source"] for x in p["sample"]} == {"billing"}
    assert counts() == before
