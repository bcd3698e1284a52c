"""The input schemas of the policy verbs (``/api/v1/policies``), on the base every UNS verb shares
(``notifications.runtime.schemas.Schema``: strict JSON types, unknown members refused, parsed by
``notifications.runtime.schemas.parse``, rendered into the OpenAPI document by the same
extension). Simulation takes ``notifications.runtime.schemas.SimulateRequest``. The governance
models (the content's ``governance`` block and ``POST /api/v1/governance/decisions``) are defined
in ``policies/governance/schema.py`` (``policies.content`` validates with them without importing
the store) and re-exported here.

The policy store stays the authority on the *values*: ``policy_id``'s pattern (``invalid_policy_id``)
and the content (``invalid_policy_content``, schema v1 in ``policies/content.py``) are checked by
``policies.store``, which names each bad field; the pattern below only describes it.
"""
from typing import Annotated, Any

from pydantic import Field

from notifications.runtime.schemas import Schema

from .governance.schema import ApprovalWait, GovernanceBlock, GovernanceRequest  # noqa: F401 (re-exported)
from .store import POLICY_ID_RE

# A policy id: the pattern is described, not enforced here (the store answers ``invalid_policy_id``).
PolicyId = Annotated[str, Field(json_schema_extra={"pattern": f"^{POLICY_ID_RE.pattern}$"})]


class PolicyDraftRequest(Schema):
    """``POST /api/v1/policies``: a new DRAFT version."""

    policy_id: PolicyId = Field(description="The policy the version belongs to.")
    content: dict[str, Any] = Field(description="Policy content, schema v1.")


class PolicyEditRequest(Schema):
    """``PUT /api/v1/policies/{policy_id}/versions/{version}``: replace a DRAFT's content."""

    content: dict[str, Any] = Field(description="The new content of the DRAFT.")
    expected_hash: str | None = Field(None, description="The content hash the edit started from (409 when it moved).")


class PolicyCloneRequest(Schema):
    """``POST .../clone``: a new DRAFT with this version's content."""

    policy_id: PolicyId | None = Field(None, description="Clone into another policy id (default: the same).")


class PolicyTransitionRequest(Schema):
    """``POST .../activate`` and ``POST .../retire``: no members."""
