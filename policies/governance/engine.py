"""``DecisionEngine``: governance rules evaluated against one frozen ACTIVE policy set. Pure: no
database, no clock, no I/O; unit-tested over a table of rules and contexts
(tests/policies/test_governance_engine.py).

Order (the same shape as notification rules, ``policies.content.resolve_in_set``): the ACTIVE
policies in their snapshot's evaluation order; within a policy its ``governance.rules`` in order;
the first matching rule wins. No rule of any policy matches: the declared risk's default from the
default policy's ``governance.defaults`` (``uns-default``), else ``schema.BUILTIN_DEFAULTS``.
An ``approval`` is completed from the deciding policy's ``governance.approval``, then
``schema.BUILTIN_APPROVAL``.
"""
from dataclasses import dataclass, field
from fnmatch import fnmatchcase

from policies.content import DEFAULT_POLICY_ID

from .schema import BUILTIN_APPROVAL, BUILTIN_DEFAULTS, HIGH_RISKS, MATCHERS, REQUIRE_APPROVAL, ALLOW, DENY


@dataclass(frozen=True)
class Verdict:
    """What the engine decided: ``outcome`` (ALLOW | DENY | REQUIRE_APPROVAL), the ``rule`` that
    matched (None: a risk default), the policy it came from (``policy_id``, ``policy_version``,
    ``policy_hash``: None when only the built-in defaults applied), ``reason`` (human-readable)
    and, for REQUIRE_APPROVAL, ``approval`` ``{channels, timeout_seconds, approvals_required}``."""

    outcome: str
    rule: str | None
    reason: str
    policy_id: str | None = None
    policy_version: int | None = None
    policy_hash: str | None = None
    approval: dict | None = field(default=None)


def _matches_one(pattern: str, value) -> bool:
    return isinstance(value, str) and fnmatchcase(value, pattern)


def rule_matches(match: dict, request: dict) -> bool:
    """Whether every matcher of ``match`` matches ``request`` (a GovernanceRequest dict); a list
    is "any of"; a field the request lacks (None) never matches."""
    for key in MATCHERS:
        expected = match.get(key)
        if expected is None:
            continue
        patterns = [expected] if isinstance(expected, str) else expected
        if not any(_matches_one(p, request.get(key)) for p in patterns):
            return False
    return True


def _approval(block: dict, rule_approval: dict | None) -> dict:
    merged = dict(BUILTIN_APPROVAL)
    for layer in (block.get("approval") or {}, rule_approval or {}):
        merged.update({k: v for k, v in layer.items() if v is not None})
    merged["timeout_seconds"] = float(merged["timeout_seconds"])
    merged["approvals_required"] = int(merged["approvals_required"])
    merged["channels"] = list(merged["channels"])
    return merged


class DecisionEngine:
    """Evaluates governance rules against ``policies``: the ACTIVE set of one revision in
    evaluation order (``policies.resolution.Current.policies``: ``{"policy_id", "version",
    "content_hash", "content"}`` items). Holds nothing but that frozen list."""

    def __init__(self, policies: list[dict]):
        self.policies = policies

    @classmethod
    def for_current(cls, current) -> "DecisionEngine":
        """An engine over a ``policies.resolution.Current`` (one revision's verified snapshot)."""
        return cls(current.policies)

    def evaluate(self, request: dict) -> Verdict:
        """The verdict for ``request`` (a validated ``GovernanceRequest`` dict). Never raises on
        a valid request: an unmatched high or critical risk is DENY unless the default policy
        says REQUIRE_APPROVAL (validation refuses ALLOW there), so it fails closed."""
        for entry in self.policies:
            block = entry["content"].get("governance") or {}
            for rule in block.get("rules", []):
                if rule_matches(rule.get("match") or {}, request):
                    outcome = rule["decision"]
                    return Verdict(
                        outcome=outcome, rule=rule["name"],
                        reason=rule.get("reason") or f"rule {rule['name']!r} of policy {entry['policy_id']!r}",
                        policy_id=entry["policy_id"], policy_version=entry.get("version"),
                        policy_hash=entry.get("content_hash"),
                        approval=_approval(block, rule.get("approval")) if outcome == REQUIRE_APPROVAL else None)
        risk = request.get("risk") or "high"
        default_entry = next((e for e in self.policies if e["policy_id"] == DEFAULT_POLICY_ID), None)
        block = (default_entry["content"].get("governance") or {}) if default_entry else {}
        outcome = (block.get("defaults") or {}).get(risk) or BUILTIN_DEFAULTS[risk]
        if risk in HIGH_RISKS and outcome == ALLOW:  # defence in depth: validation already refuses it
            outcome = DENY
        configured = bool((block.get("defaults") or {}).get(risk))
        return Verdict(
            outcome=outcome, rule=None,
            reason=f"no governance rule matched; the default for {risk} risk is {outcome}",
            policy_id=default_entry["policy_id"] if configured else None,
            policy_version=default_entry.get("version") if configured else None,
            policy_hash=default_entry.get("content_hash") if configured else None,
            approval=_approval(block, None) if outcome == REQUIRE_APPROVAL else None)
