"""``POST /api/v1/integrations/pagerduty/v2/enqueue``: the PagerDuty Events API v2 ("alert"
events). The ``routing_key`` in the body is a UNS API token (knox) of a principal with the
producer capability; ``acknowledge`` and ``resolve`` also need the responder capability.
``trigger`` submits a notification (``require_ack`` true) with the event's ``dedup_key`` (one is
generated and returned when absent); ``acknowledge`` ACKs and ``resolve`` dismisses that
principal's notifications with that ``dedup_key`` that await a response; one not delivered yet
keeps the response (``runtime.early``): a resolve withholds its page, an acknowledge settles it
once delivered. ``POST .../v2/change/enqueue`` takes change events as informational
notifications (``PagerDutyChangeView``). Answers as PagerDuty
does: 202 ``{"status": "success", "message": "Event processed", "dedup_key"}``, 400
``{"status": "invalid event", "message": "Event object is invalid", "errors": [...]}`` (also for
a missing, unknown or expired routing key, or one lacking the capability: PagerDuty clients do
not retry a 400), and 5xx when UNS cannot take the event now (clients retry). UNS adds a ``uns``
member with what happened to which notification.

Maps onto the runtime's ``accept`` and ``acknowledge``; the principal and the ACK actor are the
token's user, never a body field.
"""
import json
import uuid

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import exceptions, status as http
from rest_framework.response import Response

from core.capabilities import RESPOND, SEND
from notifications import selectors
from notifications.access import has_capability
from notifications.apps import runtime
from notifications.runtime import UNSError
from notifications.api.auth import BearerTokenAuthentication
from notifications.api.views import UNSView

from . import payloads
from .common import BODY_MAX, TITLE_MAX, clip, fits, settle_open
from .payloads import PagerDutyChangeEvent, PagerDutyChangeResult, PagerDutyError, PagerDutyEvent, PagerDutyResult


class _InvalidEvent(exceptions.APIException):
    status_code = 400
    default_code = "invalid_event"

    def __init__(self, errors: list[str]):
        super().__init__("Event object is invalid")
        self.errors = errors


class RoutingKeyAuthentication(BearerTokenAuthentication):
    """The PagerDuty ``routing_key`` body field as the principal's knox token. Without one the
    request is unauthenticated (refused by ``HasCapability``); an unknown or expired key raises
    ``AuthenticationFailed``."""

    def authenticate(self, request):
        data = request.data
        key = data.get("routing_key") if isinstance(data, dict) else None
        if not isinstance(key, str) or not key.strip():
            return None
        return self.authenticate_credentials(key.strip().encode("utf-8"))


def pagerduty_exception_handler(exc, context):
    """Every error of the PagerDuty endpoint in PagerDuty's shape (never problem+json)."""
    request = context.get("request")
    data = getattr(request, "_full_data", None) if request is not None else None
    if isinstance(exc, _InvalidEvent):
        status, errors = 400, exc.errors
    elif isinstance(exc, exceptions.ParseError):  # also NUL and lone surrogates (parsers.py)
        status, errors = 400, [str(exc.detail)]
    elif isinstance(exc, exceptions.UnsupportedMediaType):
        status, errors = 400, ["the body must be JSON (Content-Type: application/json)"]
    elif isinstance(exc, exceptions.NotAuthenticated):
        status = 400
        errors = (["routing_key is missing or blank"] if isinstance(data, dict)
                  else ["the event must be a JSON object"])
    elif isinstance(exc, exceptions.AuthenticationFailed):
        status, errors = 400, ["Invalid routing key"]
    elif isinstance(exc, exceptions.PermissionDenied):
        status, errors = 400, ["routing_key does not belong to a principal allowed to send events (producer)"]
    elif isinstance(exc, exceptions.MethodNotAllowed):
        return Response({"status": "invalid request", "message": "Method not allowed", "errors": [str(exc.detail)]},
                        status=405)
    elif isinstance(exc, UNSError) and exc.status < 500:
        status = 400
        errors = [f"{e.get('field') or 'event'}: {e.get('message')}" for e in exc.extra.get("errors", [])] or [exc.detail]
    elif isinstance(exc, UNSError):
        return Response({"status": "error", "message": exc.detail, "errors": [exc.code]}, status=exc.status)
    elif isinstance(exc, exceptions.Throttled):
        return Response({"status": "throttle event", "message": "Requests for this service are arriving too quickly",
                         "errors": ["Too many requests"]}, status=429)
    else:
        return None  # an unexpected error: Django's 500 handler
    return Response({"status": "invalid event", "message": "Event object is invalid", "errors": errors}, status=status)


def validate_pagerduty_event(event: dict) -> PagerDutyEvent:
    """Parse an Events API v2 alert event (``payloads.PagerDutyEvent``). Raises ``_InvalidEvent``
    listing every problem as ``"<field> <message>"``. Unknown members are ignored, as PagerDuty
    does; the members only a trigger reads are ignored for the other actions."""
    parsed, errors = payloads.parse(PagerDutyEvent, event)
    if errors:
        raise _InvalidEvent([f"{field} {message}" if field else message for field, message in errors])
    return parsed


