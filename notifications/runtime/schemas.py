"""The input model of each UNS verb, one definition parsed by every transport.

One pydantic v2 model per verb, on ``core.schema.Schema``: ``SendNotificationRequest`` (submit),
``SimulateRequest`` (policy simulation), ``RespondRequest`` (ack and dismiss), ``SnoozeRequest``,
``EscalateRequest``, ``ReplayRequest`` and ``ResolveRequest`` (both empty bodies), the bulk-action
and channel bodies; the policy draft bodies are in ``policies/schemas.py``. ``core.schema.parse``
is the one parser: the HTTP views, the ``/ws/respond/`` consumer, the MCP tools and
``intake.accept`` call it. The OpenAPI document and the MCP tool input schemas are both generated
from these classes (``tests/api/test_input_schemas.py`` compares them).
"""
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, field_validator

from core import channel_kinds
from core.keys import canonical_json
from core.schema import MAX_CHANNELS, ChannelName, Schema, field_problem
from oncall import rotation



SEVERITIES = ("info", "warning", "error", "critical")
MAX_METADATA_BYTES = 16 * 1024
MAX_TITLE = 500
# Limits of the responder verbs; the runtime's verbs parse their arguments with these models too.
MIN_SNOOZE_SECONDS = 60
MAX_SNOOZE_SECONDS = 86400
MAX_REASON_LENGTH = 1000
RESERVED_METADATA_KEY = "uns_resolution"
# Where a governance approval notification carries its decision (policies/governance/bridge.py).
# Reserved like ``uns_resolution``: only intake writes it (``intake.accept(approval=...)``, for the
# governance bridge), so no producer can make a notification that looks like an approval.
GOVERNANCE_METADATA_KEY = "uns_governance"
RESERVED_METADATA_KEYS = (RESERVED_METADATA_KEY, GOVERNANCE_METADATA_KEY)


def approval_request(notification: dict | None) -> dict | None:
    """The governance request an approval notification carries (its ``metadata.uns_governance``
    object, with a string ``decision_id``), or None for any other notification. The one rule for
    "this notification is an approval": an approval is settled only by an explicit approve or a
    deny, never by a bulk action (``responses.acknowledge``, ``bulk``), and read models show it as
    a decision (``policies.governance.bridge.approval_summary``)."""
    meta = ((notification or {}).get("metadata") or {}).get(GOVERNANCE_METADATA_KEY)
    if not isinstance(meta, dict) or not isinstance(meta.get("decision_id"), str):
        return None
    return meta



def not_blank(value: str) -> str:
    if not value.strip():
        raise field_problem("must not be blank")
    return value


# A required text field: a string with a non-space character, at most ``n`` characters.
def _required_text(max_length: int, description: str):
    return Annotated[str, Field(min_length=1, max_length=max_length, description=description),
                     AfterValidator(not_blank)]


def _text(max_length: int, description: str | None = None):
    return Annotated[str | None, Field(max_length=max_length, description=description)]


FreeObject = dict[str, Any]


class SendNotificationRequest(Schema):
    """The request of ``POST /api/v1/notifications`` and the MCP tool ``send_notification``
    (architecture: SendNotificationRequest). Unknown members are refused; the principal is the
    caller's credential, never a member."""

    source: _required_text(255, "Who or what raises it; part of the idempotency scope.")
    title: _required_text(MAX_TITLE, "One line saying what happened.")
    body: _text(20000, "Longer text.") = ""
    severity: Literal[SEVERITIES] = Field("info", description="Default `info`.")
    intent: _text(64) = None
    channels: Annotated[list[ChannelName] | None, Field(
        max_length=MAX_CHANNELS, description="Configured channel names; empty or absent: the policy's channels.",
        default_factory=list)]
    idempotency_key: _text(255, "A retry with the same key and request returns the same notification; the same "
                                "key with another request is `idempotency_conflict`.") = None
    dedup_key: _text(255, "Coalesce duplicates of live work.") = None
    require_ack: bool = Field(False, description="Ask for an acknowledgement (a policy may require one anyway).")
    metadata: FreeObject | None = Field(
        default_factory=dict,
        description=f"A JSON object, at most {MAX_METADATA_BYTES} bytes as JSON; `{RESERVED_METADATA_KEY}` and `{GOVERNANCE_METADATA_KEY}` are reserved.")
    agent_id: _text(255) = None
    autonomy_mode: _text(64) = None

    @field_validator("body")
    @classmethod
    def _body_defaults_to_empty(cls, value):
        return "" if value is None else value

    @field_validator("channels")
    @classmethod
    def _channels_default_to_empty(cls, value):
        return [] if value is None else value

    @field_validator("metadata")
    @classmethod
    def _metadata_within_limits(cls, value):
        if value is None:
            return {}
        for reserved in RESERVED_METADATA_KEYS:
            if reserved in value:
                raise field_problem("is reserved for UNS", f"metadata.{reserved}")
        if len(canonical_json(value)) > MAX_METADATA_BYTES:
            raise field_problem(f"must be at most {MAX_METADATA_BYTES} bytes as JSON")
        return value


