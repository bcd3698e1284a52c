"""The bodies of the compatible intakes, one pydantic model each: the PagerDuty Events API v2
alert event and the Alertmanager webhook message (version 4) are parsed by these models
(``parse``) and described by them in the OpenAPI document, as are the answers. Unknown members
are ignored, as the senders expect; a member UNS ignores is described but not checked
(``ignored``)."""
from typing import Annotated, Any, Literal

from pydantic import (AfterValidator, ConfigDict, Field, ValidationError, ValidationInfo, WithJsonSchema,
                      WrapValidator, field_validator, model_validator)

from notifications.payloads import FreeObject, Payload, optional
# The runtime's messages and checks of the verbs' schemas, so an intake words a problem as they do.
from core.schema import error_message, field_problem
from notifications.runtime.schemas import not_blank

from .common import DEDUP_KEY_MAX, SOURCE_MAX, is_iso8601

PD_ACTIONS = ("trigger", "acknowledge", "resolve")
PD_SEVERITIES = ("critical", "error", "warning", "info")
PD_SUMMARY_MAX = 1024
PD_TEXT_MAX = 1024
PD_URL_MAX = 2048
AM_STATUSES = ("firing", "resolved")


def _iso8601(message: str):
    def check(value: str) -> str:
        if not is_iso8601(value):
            raise field_problem(message)
        return value
    return AfterValidator(check)


def _text(max_length: int | None = None, *, blank: bool = True):
    """A string of at most ``max_length`` characters; ``blank=False``: with a non-space one."""
    checks = [] if blank else [AfterValidator(not_blank)]
    return Annotated[str, Field(min_length=None if blank else 1, max_length=max_length), *checks]


def ignored(schema: dict):
    """A member UNS reads nothing from: described as ``schema``, not checked."""
    return Annotated[Any, WithJsonSchema(schema)]


def _string_map(value, handler):
    try:
        return handler(value)
    except ValidationError:
        raise field_problem("must be an object of strings") from None


StringMap = Annotated[dict[str, str], WrapValidator(_string_map)]


class Intake(Payload):
    """Base of an intake body: strict JSON types, unknown members ignored."""

    model_config = ConfigDict(extra="ignore", strict=True, populate_by_name=True)


# --- PagerDuty Events API v2 -----------------------------------------------------------------

class PagerDutyPayload(Intake):
    summary: _text(PD_SUMMARY_MAX, blank=False) = Field(description="The title (clipped to 500 characters).")
    source: _text(SOURCE_MAX, blank=False)
    severity: Literal[PD_SEVERITIES]
    timestamp: Annotated[str, _iso8601("must be an ISO-8601 date-time"),
                         WithJsonSchema({"type": "string", "format": "date-time"})] | None = optional("ISO-8601.")
    component: _text(PD_TEXT_MAX) | None = optional()
    group: _text(PD_TEXT_MAX) | None = optional()
    class_: _text(PD_TEXT_MAX) | None = optional(alias="class")
    custom_details: Any = optional()


class PagerDutyLink(Intake):
    href: _text(blank=False)
    text: str | None = optional()


class PagerDutyImage(Intake):
    src: _text(blank=False)
    href: str | None = optional()
    alt: str | None = optional()


# Read only for a trigger; other actions ignore them, as PagerDuty does.
_TRIGGER_ONLY = ("payload", "links", "images", "client", "client_url")


class PagerDutyEvent(Intake):
    """A PagerDuty Events API v2 alert event. Unknown members are ignored."""

    routing_key: _text(blank=False) = Field(description="A UNS API token (producer; responder to acknowledge/resolve).")
    event_action: Literal[PD_ACTIONS]
    dedup_key: _text(DEDUP_KEY_MAX, blank=False) | None = optional(
        "Required to acknowledge/resolve; generated for a trigger without one.", validate_default=True)
    payload: PagerDutyPayload | None = optional("Required to trigger.", validate_default=True)
    links: list[PagerDutyLink] | None = optional()
    images: list[PagerDutyImage] | None = optional()
    client: _text(PD_TEXT_MAX) | None = optional()
    client_url: _text(PD_URL_MAX) | None = optional()

    @model_validator(mode="before")
    @classmethod
    def _trigger_members_only_to_trigger(cls, data):
        if isinstance(data, dict) and data.get("event_action") != "trigger":
            return {k: v for k, v in data.items() if k not in _TRIGGER_ONLY}
        return data

    @field_validator("dedup_key")
    @classmethod
    def _dedup_key_to_settle(cls, value, info: ValidationInfo):
        action = info.data.get("event_action")
        if value is None and action in ("acknowledge", "resolve"):
            raise field_problem(f"is required to {action}")
        return value

    @field_validator("payload")
    @classmethod
    def _payload_to_trigger(cls, value, info: ValidationInfo):
        if value is None and info.data.get("event_action") == "trigger":
            raise field_problem("is required and must be an object")
        return value

    def context(self) -> dict:
        """The trigger's PagerDuty context UNS keeps (``metadata.pagerduty``): the payload's
        component, group, class, timestamp and custom_details, the links, images, client and
        client_url, each only when given."""
        p = self.payload
        context = {"component": p.component, "group": p.group, "class": p.class_, "timestamp": p.timestamp,
                   "custom_details": p.custom_details,
                   "links": None if self.links is None else [x.model_dump(exclude_none=True) for x in self.links],
                   "images": None if self.images is None else [x.model_dump(exclude_none=True) for x in self.images],
                   "client": self.client, "client_url": self.client_url}
        return {k: v for k, v in context.items() if v is not None}


