"""Snooze and escalate under real concurrency on PostgreSQL (10 connections, one barrier).

- concurrent snoozes serialise on the conditional UPDATE naming the deadline each one read: the
  losers re-read and snooze again, so the SNOOZED events form one chain (each
  ``previous_deadline`` is another's ``deadline``) ending at the row's deadline: no lost update;
- the same request id raced ten times snoozes once;
- concurrent escalations are numbered 1..N without gaps or duplicates, each with its own
  escalation notification.
"""
import json
from copy import deepcopy

import pytest

from notifications.models import Channel, Event, Notification

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

N = 10


@pytest.fixture
def escalating(settings, tmp_path):
    from policies import resolution
    from policies.content import BOOTSTRAP_CONTENT

    def clear():
        for name in ("bootstrap_content", "_load_bootstrap_file"):
            getattr(getattr(resolution, name, None), "cache_clear", lambda: None)()

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