class SimulateRequest(SendNotificationRequest):
    """The request of ``POST /api/v1/policies/simulate`` and the MCP tool ``simulate_policy``: a
    SendNotificationRequest whose ``title`` may be left out (it does not take part in policy
    resolution)."""

    title: _required_text(MAX_TITLE, "Default `policy simulation`.") = "policy simulation"


class RespondRequest(Schema):
    """The body of ack and dismiss (HTTP ``.../ack``, ``.../dismiss``; WebSocket ``ack``/``dismiss``
    frames; MCP ``acknowledge``/``dismiss``)."""

    metadata: FreeObject | None = Field(None, description="Recorded with the response.")
    approve: bool = Field(False, description=(
        "For an ACK of a governance approval notification: true approves the agent's action. An ACK "
        "of an approval without it is refused (409 `approval_not_explicit`): an approval is granted "
        "only when the approver says so. Refused on a dismiss (a dismiss of an approval denies); "
        "ignored for any other notification."))


class SnoozeRequest(Schema):
    """The body of a snooze (HTTP ``.../snooze``; WebSocket ``snooze`` frames)."""

    seconds: float = Field(ge=MIN_SNOOZE_SECONDS, le=MAX_SNOOZE_SECONDS,
                           description="The new deadline is now + seconds.")
    metadata: FreeObject | None = Field(None, description="Recorded with the snooze.")


class EscalateRequest(Schema):
    """The body of ``POST .../escalate``."""

    reason: str | None = Field(None, max_length=MAX_REASON_LENGTH, description="Why; recorded on the ESCALATED event.")


class ReplayRequest(Schema):
    """The body of ``POST /api/v1/dlq/{id}/replay``: none (an empty object or no body)."""


# The most items one bulk action takes (the N an operator confirms) and the most one run settles.
MAX_BULK_ITEMS = 5000
MAX_BULK_CHUNK = 100


class BulkActionRequest(Schema):
    """``POST /api/v1/bulk-actions``: act on every item (at most ``expected``) of the list that
    ``filter`` selects: ``replay``/``resolve`` on the DLQ, ``ack``/``snooze`` on the inbox."""

    action: Literal["replay", "resolve", "ack", "snooze"]
    filter: FreeObject = Field(default_factory=dict, description=(
        "The list's filter, as its query parameters: the inbox's `q` (title or source contains), `source`, "
        "`severity`, `channel`, `dedup_key`; the DLQ's also `reason` (error contains); and `ids`, a selection. "
        "Parsed by `selectors.parse_list_filter`, the parser of the list itself."))
    expected: int = Field(ge=1, le=MAX_BULK_ITEMS, description="The N the operator confirmed: at most this many "
                                                                "items are taken, in list order.")
    seconds: int | None = Field(default=None, ge=MIN_SNOOZE_SECONDS, le=MAX_SNOOZE_SECONDS,
                                description="snooze only: postpone each deadline to now + seconds.")


class BulkRunRequest(Schema):
    """``POST /api/v1/bulk-actions/{id}/run``: settle up to ``limit`` more items."""

    limit: int = Field(default=MAX_BULK_CHUNK, ge=1, le=MAX_BULK_CHUNK)


class ResolveRequest(Schema):
    """The body of ``POST /api/v1/dlq/{id}/resolve``: none (an empty object or no body)."""




class ChannelCreateRequest(Schema):
    """The body of ``POST /api/v1/channels`` (``runtime.channels.create``). ``config`` is
    checked per kind by ``runtime.channels.validate_config``; ``secret`` (webhook signing key,
    SMTP password, the Apprise URLs separated by white space) is write-only."""

    name: ChannelName = Field(description="A slug: letters, digits, '-' or '_'.")
    kind: Literal[channel_kinds.KINDS]
    config: FreeObject = Field(default_factory=dict, description=(
        "webhook: url, timeout; email: to, from, host, port, security, username, timeout; apprise: timeout; "
        "console: none."))
    secret: str = Field("", max_length=8192, description="Write-only; never returned.")
    enabled: bool = True


class ChannelUpdateRequest(Schema):
    """The body of ``PATCH /api/v1/channels/{name}``: config members to change (``null``
    removes one); the result is validated whole (``runtime.channels.update``)."""

    config: FreeObject


