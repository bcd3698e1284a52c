"""The policy store: each lifecycle transition, each refused one, the revision and snapshot each
writes, and the audit row of each, in one transaction."""
import pytest

from core.errors import Conflict, InvalidRequest, NotFound, PolicyUnavailable
from core.keys import sha256_hex
from notifications.models import Channel
from policies import store
from policies.content import BOOTSTRAP_CONTENT, DEFAULT_POLICY_ID, content_hash
from policies.models import (ACTIVE, DRAFT, RETIRED, Policy, PolicyAuditRecord, PolicyContent, PolicyRevision,
                             PolicySnapshot)
from policies.resolution import read_current
from policyhelpers import content

pytestmark = pytest.mark.django_db


class Clock:
    def __init__(self):
        self.now = 1_800_000_000.0

    def __call__(self):
        self.now += 1.0
        return self.now


@pytest.fixture
def clock():
    return Clock()


def audit(policy_id, version):
    return [(a.action, a.from_status, a.to_status, a.actor, a.revision)
            for a in PolicyAuditRecord.objects.filter(policy_id=policy_id, version=version).order_by("at", "id")]


def active_set():
    return [(p["policy_id"], p["version"]) for p in read_current().policies]


def test_cold_init_bootstraps_revision_one_with_the_default_policy(clock):
    assert read_current() is None
    assert store.ensure_initialized(clock=clock) is True
    assert store.ensure_initialized(clock=clock) is False
    current = read_current()
    assert current.revision == 1
    assert active_set() == [(DEFAULT_POLICY_ID, 1)]
    assert current.policies[0]["content"] == BOOTSTRAP_CONTENT
    assert current.policies[0]["content_hash"] == content_hash(BOOTSTRAP_CONTENT)
    snap = PolicySnapshot.objects.get()
    assert snap.snapshot_hash == sha256_hex(snap.snapshot)
    assert audit(DEFAULT_POLICY_ID, 1) == [("BOOTSTRAP", None, ACTIVE, "uns-bootstrap", 1)]


def test_create_draft_allocates_versions_and_audits(clock):
    first = store.create_draft("billing", content(priority=5), actor="alice", clock=clock)
    second = store.create_draft("billing", content(priority=6), actor="bob", clock=clock)
    assert (first.version, first.status, second.version) == (1, DRAFT, 2)
    stored = PolicyContent.objects.get(policy_id="billing", version=2)
    assert stored.content["priority"] == 6 and stored.content_hash == content_hash(stored.content)
    assert audit("billing", 1) == [("CREATE", None, DRAFT, "alice", None)]
    assert read_current().revision == 1, "a draft changes no revision"


def test_edit_draft_replaces_content_and_records_the_previous_hash(clock):
    row = store.create_draft("billing", content(), actor="alice", clock=clock)
    old = PolicyContent.objects.get(policy_id="billing").content_hash
    store.edit_draft("billing", row.version, content(max_attempts=9), actor="bob", clock=clock)
    stored = PolicyContent.objects.get(policy_id="billing")
    assert stored.content["defaults"]["max_attempts"] == 9
    edit = PolicyAuditRecord.objects.get(action="EDIT")
    assert (edit.from_status, edit.to_status, edit.actor, edit.detail) == (DRAFT, DRAFT, "bob", {"previous_hash": old})


def test_edit_with_a_stale_expected_hash_is_a_conflict(clock):
    row = store.create_draft("billing", content(), actor="alice", clock=clock)
    start = PolicyContent.objects.get(policy_id="billing").content_hash
    store.edit_draft("billing", row.version, content(max_attempts=2), actor="bob", expected_hash=start, clock=clock)
    with pytest.raises(Conflict) as err:
        store.edit_draft("billing", row.version, content(max_attempts=3), actor="carol", expected_hash=start)
    assert err.value.code == "policy_edit_conflict"
    assert PolicyContent.objects.get(policy_id="billing").content["defaults"]["max_attempts"] == 2


def test_activate_bumps_revision_writes_snapshot_and_audits(clock):
    store.ensure_initialized(clock=clock)
    row = store.create_draft("billing", content(priority=5, rules=[
        {"name": "b", "match": {"source": "billing"}, "set": {}}]), actor="alice", clock=clock)
    result = store.activate("billing", row.version, actor="bob", clock=clock)
    assert (result.changed, result.revision, result.replaced) == (True, 2, None)
    assert result.policy.status == ACTIVE and result.policy.activated_by == "bob"
    assert active_set() == [("billing", 1), (DEFAULT_POLICY_ID, 1)]
    assert PolicyRevision.objects.get().revision == 2
    snap = PolicySnapshot.objects.get(revision=2)
    assert (snap.reason, snap.created_by) == ("activate billing v1", "bob")
    assert audit("billing", 1) == [("CREATE", None, DRAFT, "alice", None), ("ACTIVATE", DRAFT, ACTIVE, "bob", 2)]