def pagerduty_notification(event: PagerDutyEvent, dedup_key: str) -> dict:
    """The SendNotificationRequest for a parsed ``trigger`` event."""
    summary = event.payload.summary.strip()
    context = event.context()
    lines = [summary] if len(summary) > TITLE_MAX else []
    lines += [f"{k}: {context[k]}" for k in ("component", "group", "class") if k in context]
    if "custom_details" in context:
        lines.append(json.dumps(context["custom_details"], indent=2, sort_keys=True, ensure_ascii=False))
    metadata = {"pagerduty": context}
    if not fits(metadata) and "custom_details" in context:
        # Large details stay readable in the body; the metadata keeps the rest of the context.
        metadata = {"pagerduty": {**context, "custom_details": None, "custom_details_omitted": True}}
    return {
        "source": event.payload.source.strip(),
        "title": clip(summary, TITLE_MAX),
        "body": clip("\n".join(lines), BODY_MAX),
        "severity": event.payload.severity,
        "dedup_key": dedup_key,
        "require_ack": True,
        "metadata": metadata,
    }


def validate_change_event(event: dict) -> PagerDutyChangeEvent:
    """Parse an Events API v2 change event (``payloads.PagerDutyChangeEvent``). Raises
    ``_InvalidEvent`` listing every problem."""
    parsed, errors = payloads.parse(PagerDutyChangeEvent, event)
    if errors:
        raise _InvalidEvent([f"{field} {message}" if field else message for field, message in errors])
    return parsed


def change_notification(event: PagerDutyChangeEvent) -> dict:
    """The SendNotificationRequest for a change event: informational (severity ``info``), needing
    no acknowledgement; ``custom_details`` readable in the body, the rest under
    ``metadata.pagerduty_change``."""
    summary = event.payload.summary.strip()
    context = event.context()
    lines = [summary] if len(summary) > TITLE_MAX else []
    if "custom_details" in context:
        lines.append(json.dumps(context["custom_details"], indent=2, sort_keys=True, ensure_ascii=False))
    metadata = {"pagerduty_change": context}
    if not fits(metadata) and "custom_details" in context:
        metadata = {"pagerduty_change": {**context, "custom_details": None, "custom_details_omitted": True}}
    return {
        "source": (event.payload.source or "").strip() or "pagerduty-change",
        "title": clip(summary, TITLE_MAX),
        "body": clip("\n".join(lines), BODY_MAX),
        "severity": "info",
        "require_ack": False,
        "metadata": metadata,
    }


class PagerDutyChangeView(UNSView):
    """``POST /api/v1/integrations/pagerduty/v2/change/enqueue``: a PagerDuty change event (a
    deploy, a config change) becomes an informational notification (severity ``info``,
    ``require_ack`` false) delivered by the policy like any other. 202 ``{"status": "success",
    "message": "Change event processed", "uns": {"notification_id", "status"}}``; errors in
    PagerDuty's shape as for alert events."""

    authentication_classes = [RoutingKeyAuthentication]
    capabilities = {"POST": SEND}
    error_shape = "pagerduty"

    def get_exception_handler(self):
        return pagerduty_exception_handler

    @extend_schema(
        summary="PagerDuty Events API v2 (change events)", tags=["integrations"], request=PagerDutyChangeEvent,
        responses={202: PagerDutyChangeResult,
                   400: OpenApiResponse(PagerDutyError, description=(
                       "Invalid event, or a missing, unknown or expired routing key, or one lacking the capability.")),
                   503: OpenApiResponse(PagerDutyError, description="UNS cannot take the event now: retry.")})
    def post(self, request):
        event = validate_change_event(request.data)
        result = runtime().accept(request.user.get_username(), change_notification(event))
        return Response({"status": "success", "message": "Change event processed",
                         "uns": {"notification_id": result.notification.id, "status": result.notification.status}},
                        status=http.HTTP_202_ACCEPTED)


class PagerDutyEnqueueView(UNSView):
    """``POST /api/v1/integrations/pagerduty/v2/enqueue``: a PagerDuty Events API v2 event."""

    authentication_classes = [RoutingKeyAuthentication]
    capabilities = {"POST": SEND}  # acknowledge and resolve also need RESPOND (checked below)
    error_shape = "pagerduty"  # errors in PagerDuty's shape, not problem details (openapi.py)

    def get_exception_handler(self):
        return pagerduty_exception_handler

    @extend_schema(
        summary="PagerDuty Events API v2 (alert events)", tags=["integrations"], request=PagerDutyEvent,
        responses={202: PagerDutyResult,
                   400: OpenApiResponse(PagerDutyError, description=(
                       "Invalid event, or a missing, unknown or expired routing key, or one lacking the capability.")),
                   503: OpenApiResponse(PagerDutyError, description="UNS cannot take the event now: retry.")})
    def post(self, request):
        event = validate_pagerduty_event(request.data)
        principal = request.user.get_username()
        action = event.event_action
        if action == "trigger":
            dedup_key = event.dedup_key or uuid.uuid4().hex
            result = runtime().accept(principal, pagerduty_notification(event, dedup_key))
            uns = {"notification_id": result.notification.id, "status": result.notification.status,
                   "dedup_role": selectors.dedup_role(result.notification)}
        else:
            if not has_capability(request.user, RESPOND):
                raise _InvalidEvent([f"routing_key does not belong to a principal allowed to {action} (responder)"])
            dedup_key = event.dedup_key
            uns = settle_open(principal, dedup_key, dismiss=action == "resolve", resolved=action == "resolve",
                              metadata={"via": "pagerduty", "event_action": action})
        return Response({"status": "success", "message": "Event processed", "dedup_key": dedup_key, "uns": uns},
                        status=http.HTTP_202_ACCEPTED)
