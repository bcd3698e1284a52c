"""Snooze and escalate under real concurrency on PostgreSQL (10 connections, one barrier).

- concurrent snoozes serialise on the conditional UPDATE naming the deadline each one read: the
  losers re-read and snooze again, so the SNOOZED events form one chain (each
  ``previous_deadline`` is another's ``deadline``) ending at the row's deadline: no lost update;
- the same request id raced ten times snoozes once;
- concurrent escalations are numbered 1..N without gaps or duplicates, each with its own
  escalation notification;
- racing timeout passes time each row out once and escalate it once (the ``escalation_due``
  fence), also when the escalation was left due by a crash.
"""
import json
from copy import deepcopy

import pytest

from notifications.models import Channel, Event, Notification

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

N = 10


@pytest.fixture
def escalating(settings, tmp_path):
    from policies import bootstrap
    from policies.content import BOOTSTRAP_CONTENT

    def clear():
        for name in ("bootstrap_content", "load_bootstrap_file"):
            getattr(getattr(bootstrap, name, None), "cache_clear", lambda: None)()

    content = deepcopy(BOOTSTRAP_CONTENT)
    content["defaults"]["escalation"] = {"target": "oncall"}
    path = tmp_path / "policy.json"
    path.write_text(json.dumps(content))
    settings.UNS_BOOTSTRAP_POLICY_FILE = str(path)
    clear()
    Channel.objects.create(name="oncall", kind="console", config={})
    yield
    clear()


def delivered(rt, clock):
    nid = rt.accept("alice", {"source": "billing", "title": "disk full", "channels": ["ops-hook"],
                              "require_ack": True}).notification.id
    clock.advance(5)
    rt.dispatch()
    return nid


def snoozed_payloads(nid):
    return [e.payload for e in Event.objects.filter(notification_id=nid, kind="SNOOZED")]


def test_concurrent_snoozes_form_one_chain(rt, clock, channel, race):
    nid = delivered(rt, clock)
    original = Notification.objects.get(id=nid).deadline

    results, pids = race(N, lambda i: rt.snooze(nid, f"responder-{i}", 600 + i))

    assert len(set(pids)) == N
    payloads = snoozed_payloads(nid)
    assert len(payloads) == N
    previous = [p["previous_deadline"] for p in payloads]
    deadlines = [p["deadline"] for p in payloads]
    assert len(set(previous)) == N, "two snoozes overwrote the same deadline: a lost update"
    final = Notification.objects.get(id=nid).deadline
    assert set(previous) == {original} | (set(deadlines) - {final})
    assert final in deadlines


def test_one_request_id_raced_snoozes_once(rt, clock, channel, race):
    nid = delivered(rt, clock)

    results, _ = race(N, lambda i: rt.snooze(nid, "bob", 900, request_id="retry-storm"))

    assert len(snoozed_payloads(nid)) == 1
    assert {r.deadline for r in results} == {Notification.objects.get(id=nid).deadline}


def test_concurrent_escalations_are_numbered_without_gaps(rt, clock, channel, escalating, race):
    nid = delivered(rt, clock)

    results, _ = race(N, lambda i: rt.escalate(nid, f"responder-{i}", f"reason {i}"))

    assert sorted(r.number for r in results) == list(range(1, N + 1))
    assert len({r.escalation.id for r in results}) == N
    events = Event.objects.filter(notification_id=nid, kind="ESCALATED")
    assert sorted(e.payload["escalation_number"] for e in events) == list(range(1, N + 1))
    assert Notification.objects.filter(principal="uns-escalation").count() == N


def test_racing_timeout_passes_time_out_and_escalate_each_row_once(rt, clock, channel, escalating, race):
    """N workers run the whole timeout pass (TIMED_OUT per row, then the due escalations) at
    once: every row is timed out by exactly one of them and escalated exactly once."""
    nids = [delivered(rt, clock) for _ in range(3)]
    clock.now = max(Notification.objects.filter(id__in=nids).values_list("deadline", flat=True))
    results, pids = race(N, lambda i: rt.expire())

    assert len(set(pids)) == N
    assert sorted(nid for swept in results for nid in swept) == sorted(nids)
    for nid in nids:
        assert Notification.objects.get(id=nid).ack_status == "TIMED_OUT"
        assert Event.objects.filter(notification_id=nid, kind="TIMED_OUT").count() == 1
        assert Event.objects.filter(notification_id=nid, kind="ESCALATED").count() == 1
    assert Notification.objects.filter(principal="uns-escalation").count() == len(nids)
    assert not Notification.objects.filter(escalation_due__isnull=False).exists()


def test_racing_workers_perform_a_due_escalation_once(rt, clock, channel, escalating, race):
    """A crash left a row TIMED_OUT with its escalation due; N workers' next passes race for it:
    the fence (clearing ``escalation_due``) lets exactly one escalate."""
    from notifications.runtime import escalation, responses

    nid = delivered(rt, clock)
    clock.now = Notification.objects.get(id=nid).deadline
    assert responses.time_out(rt) == [nid]  # the first step only, as a crash right after it leaves it
    clock.advance(60)
    results, pids = race(N, lambda i: escalation.escalate_due(rt))

    assert len(set(pids)) == N
    # The one-target form is a one-level chain that ends at once: one worker fires the level and
    # that worker or another ends the chain, so nid may be reported by two passes, each for its
    # own step. What must hold is that each step happened exactly once.
    assert {n for done in results for n in done} == {nid}
    [event] = Event.objects.filter(notification_id=nid, kind="ESCALATED")
    assert Event.objects.filter(notification_id=nid, kind="ESCALATION_EXHAUSTED").count() == 1
    assert event.payload["escalation_number"] == 1 and event.payload["actor"] == "uns-timeout-worker"
    assert Notification.objects.filter(principal="uns-escalation").count() == 1
    assert Notification.objects.get(id=nid).escalation_due is None
