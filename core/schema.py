"""The pydantic base of every request model and the one parser of a request body.

``Schema``: strict JSON types (``"yes"`` is not a boolean, ``1`` not a string), unknown members
refused (``unknown field``), every problem reported at once. ``parse(model, data)`` first applies
the JSON refusal rules (``core.json_values.check_value``: NUL, lone surrogates, non-finite numbers,
nesting too deep; 400 ``parse_error``), then the model; every schema failure is the same
``InvalidRequest`` (400 ``invalid_request``, ``errors: [{"field", "message"}]``) on every transport.

Why pydantic rather than DRF serializers: the MCP SDK builds and validates tool arguments with
pydantic models (a tool's input schema *is* a model's JSON schema), and drf-spectacular renders a
pydantic model as an OpenAPI request body, so one class describes both.
"""
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic_core import PydanticCustomError

from .errors import InvalidRequest
from .json_values import check_value

MAX_CHANNELS = 16
# A delivery target: a channel name (a slug of at most 64, runtime.channels.check_name) or a people
# target (oncall.targets: "schedule:<name>", "team:<name>", "user:<user name>", 150 characters).
MAX_CHANNEL_NAME = 160

ChannelName = Annotated[str, Field(min_length=1, max_length=MAX_CHANNEL_NAME)]

# The error type of a check written here (not a pydantic type check); ``ctx`` may name a more
# precise field than the location pydantic reports (``metadata.uns_resolution``).
UNS_ERROR = "uns"


def field_problem(message: str, field: str | None = None) -> PydanticCustomError:
    return PydanticCustomError(UNS_ERROR, message, {"field": field} if field else None)


class Schema(BaseModel):
    """Base of every verb's input: strict JSON types, unknown members refused."""

    model_config = ConfigDict(extra="forbid", strict=True)


def _field(error: dict) -> str:
    ctx = error.get("ctx") or {}
    if error["type"] == UNS_ERROR and ctx.get("field"):
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


def error_message(error: dict) -> str:
    """The words of one pydantic error (an ``errors()`` item) as a problem's field message."""
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
        seen.setdefault(_field(error), error_message(error))
    return [{"field": f, "message": m} for f, m in seen.items()]


def parse(model: type[Schema], data, *, detail: str = "the request is invalid") -> Schema:
    """Parse ``data`` (a parsed JSON value) as ``model`` and return the model instance.

    First ``check_value`` (the one refusal of what UNS cannot store; raises
    ``InvalidJSON``, 400 ``parse_error``); a value that is not a JSON object is ``InvalidRequest``
    (field ``""``: ``must be an object``); any schema failure is ``InvalidRequest`` (400
    ``invalid_request``) listing every ``{"field", "message"}`` problem (``errors_of``).
    """
    check_value(data)
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
