"""DecisionEngine over a table of rules and contexts (pure: no database), and the governance
block's validation inside policy content (``policies.content.validate_content``)."""
from copy import deepcopy

import pytest

from policies.content import BOOTSTRAP_CONTENT, validate_content
from policies.governance.engine import DecisionEngine
from policies.governance.schema import BUILTIN_APPROVAL, GovernanceRequest


def entry(policy_id, governance, version=1):
    content = deepcopy(BOOTSTRAP_CONTENT)
    if governance is not None:
        content["governance"] = governance
    assert validate_content(content) == []
    return {"policy_id": policy_id, "version": version, "content_hash": f"hash-{policy_id}", "content": content}


def req(**fields):
    return GovernanceRequest.model_validate(fields).model_dump()


RULES = {
    "rules": [
        {"name": "prod-deploy", "match": {"action": "deploy.*", "resource": "prod/*"},
         "decision": "REQUIRE_APPROVAL", "approval": {"channels": ["ops-hook"], "approvals_required": 2}},
        {"name": "no-autonomous-deletes", "match": {"action": ["db.delete", "db.drop*"], "autonomy_mode": "autonomous"},
         "decision": "DENY", "reason": "autonomous agents never delete"},
        {"name": "trusted-bot-reads", "match": {"agent_id": "bot-?", "risk": ["low", "medium"]}, "decision": "ALLOW"},
        {"name": "critical-anything", "match": {"risk": "critical"}, "decision": "REQUIRE_APPROVAL"},
    ],
    "approval": {"timeout_seconds": 120},
}

TABLE = [
    # (request, outcome, rule, approval)
    (req(action="deploy.release", resource="prod/api", risk="low"), "REQUIRE_APPROVAL", "prod-deploy",
     {"channels": ["ops-hook"], "timeout_seconds": 120.0, "approvals_required": 2}),
    (req(action="deploy.release", resource="staging/api", risk="low"), "ALLOW", None, None),  # low default
    (req(action="deploy.release", risk="low"), "ALLOW", None, None),  # no resource: the matcher cannot match
    (req(action="db.drop_table", autonomy_mode="autonomous", risk="low"), "DENY", "no-autonomous-deletes", None),
    (req(action="db.delete", autonomy_mode="supervised", risk="low"), "ALLOW", None, None),
    (req(action="read", agent_id="bot-7", risk="medium"), "ALLOW", "trusted-bot-reads", None),
    (req(action="read", agent_id="bot-77", risk="medium"), "REQUIRE_APPROVAL", None,
     {"channels": ["console"], "timeout_seconds": 120.0, "approvals_required": 1}),  # medium default
    (req(action="read", agent_id="bot-7", risk="high"), "DENY", None, None),  # high default fails closed
    (req(action="read", agent_id="bot-7"), "DENY", None, None),  # undeclared risk is high
    (req(action="anything", risk="critical"), "REQUIRE_APPROVAL", "critical-anything",
     {"channels": ["console"], "timeout_seconds": 120.0, "approvals_required": 1}),
    (req(action="DEPLOY.release", resource="prod/api", risk="low"), "ALLOW", None, None),  # case-sensitive
]


@pytest.mark.parametrize(("request_", "outcome", "rule", "approval"), TABLE)
def test_decision_table(request_, outcome, rule, approval):
    verdict = DecisionEngine([entry("uns-default", RULES)]).evaluate(request_)
    assert (verdict.outcome, verdict.rule, verdict.approval) == (outcome, rule, approval)
    if rule is not None:
        assert (verdict.policy_id, verdict.policy_hash) == ("uns-default", "hash-uns-default")


def test_no_governance_anywhere_uses_the_builtin_defaults():
    engine = DecisionEngine([entry("uns-default", None)])
    assert {r: engine.evaluate(req(action="x", risk=r)).outcome for r in ("low", "medium", "high", "critical")} == {
        "low": "ALLOW", "medium": "REQUIRE_APPROVAL", "high": "DENY", "critical": "DENY"}
    verdict = engine.evaluate(req(action="x", risk="medium"))
    assert verdict.approval == BUILTIN_APPROVAL and verdict.policy_id is None


def test_first_policy_in_evaluation_order_with_a_matching_rule_wins():
    team = entry("team", {"rules": [{"name": "team-deny", "match": {"action": "deploy.*"}, "decision": "DENY"}]})
    default = entry("uns-default", {"rules": [{"name": "allow-all", "match": {}, "decision": "ALLOW"}]})
    engine = DecisionEngine([team, default])
    assert engine.evaluate(req(action="deploy.x", risk="low")).rule == "team-deny"
    assert engine.evaluate(req(action="read", risk="low")).rule == "allow-all"


def test_risk_defaults_come_from_the_default_policy_only():
    team = entry("team", {"defaults": {"low": "DENY"}})
    default = entry("uns-default", {"defaults": {"medium": "ALLOW", "high": "REQUIRE_APPROVAL"}})
    engine = DecisionEngine([team, default])
    assert engine.evaluate(req(action="x", risk="low")).outcome == "ALLOW"  # builtin: team's defaults ignored
    assert engine.evaluate(req(action="x", risk="medium")).outcome == "ALLOW"
    high = engine.evaluate(req(action="x", risk="high"))
    assert (high.outcome, high.policy_id) == ("REQUIRE_APPROVAL", "uns-default")


def test_a_high_risk_allow_that_slipped_past_validation_still_denies():
    default = entry("uns-default", None)
    default["content"]["governance"] = {"defaults": {"high": "ALLOW"}}  # bypassing validation
    assert DecisionEngine([default]).evaluate(req(action="x", risk="high")).outcome == "DENY"


@pytest.mark.parametrize(("governance", "field"), [
    ([], "governance"),
    ({"rules": [{"name": "r", "decision": "MAYBE"}]}, "governance.rules.decision"),
    ({"rules": [{"name": "r", "decision": "ALLOW", "match": {"colour": "red"}}]}, "governance.rules.match.colour"),
    ({"rules": [{"name": "r", "decision": "ALLOW", "match": {"risk": "huge"}}]}, "governance.rules.match.risk"),
    ({"defaults": {"high": "ALLOW"}}, "governance.defaults.high"),
    ({"defaults": {"critical": "ALLOW"}}, "governance.defaults.critical"),
    ({"approval": {"timeout_seconds": 0}}, "governance.approval.timeout_seconds"),
    ({"approval": {"approvals_required": 9}}, "governance.approval.approvals_required"),
    ({"rules": [{"name": "r", "decision": "ALLOW"}, {"name": "r", "decision": "DENY"}]}, "governance.rules"),
    ({"unknown": 1}, "governance.unknown"),
])
def test_invalid_governance_blocks_are_refused_by_field(governance, field):
    content = deepcopy(BOOTSTRAP_CONTENT)
    content["governance"] = governance
    errors = validate_content(content)
    assert field in [e["field"] for e in errors], errors
