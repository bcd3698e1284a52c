"""The input schema of each UNS verb, one definition parsed by every transport.

One pydantic v2 model per verb: ``SendNotificationRequest`` (submit), ``SimulateRequest``
(policy simulation), ``RespondRequest`` (ack and dismiss), ``SnoozeRequest``,
``EscalateRequest``, ``ReplayRequest`` and ``ResolveRequest`` (both empty bodies); the policy
draft bodies are in ``policies/schemas.py`` on the same base. ``parse(model, data)`` is the one
parser: the HTTP views, the ``/ws/respond/`` consumer, the MCP tools and ``intake.accept`` call
it, and every failure is the same ``InvalidRequest`` (400 ``invalid_request``, ``errors: [{"field",
"message"}]``) on every transport.

Why pydantic rather than DRF serializers: the MCP SDK builds and validates tool arguments with
pydantic models (a tool's input schema *is* a model's JSON schema), and drf-spectacular renders
a pydantic model as an OpenAPI request body (``drf_spectacular.contrib.pydantic``, subclassed in
``notifications.api.openapi`` only to emit OpenAPI 3.0 ``nullable``). A DRF serializer would need
a hand-written translation to JSON Schema for MCP, i.e. a second description. The OpenAPI
document and the MCP tool input schemas are both generated from these classes
(``tests/api/test_input_schemas.py`` compares them).

Rules every model shares (``Schema``): strict types (``"yes"`` is not a boolean, ``1`` not a
string), unknown members refused (``unknown field``), every problem reported at once. Before any
model runs, ``parsers.check_value`` refuses what UNS cannot store (NUL, lone surrogates,
non-finite numbers, nesting too deep: 400 ``parse_error``), so a Python caller gets the refusal
the HTTP parser gives.
"""
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic_core import PydanticCustomError

from notifications.api import parsers  # the one refusal; used at call time (the import is circular)

from .errors import InvalidRequest
from .keys import canonical_json

SEVERITIES = ("info", "warning", "error", "critical")
MAX_CHANNELS = 16
MAX_CHANNEL_NAME = 64
MAX_METADATA_BYTES = 16 * 1024
MAX_TITLE = 500
# Limits of the responder verbs; the runtime's verbs parse their arguments with these models too.
MIN_SNOOZE_SECONDS = 60
MAX_SNOOZE_SECONDS = 86400
MAX_REASON_LENGTH = 1000
RESERVED_METADATA_KEY = "uns_resolution"
# Where a governance approval notification carries its decision (policies/governance/bridge.py).
# Not reserved: a producer may write it, and only a decision's own notifications count.
GOVERNANCE_METADATA_KEY = "uns_governance"

# The error type of a check written here (not a pydantic type check); ``ctx`` may name a more
# precise field than the location pydantic reports (``metadata.uns_resolution``).
_UNS_ERROR = "uns"


def _problem(message: str, field: str | None = None) -> PydanticCustomError:
    return PydanticCustomError(_UNS_ERROR, message, {"field": field} if field else None)


def _not_blank(value: str) -> str:
    if not value.strip():
        raise _problem("must not be blank")
    return value


# A required text field: a string with a non-space character, at most ``n`` characters.
def _required_text(max_length: int, description: str):
    return Annotated[str, Field(min_length=1, max_length=max_length, description=description),
                     AfterValidator(_not_blank)]


def _text(max_length: int, description: str | None = None):
    return Annotated[str | None, Field(max_length=max_length, description=description)]


ChannelName = Annotated[str, Field(min_length=1, max_length=MAX_CHANNEL_NAME)]
FreeObject = dict[str, Any]


