"""Two levels of one escalation chain acknowledged at the same moment on PostgreSQL (real
threads, each on its own connection, released by one barrier): one response wins, the other is
answered ``ack_conflict`` (no database error: a response on an escalation locks the chain's
original before its own row, so the two queue on the original instead of deadlocking on each
other's copy), the chain stops once, and every copy is closed, by the winner."""
import json
from copy import deepcopy

import pytest

from core.errors import Conflict
from notifications.models import Channel, Event, Notification

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

CHAINS = 6
CHAIN = {"levels": [{"channels": [name], "wait_seconds": wait}
                    for name, wait in (("lead", 60), ("manager", 120), ("director", 300))]}


@pytest.fixture
def chained(settings, tmp_path):
    """The bootstrap policy with ``CHAIN`` as every notification's escalation, and its channels."""
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


def three_levels_out(rt, clock, n):
    """``n`` timed-out notifications whose chains fired and delivered all three levels. Returns
    ``[(original id, [copy ids in level order])]``."""
    ids = [rt.accept("alice", {"source": "db", "title": f"Replica lag {i}", "channels": ["ops-hook"],
                               "require_ack": True}).notification.id for i in range(n)]
    clock.advance(5)
    rt.dispatch()
    clock.now = max(Notification.objects.get(id=i).deadline for i in ids)
    rt.expire()
    for wait in (60, 120):
        clock.advance(wait)
        rt.expire()
    rt.dispatch()
    out = []
    for nid in ids:
        copies = [e.payload["escalation_id"] for e in
                  Event.objects.filter(notification_id=nid, kind="ESCALATED").order_by("at", "id")]
        assert len(copies) == 3
        assert all(Notification.objects.get(id=c).ack_status == "PENDING" for c in copies)
        out.append((nid, copies))
    return out


def test_two_levels_acknowledged_at_once_one_wins_and_every_copy_closes(rt, clock, channel, chained, race):
    chains = three_levels_out(rt, clock, CHAINS)

    def run(i):
        nid, copies = chains[i // 2]
        try:
            return rt.acknowledge(copies[i % 2], f"responder-{i}").actor  # level 1 or level 2
        except Conflict as exc:
            return exc.code

    results, pids = race(2 * CHAINS, run)

    assert len(set(pids)) == 2 * CHAINS
    for k, (nid, copies) in enumerate(chains):
        pair = results[2 * k: 2 * k + 2]
        winners = [r for r in pair if r.startswith("responder-")]
        assert len(winners) == 1 and pair.count("ack_conflict") == 1, pair
        [winner] = winners
        won_on = copies[pair.index(winner)]
        original = Notification.objects.get(id=nid)
        assert (original.escalation_state, original.escalation_due) == ("RESPONDED", None)
        [stop] = Event.objects.filter(notification_id=nid, kind="ESCALATION_STOPPED")
        assert (stop.payload["actor"], stop.payload["responded_on"]) == (winner, won_on)
        for c in copies:
            row = Notification.objects.get(id=c)
            assert (row.ack_status, row.actor) == ("ACKED", winner)
            assert Event.objects.filter(notification_id=c, kind="ACKED").count() == 1
            if c != won_on:
                assert row.response_metadata == {"escalation_closed": "ESCALATION_STOPPED",
                                                 "responded_on": won_on, "escalated_from": nid}
