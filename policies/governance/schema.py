"""The governance block of policy content and the governance request: pydantic models on the
base every UNS verb shares (``core.schema.Schema``: strict JSON types, unknown
members refused, every problem reported at once).

A policy's content may carry one optional, self-contained ``governance`` member (policy schema
v1; ``policies.content.validate_content`` hands it to ``validate_block``)::

    "governance": {
      "defaults": {"low": "ALLOW", "medium": "REQUIRE_APPROVAL", "high": "DENY", "critical": "DENY"},
      "approval": {"channels": ["console"], "timeout_seconds": 900, "approvals_required": 1},
      "rules": [
        {"name": "prod-deploys-need-a-human",
         "match": {"action": "deploy.*", "resource": "prod/*", "risk": ["high", "critical"]},
         "decision": "REQUIRE_APPROVAL",
         "approval": {"channels": ["ops-pager"], "timeout_seconds": 600, "approvals_required": 2}},
        {"name": "no-deletes-by-autonomous-agents",
         "match": {"action": "db.delete*", "autonomy_mode": "autonomous"}, "decision": "DENY"}
      ]
    }

Matchers (``rules[].match``; a rule matches when every matcher given matches; a list means "any
of"): ``action``, ``agent_id``, ``autonomy_mode``, ``intent``, ``resource`` (shell-style
patterns, ``fnmatch.fnmatchcase``: ``*``, ``?``, ``[...]``; a value without those characters
matches only itself) and ``risk`` (``low`` | ``medium`` | ``high`` | ``critical``). A request that
lacks a field never matches a matcher on it.

``defaults`` (per declared risk, when no rule matches) and ``approval`` (the approval settings a
REQUIRE_APPROVAL default, or a rule without its own ``approval``, uses) are optional; what is
left out is ``BUILTIN_DEFAULTS`` / ``BUILTIN_APPROVAL``. ``high`` and ``critical`` defaults may
not be ``ALLOW``: an unmatched high-risk action fails closed, whatever the policy says.
"""
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, ValidationError, field_validator, model_validator

from core.keys import canonical_json
from core.schema import ChannelName, Schema, errors_of, field_problem


ALLOW, DENY, REQUIRE_APPROVAL = "ALLOW", "DENY", "REQUIRE_APPROVAL"
OUTCOMES = (ALLOW, DENY, REQUIRE_APPROVAL)
RISKS = ("low", "medium", "high", "critical")
HIGH_RISKS = ("high", "critical")
MATCHERS = ("action", "agent_id", "autonomy_mode", "intent", "resource", "risk")
MAX_APPROVAL_TIMEOUT_SECONDS = 7 * 86400
MAX_APPROVALS_REQUIRED = 5
MAX_CONTEXT_BYTES = 8 * 1024

# The documented fallback when no rule of any ACTIVE policy matches (README, "Governance"): low
# risk is allowed, medium risk needs one approval on the console, high and critical risk are
# denied. An undeclared risk is ``high`` (GovernanceRequest.risk), so it is denied too.
BUILTIN_DEFAULTS = {"low": ALLOW, "medium": REQUIRE_APPROVAL, "high": DENY, "critical": DENY}
BUILTIN_APPROVAL = {"channels": ["console"], "timeout_seconds": 900.0, "approvals_required": 1}

Outcome = Literal[OUTCOMES]
Risk = Literal[RISKS]
Pattern = Annotated[str, Field(min_length=1, max_length=255)]


def _listify(value):
    return [value] if isinstance(value, str) else value


# A matcher: one value or a list of them ("any of").
Patterns = Annotated[list[Pattern], BeforeValidator(_listify), Field(min_length=1, max_length=64)]
Risks = Annotated[list[Risk], BeforeValidator(_listify), Field(min_length=1)]


class ApprovalSettings(Schema):
    """Who must approve and how long they have (a REQUIRE_APPROVAL rule's ``approval``)."""

    channels: Annotated[list[ChannelName], Field(min_length=1, max_length=16,
                                                 description="Channels the approval request is sent to.")]
    timeout_seconds: float = Field(gt=0, le=MAX_APPROVAL_TIMEOUT_SECONDS,
                                   description="Seconds the approvers have once the request reached them; then denied.")
    approvals_required: int = Field(1, ge=1, le=MAX_APPROVALS_REQUIRED,
                                    description="Distinct approvers needed; one DISMISS denies.")