class Schema(BaseModel):
    """Base of every verb's input: strict JSON types, unknown members refused."""

    model_config = ConfigDict(extra="forbid", strict=True)


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
        description=f"A JSON object, at most {MAX_METADATA_BYTES} bytes as JSON; `{RESERVED_METADATA_KEY}` is reserved.")
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
        if RESERVED_METADATA_KEY in value:
            raise _problem("is reserved for UNS", f"metadata.{RESERVED_METADATA_KEY}")
        if len(canonical_json(value)) > MAX_METADATA_BYTES:
            raise _problem(f"must be at most {MAX_METADATA_BYTES} bytes as JSON")
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


CHANNEL_KINDS = ("webhook", "console", "email", "apprise")  # models.Channel.KINDS (a test pins them equal)


class ChannelCreateRequest(Schema):
    """The body of ``POST /api/v1/channels`` (``runtime.channels.create``). ``config`` is
    checked per kind by ``runtime.channels.validate_config``; ``secret`` (webhook signing key,
    SMTP password, the Apprise URLs separated by white space) is write-only."""

    name: ChannelName = Field(description="A slug: letters, digits, '-' or '_'.")
    kind: Literal[CHANNEL_KINDS]
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


def _field(error: dict) -> str:
    ctx = error.get("ctx") or {}
    if error["type"] == _UNS_ERROR and ctx.get("field"):
        return ctx["field"]
    # List positions are not fields of their own: "channels.3" reports as "channels".
    return ".".join(str(p) for p in error["loc"] if not isinstance(p, int))


_MESSAGES = {
    "missing": "is required",
    "extra_forbidden": "unknown field",
    "string_type": "must be a string",
    "bool_type": "must be a boolean",
    "dict_type": "must be an object",
    "list_type": "must be a list",
    "float_type": "must be a number",
    "int_type": "must be an integer",
    "model_type": "must be an object",
}


def _message(error: dict) -> str:
    ctx = error.get("ctx") or {}
    kind = error["type"]
    if kind in _MESSAGES:
        return _MESSAGES[kind]
    if kind == "string_too_short":
        return "must not be blank" if ctx.get("min_length") == 1 else f"must be at least {ctx['min_length']} characters"
    if kind == "string_too_long":
        return f"must be at most {ctx['max_length']} characters"
    if kind == "too_long":
        return f"must have at most {ctx['max_length']} items"
    if kind == "literal_error":
        return f"must be one of {ctx['expected']}"
    if kind == "greater_than_equal":
        return f"must be at least {ctx['ge']:g}"
    if kind == "less_than_equal":
        return f"must be at most {ctx['le']:g}"
    return error["msg"]  # pydantic's message; never the input value


def errors_of(exc: ValidationError) -> list[dict]:
    """``[{"field", "message"}]`` of a pydantic ``ValidationError``, one per field (the first
    problem found for it), fields dotted (``metadata.uns_resolution``). Never echoes the value."""
    seen: dict[str, str] = {}
    for error in exc.errors(include_url=False, include_input=False):
        seen.setdefault(_field(error), _message(error))
    return [{"field": f, "message": m} for f, m in seen.items()]


def parse(model: type[Schema], data, *, detail: str = "the request is invalid") -> Schema:
    """Parse ``data`` (a parsed JSON value) as ``model`` and return the model instance.

    First ``parsers.check_value`` (the one refusal of what UNS cannot store; raises
    ``InvalidJSON``, 400 ``parse_error``); a value that is not a JSON object is ``InvalidRequest``
    (field ``""``: ``must be an object``); any schema failure is ``InvalidRequest`` (400
    ``invalid_request``) listing every ``{"field", "message"}`` problem (``errors_of``).
    """
    parsers.check_value(data)
    if not isinstance(data, dict):
        raise InvalidRequest("the request body must be a JSON object",
                             errors=[{"field": "", "message": "must be an object"}])
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise InvalidRequest(detail, errors=errors_of(exc)) from None


def parse_dict(model: type[Schema], data, **kwargs) -> dict:
    """``parse`` then the model as a dict with every member present (defaults filled in)."""
    return parse(model, data, **kwargs).model_dump()