class PagerDutyChangePayload(Intake):
    summary: _text(PD_SUMMARY_MAX, blank=False) = Field(description="The title (clipped to 500 characters).")
    source: _text(SOURCE_MAX) | None = optional("Default `pagerduty-change`.")
    timestamp: Annotated[str, _iso8601("must be an ISO-8601 date-time"),
                         WithJsonSchema({"type": "string", "format": "date-time"})] | None = optional("ISO-8601.")
    custom_details: Any = optional()


class PagerDutyChangeEvent(Intake):
    """A PagerDuty Events API v2 change event (``/v2/change/enqueue``). Unknown members are ignored."""

    routing_key: _text(blank=False) = Field(description="A UNS API token (producer).")
    payload: PagerDutyChangePayload
    links: list[PagerDutyLink] | None = optional()
    images: list[PagerDutyImage] | None = optional()

    def context(self) -> dict:
        """What UNS keeps under ``metadata.pagerduty_change``: timestamp, custom_details, links,
        images, each only when given."""
        p = self.payload
        context = {"timestamp": p.timestamp, "custom_details": p.custom_details,
                   "links": None if self.links is None else [x.model_dump(exclude_none=True) for x in self.links],
                   "images": None if self.images is None else [x.model_dump(exclude_none=True) for x in self.images]}
        return {k: v for k, v in context.items() if v is not None}


class PagerDutyChangeResult(Payload):
    status: str = Field(description='"success"')
    message: str = Field(description='"Change event processed"')
    uns: FreeObject = Field(description="UNS' own account: `{notification_id, status}`.")


class PagerDutyResult(Payload):
    status: str = Field(description='"success"')
    message: str = Field(description='"Event processed"')
    dedup_key: str
    uns: FreeObject = Field(description="UNS' own account: `{notification_id, status, dedup_role}` for a trigger, "
                                        "`{settled, before_delivery, unsettled, escalations_stopped}` for acknowledge/resolve "
                                        "(`before_delivery`: `{id, response, resolved, withheld}` of notifications "
                                        "not delivered yet: a resolve withholds the page, an acknowledge settles it "
                                        "once delivered; `escalations_stopped`: timed-out notifications whose chain stopped).")


class PagerDutyError(Payload):
    status: str = Field(description='"invalid event" for 400')
    message: str
    errors: list[str]


# --- Alertmanager webhook (version 4) --------------------------------------------------------------

def _version_4(value, handler):
    try:
        return handler(value)
    except ValidationError:
        raise field_problem('must be "4" (Alertmanager webhook payload version 4)') from None


class AlertmanagerAlert(Intake):
    status: Literal[AM_STATUSES]
    labels: StringMap
    annotations: StringMap | None = optional()
    startsAt: Annotated[str, _iso8601("must be an RFC 3339 date-time"),
                        WithJsonSchema({"type": "string", "format": "date-time"})]
    endsAt: str | None = optional()
    generatorURL: str | None = optional()
    fingerprint: _text(DEDUP_KEY_MAX, blank=False)


class AlertmanagerMessage(Intake):
    """Alertmanager's webhook message, payload version 4. Unknown members are ignored."""

    version: Annotated[Literal["4"], WrapValidator(_version_4)]
    groupKey: ignored({"type": "string"}) = optional()
    truncatedAlerts: ignored({"type": "integer"}) = optional()
    status: ignored({"type": "string", "enum": list(AM_STATUSES)}) = optional()
    receiver: str | None = optional()
    groupLabels: ignored({"type": "object", "additionalProperties": {"type": "string"}}) = optional()
    commonLabels: ignored({"type": "object", "additionalProperties": {"type": "string"}}) = optional()
    commonAnnotations: ignored({"type": "object", "additionalProperties": {"type": "string"}}) = optional()
    externalURL: ignored({"type": "string"}) = optional()
    alerts: list[AlertmanagerAlert]


class AlertmanagerAlertResult(Payload):
    fingerprint: str
    status: Literal[AM_STATUSES]
    result: Literal["accepted", "duplicate", "resolved"]
    notification_id: str | None = optional("For firing alerts.")
    settled: list[str] = optional("Resolved: the notifications acknowledged.")
    before_delivery: list[FreeObject] = optional(
        "Resolved: notifications not delivered yet, `{id, response, resolved, withheld}`: their page is withheld.")
    unsettled: list[FreeObject] = optional("Resolved: open notifications another response settled first, `{id, code}`.")
    escalations_stopped: list[str] = optional("Resolved: timed-out notifications whose escalation chain the "
                                              "resolution stopped (their escalations closed).")


class AlertmanagerResult(Payload):
    status: str = Field(description='"success"')
    received: int
    alerts: list[AlertmanagerAlertResult]


# --- parsing -----------------------------------------------------------------------------------------

def _path(error: dict) -> str:
    ctx = error.get("ctx") or {}
    if ctx.get("field"):
        return ctx["field"]
    out = ""
    for part in error["loc"]:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def parse(model: type[Intake], data) -> tuple[Intake | None, list[tuple[str, str]]]:
    """``data`` parsed as ``model``: ``(instance, [])``, or ``(None, [(field, message), ...])``,
    one per field (the first problem found for it), list positions in brackets (``alerts[1].status``)."""
    try:
        return model.model_validate(data), []
    except ValidationError as exc:
        seen: dict[str, str] = {}
        for error in exc.errors(include_url=False, include_input=False):
            seen.setdefault(_path(error), error_message(error))
        return None, list(seen.items())