def test_activating_a_new_version_retires_the_one_it_replaces_in_the_same_revision(clock):
    v2 = store.create_draft(DEFAULT_POLICY_ID, content(max_attempts=2), actor="alice", clock=clock)
    result = store.activate(DEFAULT_POLICY_ID, v2.version, actor="alice", clock=clock)
    assert result.replaced.version == 1 and result.replaced.status == RETIRED
    assert result.replaced.retired_at == result.policy.activated_at
    assert Policy.objects.filter(policy_id=DEFAULT_POLICY_ID, status=ACTIVE).count() == 1
    assert active_set() == [(DEFAULT_POLICY_ID, 2)]
    assert audit(DEFAULT_POLICY_ID, 1)[-1] == ("RETIRE", ACTIVE, RETIRED, "alice", 2)
    assert read_current().revision == 2


def test_activating_the_active_version_again_is_an_idempotent_no_op(clock):
    row = store.create_draft("x", content(), actor="a", clock=clock)
    store.activate("x", row.version, actor="a", clock=clock)
    again = store.activate("x", row.version, actor="b", clock=clock)
    assert (again.changed, again.revision) == (False, 2)
    assert PolicySnapshot.objects.count() == 2


def test_retire_active_writes_a_revision_without_it(clock):
    row = store.create_draft("x", content(), actor="a", clock=clock)
    store.activate("x", row.version, actor="a", clock=clock)
    result = store.retire("x", row.version, actor="b", clock=clock)
    assert (result.changed, result.revision, result.policy.status, result.policy.retired_by) == (True, 3, RETIRED, "b")
    assert active_set() == [(DEFAULT_POLICY_ID, 1)]
    assert audit("x", 1)[-1] == ("RETIRE", ACTIVE, RETIRED, "b", 3)
    assert store.retire("x", row.version, actor="b").changed is False


def test_retire_draft_abandons_it_without_a_new_revision(clock):
    row = store.create_draft("x", content(), actor="a", clock=clock)
    result = store.retire("x", row.version, actor="a", clock=clock)
    assert (result.policy.status, result.revision) == (RETIRED, 1)
    assert audit("x", 1)[-1] == ("RETIRE", DRAFT, RETIRED, "a", None)


def test_clone_makes_a_new_draft_from_any_status(clock):
    row = store.create_draft("x", content(priority=3), actor="a", clock=clock)
    store.activate("x", row.version, actor="a", clock=clock)
    store.retire("x", row.version, actor="a", clock=clock)
    clone = store.clone("x", row.version, actor="b", clock=clock)
    assert (clone.version, clone.status, clone.cloned_from) == (2, DRAFT, "x@1")
    assert PolicyContent.objects.get(policy_id="x", version=2).content == \
        PolicyContent.objects.get(policy_id="x", version=1).content
    other = store.clone("x", 1, actor="b", new_policy_id="y", clock=clock)
    assert (other.policy_id, other.version, other.cloned_from) == ("y", 1, "x@1")
    assert audit("x", 2) == [("CLONE", None, DRAFT, "b", None)]
    # The clone is how a retired policy comes back.
    assert store.activate("x", clone.version, actor="b", clock=clock).policy.status == ACTIVE


# --- refused transitions ------------------------------------------------------------------------

def test_retired_to_active_is_refused(clock):
    row = store.create_draft("x", content(), actor="a", clock=clock)
    store.retire("x", row.version, actor="a", clock=clock)
    before = (PolicyRevision.objects.get().revision, PolicySnapshot.objects.count(), PolicyAuditRecord.objects.count())
    with pytest.raises(Conflict) as err:
        store.activate("x", row.version, actor="a", clock=clock)
    assert err.value.code == "policy_retired"
    assert Policy.objects.get(policy_id="x").status == RETIRED
    assert (PolicyRevision.objects.get().revision, PolicySnapshot.objects.count(),
            PolicyAuditRecord.objects.count()) == before


@pytest.mark.parametrize("final", [ACTIVE, RETIRED])
def test_editing_an_active_or_retired_version_is_refused(clock, final):
    row = store.create_draft("x", content(), actor="a", clock=clock)
    store.activate("x", row.version, actor="a", clock=clock)
    if final == RETIRED:
        store.retire("x", row.version, actor="a", clock=clock)
    original = PolicyContent.objects.get(policy_id="x").content_hash
    with pytest.raises(Conflict) as err:
        store.edit_draft("x", row.version, content(max_attempts=1), actor="a", clock=clock)
    assert err.value.code == "policy_not_draft"
    assert PolicyContent.objects.get(policy_id="x").content_hash == original


def test_activating_invalid_content_is_refused_with_field_named_errors(clock):
    # Drafts are validated when written, so invalid content can only come from an older schema
    # (or a hand-edited row); activation validates again and refuses it.
    row = store.create_draft("x", content(), actor="a", clock=clock)
    bad = content(max_attempts=0, rules=[{"name": "r", "match": {"colour": "red"}, "set": {}}])
    PolicyContent.objects.filter(policy_id="x").update(content=bad, content_hash=content_hash(bad))
    with pytest.raises(InvalidRequest) as err:
        store.activate("x", row.version, actor="a", clock=clock)
    assert err.value.code == "invalid_policy_content"
    assert {e["field"] for e in err.value.extra["errors"]} == {"defaults.max_attempts", "rules[0].match.colour"}
    assert Policy.objects.get(policy_id="x").status == DRAFT
    assert read_current().revision == 1


