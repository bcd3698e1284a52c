"""Escalation chains under real concurrency on PostgreSQL: real threads, each on its
own connection, released by one barrier.

- an ACK racing the next level's firing: whichever commits first, no level fires after the
  response committed (the ESCALATION_STOPPED event counts the steps fired when the chain
  stopped, and no ESCALATED event comes after it), the chain is stopped exactly once;
- racing workers fire a due level exactly once (the conditional UPDATE on the chain's step).
"""
import json
from copy import deepcopy

import pytest

from notifications.models import Channel, Event, Notification

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

CHAIN = {"levels": [
    {"channels": ["lead"], "wait_seconds": 60},
    {"channels": ["manager"], "wait_seconds": 120},
    {"channels": ["director"], "wait_seconds": 300},
]}
ROWS = 6


@pytest.fixture
def chained(settings, tmp_path):
    from policies import bootstrap
    from policies.content import BOOTSTRAP_CONTENT

    def clear():
        for name in ("bootstrap_content", "load_bootstrap_file"):
            getattr(getattr(bootstrap, name, None), "cache_clear", lambda: None)()

    content = deepcopy(BOOTSTRAP_CONTENT)
    content["defaults"]["escalation"] = CHAIN
    path = tmp_path / "policy.json"
    path.write_text(json.dumps(content))
    settings.UNS_BOOTSTRAP_POLICY_FILE = str(path)
    clear()
    for name in ("lead", "manager", "director"):
        Channel.objects.create(name=name, kind="console", config={})
    yield
    clear()


def at_level_two_due(rt, clock, n):
    """``n`` notifications timed out, level 1 fired and delivered, level 2 due now. Returns
    ``[(original id, level 1 escalation id)]``."""
    ids = []
    for i in range(n):
        ids.append(rt.accept("alice", {"source": "billing", "title": f"disk {i}", "channels": ["ops-hook"],
                                       "require_ack": True}).notification.id)
    clock.advance(5)
    rt.dispatch()
    clock.now = max(Notification.objects.get(id=i).deadline for i in ids)
    rt.expire()
    rt.dispatch()
    clock.advance(60)
    pairs = []
    for nid in ids:
        [ev] = Event.objects.filter(notification_id=nid, kind="ESCALATED")
        pairs.append((nid, ev.payload["escalation_id"]))
        assert Notification.objects.get(id=nid).escalation_due <= clock.now
    return pairs


def test_an_ack_racing_the_next_level_never_lets_a_level_fire_after_it(rt, clock, channel, chained, race):
    from notifications.runtime import escalation

    pairs = at_level_two_due(rt, clock, ROWS)

    def run(i):
        if i % 2 == 0:
            return escalation.escalate_due(rt)
        return rt.acknowledge(pairs[i // 2][1], f"responder-{i}")

    _, pids = race(2 * ROWS, run)

    assert len(set(pids)) == 2 * ROWS
    for nid, first in pairs:
        assert Notification.objects.get(id=first).ack_status == "ACKED"
        original = Notification.objects.get(id=nid)
        assert (original.escalation_state, original.escalation_due) == ("RESPONDED", None)
        events = list(Event.objects.filter(notification_id=nid).order_by("at", "id"))
        escalated = [e for e in events if e.kind == "ESCALATED"]
        [stop] = [e for e in events if e.kind == "ESCALATION_STOPPED"]
        assert len(escalated) in (1, 2), "level 2 fired more than once"
        # the stop recorded every step fired before it committed, and none came after
        assert stop.payload["steps"] == len(escalated) == original.escalation_step
        assert stop.payload["responded_on"] == first
        assert Notification.objects.filter(principal="uns-escalation",
                                           notification__metadata__escalated_from=nid).count() == len(escalated)
    # later passes fire nothing more
    clock.advance(3600)
    rt.expire()
    for nid, _ in pairs:
        assert Event.objects.filter(notification_id=nid, kind="ESCALATED").count() <= 2
        assert not Event.objects.filter(notification_id=nid, kind="ESCALATION_EXHAUSTED").exists()


def test_racing_workers_fire_a_due_level_once(rt, clock, channel, chained, race):
    from notifications.runtime import escalation

    pairs = at_level_two_due(rt, clock, 3)

    _, pids = race(8, lambda i: escalation.escalate_due(rt))

    assert len(set(pids)) == 8
    for nid, _ in pairs:
        levels = [e.payload["level"] for e in Event.objects.filter(notification_id=nid, kind="ESCALATED")]
        assert sorted(levels) == [1, 2]
        assert Notification.objects.get(id=nid).escalation_step == 2