class PartialApproval(Schema):
    channels: Annotated[list[ChannelName] | None, Field(min_length=1, max_length=16)] = None
    timeout_seconds: float | None = Field(None, gt=0, le=MAX_APPROVAL_TIMEOUT_SECONDS)
    approvals_required: int | None = Field(None, ge=1, le=MAX_APPROVALS_REQUIRED)


class RuleMatch(Schema):
    action: Patterns | None = None
    agent_id: Patterns | None = None
    autonomy_mode: Patterns | None = None
    intent: Patterns | None = None
    resource: Patterns | None = None
    risk: Risks | None = None


class GovernanceRule(Schema):
    name: Annotated[str, Field(min_length=1, max_length=128)]
    match: RuleMatch = Field(default_factory=RuleMatch)
    decision: Outcome
    approval: PartialApproval | None = None
    reason: Annotated[str, Field(max_length=500)] | None = None


class RiskDefaults(Schema):
    low: Outcome | None = None
    medium: Outcome | None = None
    high: Literal[DENY, REQUIRE_APPROVAL] | None = None
    critical: Literal[DENY, REQUIRE_APPROVAL] | None = None


class GovernanceBlock(Schema):
    """The ``governance`` member of policy content (module docstring)."""

    defaults: RiskDefaults = Field(default_factory=RiskDefaults)
    approval: PartialApproval | None = None
    rules: Annotated[list[GovernanceRule], Field(max_length=500)] = Field(default_factory=list)

    @model_validator(mode="after")
    def _unique_names(self):
        names = [r.name for r in self.rules]
        if len(names) != len(set(names)):
            raise field_problem("rule names must be unique", "rules")
        return self


def validate_block(block) -> list[dict]:
    """``[{"field", "message"}]`` problems of a content's ``governance`` member, fields prefixed
    ``governance.`` (empty when valid). Pure."""
    if not isinstance(block, dict):
        return [{"field": "governance", "message": "must be an object"}]
    try:
        GovernanceBlock.model_validate(block)
    except ValidationError as exc:
        return [{"field": f"governance.{e['field']}".rstrip("."), "message": e["message"]} for e in errors_of(exc)]
    return []


class GovernanceRequest(Schema):
    """``POST /api/v1/governance/decisions``, the MCP tool ``request_approval`` and
    ``policies.governance.decide``: may ``agent_id`` perform ``action`` now?"""

    action: Annotated[str, Field(min_length=1, max_length=255,
                                 description="What the agent wants to do, e.g. `deploy.release`.")]
    agent_id: Annotated[str, Field(max_length=255)] | None = None
    autonomy_mode: Annotated[str, Field(max_length=64)] | None = None
    intent: Annotated[str, Field(max_length=64)] | None = None
    resource: Annotated[str, Field(max_length=500)] | None = Field(None, description="What it acts on, e.g. `prod/db`.")
    risk: Risk = Field("high", description="The declared risk; undeclared counts as `high` (fails closed).")
    reason: Annotated[str, Field(max_length=2000)] | None = Field(None, description="Why; shown to approvers.")
    context: dict[str, Any] | None = Field(default_factory=dict, description=(
        f"Free JSON shown to approvers and stored with the decision, at most {MAX_CONTEXT_BYTES} bytes."))
    idempotency_key: Annotated[str, Field(max_length=255)] | None = Field(None, description=(
        "A retry with the same key and request returns the same decision; another request: `idempotency_conflict`."))

    @field_validator("context")
    @classmethod
    def _context_within_limits(cls, value):
        if value is None:
            return {}
        if len(canonical_json(value)) > MAX_CONTEXT_BYTES:
            raise field_problem(f"must be at most {MAX_CONTEXT_BYTES} bytes as JSON")
        return value


class ApprovalWait(Schema):
    """The MCP tool ``check_approval``: an approval id and an optional bounded wait."""

    approval_id: Annotated[str, Field(min_length=1, max_length=64, description="The decision / approval id.")]
    wait_seconds: float = Field(0, ge=0, le=30, description="Wait up to this many seconds (max 30) while pending.")
