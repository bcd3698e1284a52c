"""The response bodies of the policy endpoints (``/api/v1/policies...``), one pydantic model
each, beside the read models that build them (``policies.selectors``, ``policies.simulation``);
rendered into the OpenAPI document like ``notifications.payloads``. Request bodies are the
verbs' input schemas, ``policies/schemas.py``."""
from typing import Any, Literal

from pydantic import Field

from notifications.payloads import EPOCH, FreeObject, Payload, optional
from notifications.runtime import dedup, intake

from .models import STATUSES


# ``policies.selectors.version_view``.
class PolicyVersion(Payload):
    policy_id: str
    version: int
    status: Literal[STATUSES]
    description: str
    cloned_from: str | None = Field(description="`<policy_id>@<version>` of the source.")
    content_hash: str | None = Field(description="SHA-256 of the canonical content JSON.")
    created_by: str
    created_at: float = Field(description=EPOCH)
    created_at_iso: str
    activated_by: str | None
    activated_at: float | None = Field(description=EPOCH)
    activated_at_iso: str | None
    retired_by: str | None
    retired_at: float | None = Field(description=EPOCH)
    retired_at_iso: str | None
    content: FreeObject | None = optional("Policy content (schema v1, `policies/content.py`); detail views only.")


class PolicyActiveEntry(Payload):
    policy_id: str
    version: int
    content_hash: str


# ``policies.selectors.current_view`` and ``snapshot_view``.
class PolicyRevision(Payload):
    revision: int
    snapshot_hash: str
    reason: str
    created_by: str
    created_at: float = Field(description=EPOCH)
    created_at_iso: str | None
    active: list[PolicyActiveEntry] = Field(description="The ACTIVE set in evaluation order.")


class PolicyList(Payload):
    current: PolicyRevision | None = Field(description="The current revision; null before the first intake.")
    items: list[PolicyVersion]


class PolicyRevisionList(Payload):
    items: list[PolicyRevision]


# What ``activate`` and ``retire`` answer.
class PolicyTransition(Payload):
    policy: PolicyVersion
    replaced: PolicyVersion | None = Field(description="The version an activation retired.")
    revision: int = Field(description="The current revision after the call.")
    changed: bool = Field(description="False for an idempotent repeat.")


class PolicySimulationDedup(Payload):
    role: Literal[dedup.ROLES]
    coalescing: bool = Field(description="False when the request has no dedup_key or the window is 0.")
    dedup_key: str | None
    owner_id: str | None
    generation: int | None
    window_seconds: float = optional()


class PolicySimulationIdempotency(Payload):
    outcome: Literal[intake.IDEMPOTENCY_OUTCOMES]
    notification_id: str | None


class PolicySimulationEscalationLevel(Payload):
    level: int = Field(description="1-based.")
    channels: list[str]
    wait_seconds: float = Field(description="Seconds waited for a response after the level fired.")
    repeat: int = Field(description="How many times the level is sent.")


class PolicySimulationEscalationChain(Payload):
    levels: list[PolicySimulationEscalationLevel]
    schedule: list[dict[str, Any]] = Field(description=(
        "Each step `{level, repetition, channels, after_timeout_seconds}` in order, then "
        "`{exhausted: true, after_timeout_seconds}`: seconds after the acknowledgement deadline when "
        "nobody responds. Empty without a chain."))


# ``policies.simulation.simulate``.
class PolicySimulation(Payload):
    revision: int
    snapshot_hash: str
    initialized: bool = Field(description="False: no revision is stored yet; shown is what cold init would write.")
    policy_id: str
    policy_version: int | None
    policy_hash: str
    rule: str | None
    effective: FreeObject
    effective_hash: str
    dedup: PolicySimulationDedup
    idempotency: PolicySimulationIdempotency
    escalation_chain: PolicySimulationEscalationChain
