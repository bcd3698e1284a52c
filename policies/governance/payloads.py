"""The response bodies of ``/api/v1/governance/...`` (and of the MCP governance tools), one
pydantic model each, rendered into the OpenAPI document like ``notifications.payloads``."""
from typing import Literal

from pydantic import Field

from notifications.payloads import EPOCH, FreeObject, Payload

from .models import STATES
from .schema import OUTCOMES, RISKS


class GovernanceDecision(Payload):
    """``service.Decision.as_dict``."""

    id: str
    outcome: Literal[OUTCOMES] = Field(description="What the governance rules said.")
    state: Literal[STATES] = Field(description="pending | approved | denied | expired.")
    allowed: bool = Field(description="The action may go ahead now (`state` is approved).")
    approval_id: str | None = Field(description="For REQUIRE_APPROVAL: the id to check.")
    approval_notification_ids: list[str] = Field(description="The require_ack notifications approvers answer.")
    action: str
    agent_id: str | None
    autonomy_mode: str | None
    intent: str | None
    resource: str | None
    risk: Literal[RISKS]
    reason: str
    context: FreeObject
    rule: str | None = Field(description="The matching rule; null: a risk default.")
    policy_id: str | None
    policy_version: int | None
    policy_hash: str | None
    revision: int = Field(description="The policy revision the decision was made under.")
    snapshot_hash: str
    approvals_required: int
    approval_timeout_seconds: float | None
    approver_channels: list[str]
    approved_by: list[str]
    decided_by: str | None = Field(description="Who settled it (`uns-policy` for ALLOW/DENY).")
    decided_at: float | None = Field(description=EPOCH)
    decided_at_iso: str | None
    principal: str
    created_at: float = Field(description=EPOCH)
    created_at_iso: str
    created: bool = Field(description="False for an idempotent repeat or a read.")


class GovernanceApproval(Payload):
    channels: list[str]
    timeout_seconds: float
    approvals_required: int


class GovernanceIdempotency(Payload):
    outcome: Literal["new", "repeat", "conflict"]
    decision_id: str | None


class GovernanceSimulation(Payload):
    """``policies.simulation.simulate_governance``."""

    revision: int
    snapshot_hash: str
    initialized: bool
    outcome: Literal[OUTCOMES]
    rule: str | None
    reason: str
    policy_id: str | None
    policy_version: int | None
    policy_hash: str | None
    approval: GovernanceApproval | None
    idempotency: GovernanceIdempotency
