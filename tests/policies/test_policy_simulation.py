"""Simulation: what intake would resolve and decide, creating no row in any table."""
import pytest

from core.errors import InvalidRequest, UnknownChannel
from policies import store
from policies.content import DEFAULT_POLICY_ID
from policies.models import PolicyRevision
from policies.simulation import simulate
from policyhelpers import content, table_fingerprint

pytestmark = pytest.mark.django_db


def req(**fields):
    return {"source": "svc", "title": "replica lag", **fields}


def test_simulation_reports_effective_settings_rule_revision_and_hashes(rt, clock):
    rt.accept("alice", req())  # initialise
    result = simulate("alice", req(severity="critical"), now=clock())
    assert (result["revision"], result["initialized"], result["policy_id"], result["policy_version"]) == \
        (1, True, DEFAULT_POLICY_ID, 1)
    assert result["rule"] == "critical-needs-ack" and result["effective"]["require_ack"] is True
    accepted = rt.accept("alice", req(severity="critical")).notification
    frozen = accepted.notification["metadata"]["uns_resolution"]
    for key in ("policy_id", "policy_version", "policy_hash", "effective", "effective_hash", "rule", "revision",
                "snapshot_hash"):
        assert result[key] == frozen[key], key


def test_simulation_predicts_leader_follower_and_deduplicated(rt, clock):
    dedup = req(dedup_key="lag", idempotency_key=None)
    assert simulate("alice", dedup, now=clock())["dedup"]["role"] == "leader"
    leader = rt.accept("alice", {**dedup, "idempotency_key": "1"}).notification
    predicted = simulate("alice", dedup, now=clock())["dedup"]
    assert (predicted["role"], predicted["owner_id"], predicted["generation"]) == ("follower", leader.id, 1)
    rt.dispatch()  # console channel delivers
    predicted = simulate("alice", dedup, now=clock())["dedup"]
    assert (predicted["role"], predicted["owner_id"]) == ("deduplicated", leader.id)
    follower = rt.accept("alice", {**dedup, "idempotency_key": "2"}).notification
    assert follower.status == "DEDUPLICATED" and follower.dedup_owner_id == leader.id
    clock.advance(10_000)  # the delivered window closes: a new generation
    predicted = simulate("alice", dedup, now=clock())["dedup"]
    assert (predicted["role"], predicted["owner_id"], predicted["generation"]) == ("leader", None, 2)
    assert simulate("bob", dedup, now=clock())["dedup"]["generation"] == 1, "dedup is scoped to the principal"
    assert simulate("alice", req(), now=clock())["dedup"] == {
        "role": "leader", "coalescing": False, "dedup_key": None, "owner_id": None, "generation": None}


def test_simulation_reports_idempotent_repeats_and_conflicts(rt, clock):
    first = rt.accept("alice", req(idempotency_key="k")).notification
    assert simulate("alice", req(idempotency_key="k"), now=clock())["idempotency"] == \
        {"outcome": "repeat", "notification_id": first.id}
    assert simulate("alice", req(idempotency_key="k", title="other"), now=clock())["idempotency"]["outcome"] == \
        "conflict"
    assert simulate("alice", req(idempotency_key="new"), now=clock())["idempotency"]["outcome"] == "new"


def test_simulation_raises_what_intake_would(rt, clock):
    with pytest.raises(UnknownChannel):
        simulate("alice", req(channels=["nowhere"]), now=clock())
    with pytest.raises(InvalidRequest):
        simulate("alice", {"title": "no source"}, now=clock())


def test_simulation_resolves_against_the_current_revision(rt, clock):
    rt.accept("alice", req())
    draft = store.create_draft("billing", content(priority=5, max_attempts=2, rules=[
        {"name": "billing", "match": {"source": "billing"}, "set": {}}]), actor="a")
    store.activate("billing", draft.version, actor="a")
    result = simulate("alice", req(source="billing"), now=clock())
    assert (result["revision"], result["policy_id"], result["rule"], result["effective"]["max_attempts"]) == \
        (2, "billing", "billing", 2)


def test_simulation_changes_no_row_in_any_table(rt, clock, channel):
    leader = rt.accept("alice", req(dedup_key="lag", idempotency_key="1", channels=["ops-hook"])).notification
    assert leader.status == "PENDING"
    before = table_fingerprint()
    for request in (req(), req(dedup_key="lag"), req(idempotency_key="1", dedup_key="lag", channels=["ops-hook"]),
                    req(severity="critical", channels=["ops-hook"]), req(idempotency_key="fresh")):
        simulate("alice", request, now=clock())
    assert table_fingerprint() == before


def test_simulation_on_an_uninitialised_database_bootstraps_nothing(clock):
    before = table_fingerprint()
    result = simulate("alice", req(), now=clock())
    assert (result["revision"], result["initialized"]) == (1, False)
    assert table_fingerprint() == before
    assert not PolicyRevision.objects.exists()


def test_simulation_over_http_changes_no_row_in_any_table(api, api_rt, policy_admin):
    producer = api(groups=("producer",))
    assert producer.post("/api/v1/notifications", req(dedup_key="d"), format="json").status_code == 202
    before = table_fingerprint()
    for client in (producer, policy_admin):
        response = client.post("/api/v1/policies/simulate", req(dedup_key="d"), format="json")
        assert response.status_code == 200, response.content
        assert response.json()["dedup"]["role"] == ("follower" if client is producer else "leader")
    assert table_fingerprint() == before
