"""Governance rules are policy content: validated on drafts, channel-checked on activation,
frozen per revision (a decision keeps the revision and hash it was made under; a later
activation changes later decisions only)."""
from copy import deepcopy

import pytest

from notifications.runtime import InvalidRequest
from policies import store
from policies.content import BOOTSTRAP_CONTENT
from policies.governance import decide, get_decision

pytestmark = pytest.mark.django_db


def _content(governance):
    content = deepcopy(BOOTSTRAP_CONTENT)
    content["governance"] = governance
    return content


def test_a_draft_with_a_bad_governance_block_is_refused_by_field():
    with pytest.raises(InvalidRequest) as exc:
        store.create_draft("gate", _content({"rules": [{"name": "r", "decision": "PERHAPS"}]}), actor="admin")
    assert "governance.rules.decision" in [e["field"] for e in exc.value.extra["errors"]]


def test_activation_checks_the_approvers_channels():
    store.ensure_initialized()
    draft = store.create_draft("gate", _content({"rules": [
        {"name": "r", "match": {}, "decision": "REQUIRE_APPROVAL", "approval": {"channels": ["pager-x"]}}]}),
        actor="admin")
    with pytest.raises(InvalidRequest) as exc:
        store.activate("gate", draft.version, actor="admin")
    assert "governance.rules[0].approval.channels" in [e["field"] for e in exc.value.extra["errors"]]


def test_decisions_keep_the_revision_they_were_made_under(rt):
    store.ensure_initialized()
    before = decide("deploy.x", {"risk": "low"}, principal="agent", runtime=rt)
    assert before.outcome == "ALLOW" and before.row.rule is None
    draft = store.create_draft("gate", {**_content({"rules": [{"name": "deny-deploys", "match": {"action": "deploy.*"},
                                                                "decision": "DENY"}]}), "priority": 5}, actor="admin")
    transition = store.activate("gate", draft.version, actor="admin")
    after = decide("deploy.x", {"risk": "low"}, principal="agent", runtime=rt)
    assert (after.outcome, after.row.rule, after.row.policy_id) == ("DENY", "deny-deploys", "gate")
    assert after.row.revision == transition.revision == before.row.revision + 1
    assert after.row.snapshot_hash != before.row.snapshot_hash
    assert get_decision(before.id).row.revision == before.row.revision  # unchanged by the activation
