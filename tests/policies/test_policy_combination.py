"""How several ACTIVE policies combine (``policies.content``), without a database: evaluation
order by priority then id with the default policy last; the first policy with a matching rule
resolves the request over its own defaults; otherwise the default policy's defaults apply."""
import pytest

from core.errors import InvalidRequest
from policies.content import DEFAULT_POLICY_ID, order_policies, resolve_in_set, validate_content

from policyhelpers import content


def entry(policy_id, body, version=1):
    return {"policy_id": policy_id, "version": version, "content_hash": "h", "content": body}


def request(**fields):
    base = {"source": "svc", "severity": "info", "intent": None, "agent_id": None, "autonomy_mode": None,
            "channels": [], "require_ack": False}
    return {**base, **fields}


def test_order_is_priority_descending_then_id_with_the_default_last():
    entries = [entry(DEFAULT_POLICY_ID, content(priority=1000)), entry("b", content(priority=5)),
               entry("a", content(priority=5)), entry("z", content(priority=50)), entry("c", content())]
    assert [e["policy_id"] for e in order_policies(entries)] == ["z", "a", "b", "c", DEFAULT_POLICY_ID]


def test_the_first_policy_with_a_matching_rule_resolves_over_its_own_defaults():
    billing = content(priority=10, max_attempts=2, rules=[
        {"name": "billing", "match": {"source": "billing"}, "set": {"delivery_mode": "BEST_EFFORT"}}])
    default = content(max_attempts=9)
    ordered = order_policies([entry(DEFAULT_POLICY_ID, default), entry("billing", billing)])
    chosen, effective, rule = resolve_in_set(ordered, request(source="billing"))
    assert chosen["policy_id"] == "billing" and rule == "billing"
    assert effective["max_attempts"] == 2 and effective["delivery_mode"] == "BEST_EFFORT"


def test_no_matching_rule_falls_to_the_default_policy_rules_then_defaults():
    billing = content(priority=10, max_attempts=2, rules=[
        {"name": "billing", "match": {"source": "billing"}, "set": {}}])
    ordered = order_policies([entry(DEFAULT_POLICY_ID, content(max_attempts=9)), entry("billing", billing)])
    chosen, effective, rule = resolve_in_set(ordered, request(source="other", severity="critical"))
    assert (chosen["policy_id"], rule, effective["require_ack"]) == (DEFAULT_POLICY_ID, "critical-needs-ack", True)
    chosen, effective, rule = resolve_in_set(ordered, request(source="other"))
    assert (chosen["policy_id"], rule, effective["max_attempts"]) == (DEFAULT_POLICY_ID, None, 9)


def test_higher_priority_wins_when_two_policies_match():
    low = content(priority=1, rules=[{"name": "low", "match": {"severity": "error"}, "set": {"max_attempts": 1}}])
    high = content(priority=2, rules=[{"name": "high", "match": {"severity": "error"}, "set": {"max_attempts": 7}}])
    ordered = order_policies([entry("low", low), entry("high", high), entry(DEFAULT_POLICY_ID, content())])
    chosen, effective, rule = resolve_in_set(ordered, request(severity="error"))
    assert (chosen["policy_id"], rule, effective["max_attempts"]) == ("high", "high", 7)


def test_a_set_without_a_default_policy_and_no_match_is_a_lookup_error():
    with pytest.raises(LookupError):
        resolve_in_set([entry("x", content(rules=[]))], request())


def test_allowed_channels_of_the_resolving_policy_are_enforced():
    strict = content(priority=5, allowed_channels=["console"], rules=[
        {"name": "all", "match": {"source": "svc"}, "set": {}}])
    with pytest.raises(InvalidRequest) as err:
        resolve_in_set([entry("strict", strict), entry(DEFAULT_POLICY_ID, content())],
                       request(channels=["pager"]))
    assert err.value.code == "channel_not_allowed"


@pytest.mark.parametrize("bad,field", [
    ({"priority": "high"}, "priority"),
    ({"priority": 1.5}, "priority"),
    ({"description": 3}, "description"),
    ({"surprise": 1}, "surprise"),
])
def test_top_level_keys_are_validated_by_name(bad, field):
    errors = validate_content({**content(), **bad})
    assert [e["field"] for e in errors] == [field]
