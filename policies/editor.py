"""What the admin's policy editor generates its form from: the pydantic model of a policy's
``defaults`` settings (``PolicySettings``) and its JSON Schema with the names of the channels that
exist offered as choices.

The model describes; it does not decide. What content is valid is ``content.validate_content``
alone (the editor's check as the admin types and every save call it), so the form has no rule
of its own to drift from the store, the HTTP API and ``manage.py uns_policy``. A test holds the
model's members and choices to ``content.BUILTIN_DEFAULTS`` and ``content.DELIVERY_MODES``.
"""
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from .content import DELIVERY_MODES


class BackoffSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", title="backoff")

    base_seconds: float = Field(description="Seconds before the first retry (>= 0).")
    factor: float = Field(description="Each retry waits this many times the one before (>= 0).")
    cap_seconds: float = Field(description="No retry waits longer than this many seconds (>= 0).")
    jitter: float = Field(description="Random spread of each wait, 0 to 1.")


class PolicySettings(BaseModel):
    """The settings of ``defaults`` (every one present) and of a rule's ``set`` (any subset)."""

    model_config = ConfigDict(extra="forbid", title="settings")

    channels: list[str] = Field(description="Channels used when a request names none.")
    allowed_channels: list[str] | None = Field(
        description="Channels a request may name; null allows every configured channel.")
    delivery_mode: Literal[DELIVERY_MODES] = Field(
        description="GUARANTEED retries until delivered or dead-lettered; BEST_EFFORT tries once per channel.")
    max_attempts: int = Field(description="Delivery attempts per channel before the dead letter queue (>= 1).")
    backoff: BackoffSettings = Field(description="Waits between attempts.")
    dedup_window_seconds: float = Field(description="Requests with the same dedup_key within this window coalesce (>= 0).")
    require_ack: bool = Field(description="A responder must acknowledge the notification.")
    ack_timeout_minutes: float = Field(description="Minutes to wait for the acknowledgement (> 0).")
    escalation: dict[str, Any] | None = Field(
        description="null, {\"target\": channel} or {\"levels\": [...]}: edit it in the JSON below.")


def settings_schema(channel_names: list[str]) -> dict:
    """``PolicySettings``' JSON Schema, every channel-name list offering ``channel_names``
    (``items.enum``; the JSON editor still takes any name, and activation checks they exist)."""
    schema = PolicySettings.model_json_schema()
    for name in ("channels", "allowed_channels"):
        prop = schema["properties"][name]
        for variant in prop.get("anyOf", [prop]):
            if variant.get("type") == "array":
                variant["items"] = {"type": "string", "enum": list(channel_names)}
    return schema