def test_activating_content_that_names_an_unknown_channel_is_refused(clock):
    row = store.create_draft("x", content(rules=[
        {"name": "page", "match": {"severity": "critical"}, "set": {"channels": ["pager"],
                                                                    "escalation": {"target": "oncall"}}}]),
        actor="a", clock=clock)
    with pytest.raises(InvalidRequest) as err:
        store.activate("x", row.version, actor="a", clock=clock)
    assert [e["field"] for e in err.value.extra["errors"]] == ["rules[0].set.channels", "rules[0].set.escalation.target"]
    Channel.objects.create(name="pager", kind="console", config={})
    Channel.objects.create(name="oncall", kind="console", config={})
    assert store.activate("x", row.version, actor="a", clock=clock).changed


def test_invalid_drafts_are_refused_when_written(clock):
    with pytest.raises(InvalidRequest) as err:
        store.create_draft("x", {"schema_version": 2, "defaults": {}}, actor="a", clock=clock)
    fields = {e["field"] for e in err.value.extra["errors"]}
    assert "schema_version" in fields and "defaults.max_attempts" in fields
    with pytest.raises(InvalidRequest) as err:
        store.create_draft("bad id!", content(), actor="a", clock=clock)
    assert err.value.code == "invalid_policy_id"
    assert not Policy.objects.filter(policy_id__in=["x", "bad id!"]).exists()


def test_retiring_the_default_policy_is_refused(clock):
    store.ensure_initialized(clock=clock)
    with pytest.raises(Conflict) as err:
        store.retire(DEFAULT_POLICY_ID, 1, actor="a", clock=clock)
    assert err.value.code == "default_policy_required"
    assert active_set() == [(DEFAULT_POLICY_ID, 1)]


def test_unknown_versions_are_not_found(clock):
    for call in (lambda: store.activate("nope", 1, actor="a"), lambda: store.retire("nope", 1, actor="a"),
                 lambda: store.clone("nope", 1, actor="a"), lambda: store.edit_draft("nope", 1, content(), actor="a")):
        with pytest.raises(NotFound) as err:
            call()
        assert err.value.code == "policy_not_found"


def test_a_serialized_historical_active_policy_never_revives_a_retired_version(clock):
    """The ACTIVE set of a new revision comes from lifecycle rows, never from an old snapshot;
    loading an old snapshot's policy (status ACTIVE in the file) makes a new DRAFT."""
    v2 = store.create_draft(DEFAULT_POLICY_ID, content(max_attempts=2), actor="a", clock=clock)
    store.activate(DEFAULT_POLICY_ID, v2.version, actor="a", clock=clock)  # retires v1
    historical = PolicySnapshot.objects.get(revision=1).snapshot["policies"][0]  # v1, ACTIVE back then
    assert historical["version"] == 1
    other = store.create_draft("other", content(), actor="a", clock=clock)
    store.activate("other", other.version, actor="a", clock=clock)  # a new revision is rebuilt
    assert active_set() == [("other", 1), (DEFAULT_POLICY_ID, 2)]
    revived = store.create_draft(historical["policy_id"], historical["content"], actor="a", clock=clock)
    assert (revived.version, revived.status) == (3, DRAFT)
    assert Policy.objects.get(policy_id=DEFAULT_POLICY_ID, version=1).status == RETIRED
    with pytest.raises(Conflict):
        store.activate(DEFAULT_POLICY_ID, 1, actor="a", clock=clock)


def test_content_that_fails_its_hash_is_never_activated_or_snapshotted(clock):
    row = store.create_draft("x", content(), actor="a", clock=clock)
    PolicyContent.objects.filter(policy_id="x").update(content_hash="0" * 64)
    with pytest.raises(PolicyUnavailable) as err:
        store.activate("x", row.version, actor="a", clock=clock)
    assert err.value.code == "policy_content_corrupt"
    assert read_current().revision == 1


def test_a_revision_row_lost_over_existing_snapshots_is_not_bootstrapped_over(clock):
    store.ensure_initialized(clock=clock)
    PolicyRevision.objects.all().delete()
    with pytest.raises(PolicyUnavailable) as err:
        store.ensure_initialized(clock=clock)
    assert err.value.code == "policy_revision_missing"
    assert PolicySnapshot.objects.count() == 1 and not PolicyRevision.objects.exists()


def test_store_refuses_nul_in_content_naming_the_field():
    bad = content()
    bad["rules"][0]["name"] = "crit\x00ical"
    with pytest.raises(InvalidRequest) as err:
        store.create_draft("x", bad, actor="admin")
    assert err.value.code == "invalid_policy_content"
    assert err.value.extra["errors"] == [{"field": "rules[0].name", "message": "must not contain NUL characters"}]
    assert not Policy.objects.filter(policy_id="x").exists()
