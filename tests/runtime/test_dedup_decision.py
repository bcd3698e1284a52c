"""``dedup.decide``, the one dedup decision, over a table of cases: no database."""
import pytest

from notifications.runtime.dedup import DEDUPLICATED, FOLLOWER, LEADER, DedupDecision, decide

NOW = 1000.0

CASES = [
    # (case, owner_id, owner_status, generation, until, expected)
    ("no window row", None, None, 0, 0.0, DedupDecision(LEADER, None, None, 1, True)),
    ("window without owner", None, None, 3, 0.0, DedupDecision(LEADER, None, None, 4, True)),
    ("owner row gone", "o", None, 2, NOW + 60, DedupDecision(LEADER, None, None, 3, True)),
    ("pending owner", "o", "PENDING", 2, 0.0, DedupDecision(FOLLOWER, "o", "PENDING", 2, False)),
    ("pending owner past the window's TTL", "o", "PENDING", 2, NOW - 600,
     DedupDecision(FOLLOWER, "o", "PENDING", 2, False)),
    ("delivered inside the window", "o", "DELIVERED", 2, NOW + 1,
     DedupDecision(DEDUPLICATED, "o", "DELIVERED", 2, False)),
    ("delivered, window ends now", "o", "DELIVERED", 2, NOW, DedupDecision(LEADER, None, None, 3, True)),
    ("delivered, window expired", "o", "DELIVERED", 2, NOW - 1, DedupDecision(LEADER, None, None, 3, True)),
    ("failed owner never suppresses", "o", "FAILED", 2, NOW + 60, DedupDecision(LEADER, None, None, 3, True)),
    ("deduplicated owner", "o", "DEDUPLICATED", 2, NOW + 60, DedupDecision(LEADER, None, None, 3, True)),
]


@pytest.mark.parametrize(("owner_id", "owner_status", "generation", "until", "expected"),
                         [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_decide(owner_id, owner_status, generation, until, expected):
    decision = decide(owner_id=owner_id, owner_status=owner_status, generation=generation, until=until, now=NOW)
    assert decision == expected
    assert decision.live_owner is (expected.role != LEADER)


@pytest.mark.django_db
def test_simulation_predicts_what_accept_decides(rt, clock, webhook, channel):
    """Simulation is a dry run of accept's own decision: at every step it names the role accept
    then takes (leader, follower, deduplicated, leader of a new generation)."""
    from notifications.models import Notification
    from policies.simulation import simulate

    req = {"source": "billing", "title": "disk full", "channels": ["ops-hook"], "dedup_key": "disk"}

    def both():
        predicted = simulate("alice", req, now=clock.now)["dedup"]
        row = rt.accept("alice", req).notification
        role = {"DEDUPLICATED": DEDUPLICATED}.get(row.status, FOLLOWER if row.dedup_owner_id else LEADER)
        assert (predicted["role"], predicted["owner_id"], predicted["generation"]) == \
            (role, row.dedup_owner_id, row.dedup_generation)
        return role

    assert both() == LEADER
    assert both() == FOLLOWER
    rt.dispatch()  # the leader delivers; its follower is satisfied
    assert both() == DEDUPLICATED
    clock.advance(24 * 3600)
    assert both() == LEADER
    assert Notification.objects.filter(dedup_generation=2, dedup_owner_id__isnull=True).count() == 1
