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


@pytest.mark.django_db
def test_accept_and_simulation_make_the_one_intake_decision(rt, clock, webhook, channel):
    """``accept`` decides through ``intake.decide``, the function simulation dry-runs (locked
    there, read-only here), so the two cannot drift."""
    from unittest import mock

    from notifications.runtime import intake
    from policies.simulation import simulate

    req = {"source": "billing", "title": "disk full", "channels": ["ops-hook"], "dedup_key": "disk"}
    with mock.patch.object(intake, "decide", wraps=intake.decide) as decide:
        predicted = simulate("alice", req, now=clock.now)
        accepted = rt.accept("alice", req).notification
    assert [c.kwargs["lock"] for c in decide.call_args_list] == [False, True]
    assert predicted["effective_hash"] == accepted.notification["metadata"]["uns_resolution"]["effective_hash"]


@pytest.mark.django_db
@pytest.mark.parametrize(("principal", "fields", "code"), [
    ("alice", {"channels": ["nowhere"]}, "unknown_channel"),
    ("alice", {"channels": ["ops-hook", "nowhere"]}, "unknown_channel"),
    ("alice", {"title": ""}, "invalid_request"),
    ("", {}, "principal_required"),
], ids=["unknown-channel", "one-unknown-channel", "blank-title", "no-principal"])
def test_simulation_refuses_what_accept_refuses(rt, clock, webhook, channel, principal, fields, code):
    from notifications.runtime import UNSError
    from policies.simulation import simulate
    from rthelpers import counts

    req = {"source": "billing", "title": "disk full", "channels": ["ops-hook"], **fields}
    with pytest.raises(UNSError) as simulated:
        simulate(principal, req, now=clock.now)
    before = counts()
    with pytest.raises(UNSError) as accepted:
        rt.accept(principal, req)
    assert simulated.value.code == accepted.value.code == code
    assert simulated.value.extra.get("errors") == accepted.value.extra.get("errors")
    assert counts() == before
