"""The input schemas of the policy verbs (``/api/v1/policies``), on the base every UNS verb shares
(``core.schema.Schema``: strict JSON types, unknown members refused, parsed by
``core.schema.parse``, rendered into the OpenAPI document by the same
extension). Simulation takes ``notifications.runtime.schemas.SimulateRequest``. The governance
models (the content's ``governance`` block and ``POST /api/v1/governance/decisions``) are defined
in ``policies/governance/schema.py`` (``policies.content`` validates with them without importing
the store) and re-exported here.

The policy store stays the authority on the *values*: ``policy_id``'s pattern (``invalid_policy_id``)
and the content (``invalid_policy_content``, schema v1 in ``policies/content.py``) are checked by
``policies.store``, which names each bad field; the pattern below only describes it.
"""
import re
from typing import Annotated, Any

from pydantic import AfterValidator, ConfigDict, Field, TypeAdapter, ValidationError
from pydantic_core import PydanticCustomError

from core.schema import MAX_CHANNELS, ChannelName, Schema, errors_of

from .governance.schema import ApprovalWait, GovernanceBlock, GovernanceRequest  # noqa: F401 (re-exported)

# A policy id: a letter or digit, then up to 63 of letters, digits, ``.``, ``_`` and ``-``. The
# request models describe the pattern (``PolicyId``); ``is_policy_id`` is the one check.
POLICY_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


def is_policy_id(value) -> bool:
    """Whether ``value`` is a string shaped as a policy id (``POLICY_ID_RE``, whole string)."""
    return isinstance(value, str) and POLICY_ID_RE.fullmatch(value) is not None

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


# -- failover: the ``fallback_channels`` setting of policy content -----------------

MAX_FALLBACKS = 4  # fallbacks per channel: a chain of at most 5 channels per obligation slot


def _fallback_chains(value: dict[str, list[str]]) -> dict[str, list[str]]:
    for primary, fallbacks in value.items():
        if primary in fallbacks:
            raise PydanticCustomError("uns", "a channel cannot be its own fallback", {"field": primary})
        if len(set(fallbacks)) != len(fallbacks):
            raise PydanticCustomError("uns", "names a fallback twice", {"field": primary})
    return value


FallbackChannels = Annotated[
    dict[ChannelName, Annotated[list[ChannelName], Field(min_length=1, max_length=MAX_FALLBACKS)]],
    Field(max_length=MAX_CHANNELS, description=(
        "Failover: {channel: [fallback, ...]}. When the channel's delivery fails permanently, or "
        "fails on the cycle's last attempt, its fallbacks are tried in order (same lease rules); "
        "the notification is dead-lettered only when the last one fails too.")),
    AfterValidator(_fallback_chains),
]
_FALLBACKS = TypeAdapter(FallbackChannels, config=ConfigDict(strict=True))


def fallback_channels_errors(value, prefix: str) -> list[dict]:
    """``[{"field", "message"}]`` problems of a ``fallback_channels`` setting (empty: valid),
    fields under ``prefix`` (``defaults.fallback_channels``). The one rule of its shape: an
    object of at most ``MAX_CHANNELS`` channel names, each mapped to 1..``MAX_FALLBACKS``
    distinct channel names other than itself. Called by ``content.validate_content``."""
    try:
        _FALLBACKS.validate_python(value)
    except ValidationError as exc:
        found = []
        for e in errors_of(exc):
            field = e["field"]
            found.append({"field": f"{prefix}.{field}" if field else prefix, "message": e["message"]})
        return found
    return []