class ChannelSecretRequest(Schema):
    """The body of ``POST /api/v1/channels/{name}/rotate-secret``: the new secret (``""``
    clears it where the kind allows none)."""

    secret: str = Field(max_length=8192, description="Write-only; never returned.")


class ChannelActionRequest(Schema):
    """The body of ``.../enable``, ``.../disable`` and ``.../test``: none."""




# --- on-call (``/api/v1/oncall``; ``runtime.oncall``, which checks every rule) -------------------

MAX_EPOCH = rotation.MAX_EPOCH  # the latest instant a schedule speaks of (year 3000)

class RestrictionBody(Schema):
    """A layer restriction: weekdays and a wall-clock window in the layer's zone."""

    days: list[int] = Field(default_factory=lambda: list(range(7)), description="0 Monday .. 6 Sunday.")
    start: str = Field(description="HH:MM")
    end: str = Field(description="HH:MM; 24:00 is midnight; at or before start: over midnight.")


class LayerRequest(Schema):
    """A rotation layer (``runtime.oncall.check_layer``)."""

    name: str = Field("", max_length=64)
    members: list[str] = Field(min_length=1, max_length=100, description="User names in rotation order.")
    rotation_unit: Literal["hours", "days", "weeks"] = "weeks"
    rotation_count: int = Field(1, ge=1, le=1000)
    start: str = Field(description="Local wall clock YYYY-MM-DDTHH:MM of the first hand-off, in time_zone.")
    time_zone: str = Field("UTC", description="IANA time zone name.")
    restrictions: list[RestrictionBody] = Field(default_factory=list, max_length=50)
    end: float | None = Field(None, ge=0, le=MAX_EPOCH, description="Epoch seconds the layer ends; null: open-ended.")


class ScheduleCreateRequest(Schema):
    """The body of ``POST /api/v1/oncall/schedules``."""

    name: str = Field(min_length=1, max_length=64, description="A slug: letters, digits, '-' or '_'.")
    description: str = Field("", max_length=2000)
    time_zone: str = Field("UTC", description="IANA time zone name, for display.")
    team: str | None = None
    layers: list[LayerRequest] = Field(default_factory=list, max_length=20,
                                       description="Lowest precedence first.")


class ScheduleUpdateRequest(Schema):
    """The body of ``PATCH /api/v1/oncall/schedules/{name}``: members to change."""

    description: str | None = Field(None, max_length=2000)
    time_zone: str | None = None
    team: str | None = Field(None, description="A team name; the empty string clears it.")


class OverrideRequest(Schema):
    """The body of ``POST .../overrides``: ``user`` on call from ``start`` to ``end``."""

    user: str = Field(min_length=1, max_length=150)
    start: float = Field(ge=0, le=MAX_EPOCH, description="Epoch seconds.")
    end: float = Field(ge=0, le=MAX_EPOCH, description="Epoch seconds (exclusive).")


class IcalImportRequest(Schema):
    """The body of ``POST .../import``: an iCalendar file's text; its events between ``start``
    and ``end`` (epoch seconds; default now .. now + 90 days) become overrides."""

    ical: str = Field(min_length=1, max_length=2_000_000)
    start: float | None = Field(None, ge=0, le=MAX_EPOCH)
    end: float | None = Field(None, ge=0, le=MAX_EPOCH)


class TeamRequest(Schema):
    """The body of ``POST /api/v1/oncall/teams`` and ``PATCH .../teams/{name}``."""

    name: str | None = Field(None, max_length=64, description="On create only.")
    description: str | None = Field(None, max_length=2000)
    members: list[str] | None = Field(None, max_length=100, description="User names in order.")


class ContactMethodCreateRequest(Schema):
    """A new contact method (unverified until ``.../verify`` succeeds)."""

    kind: Literal[channel_kinds.KINDS]
    config: FreeObject = Field(default_factory=dict, description="As a channel of the kind's.")
    secret: str = Field("", max_length=8192, description="Write-only; never returned.")
    label: str = Field("", max_length=64)
    position: int | None = Field(None, ge=0, description="The order it is tried in; default last.")


class ContactMethodUpdateRequest(Schema):
    """Members to change; a new config or secret makes the method UNVERIFIED."""

    label: str | None = Field(None, max_length=64)
    position: int | None = Field(None, ge=0)
    config: FreeObject | None = None
    secret: str | None = Field(None, max_length=8192)


class WhoIsOnCallRequest(Schema):
    """The arguments of the MCP tool ``who_is_on_call`` (``GET /api/v1/oncall/who``'s query)."""

    target: str = Field(min_length=1, max_length=160,
                        description="schedule:<name> (or a schedule's name), team:<name> or user:<name>.")
    at: float | None = Field(None, ge=0, le=MAX_EPOCH, description="Epoch seconds; default now.")
