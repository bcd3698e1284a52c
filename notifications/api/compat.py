"""Compatible intake, so existing monitors send to UNS unchanged.

``POST /api/v1/integrations/pagerduty/v2/enqueue``: the PagerDuty Events API v2 ("alert"
events). The ``routing_key`` in the body is a UNS API token (knox) of a principal with the
producer capability; ``acknowledge`` and ``resolve`` also need the responder capability.
``trigger`` submits a notification (``require_ack`` true) with the event's ``dedup_key`` (one is
generated and returned when absent); ``acknowledge`` ACKs and ``resolve`` dismisses that
principal's notifications with that ``dedup_key`` that await a response. Answers as PagerDuty
does: 202 ``{"status": "success", "message": "Event processed", "dedup_key"}``, 400
``{"status": "invalid event", "message": "Event object is invalid", "errors": [...]}`` (also for
a missing, unknown or expired routing key, or one lacking the capability: PagerDuty clients do
not retry a 400), and 5xx when UNS cannot take the event now (clients retry). UNS adds a ``uns``
member with what happened to which notification.

``POST /api/v1/integrations/alertmanager``: the Prometheus Alertmanager webhook (payload
``version`` "4"), authenticated like the rest of the API (``Authorization: Bearer``). One
notification per firing alert: ``fingerprint`` is the dedup key and, with ``startsAt``, the
idempotency key, so Alertmanager's repeats and retries never duplicate work. Resolved alerts
acknowledge the principal's open notifications with that fingerprint (responder capability
needed). Errors are problem details like the rest of the API; the whole batch is validated
before anything is written.

Both map onto the runtime's ``accept`` and ``acknowledge``; the principal and the ACK actor are
the token's user, never a body field.
"""
import json
import uuid
from datetime import datetime

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import exceptions, status as http
from rest_framework.response import Response

from notifications import selectors
from notifications.access import RESPOND, SEND, has_capability
from notifications.apps import runtime
from notifications.runtime import InvalidRequest, UNSError
from notifications.runtime.errors import Conflict
from notifications.runtime.keys import canonical_json
from notifications.runtime.intake import MAX_METADATA_BYTES, validate_request

from . import openapi as doc
from .auth import BearerTokenAuthentication
from .views import UNSView

TITLE_MAX = 500
BODY_MAX = 20000
DEDUP_KEY_MAX = 255
SOURCE_MAX = 255


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


def _is_iso8601(value) -> bool:
    if not isinstance(value, str) or not value.strip():
        return False
    text = value.strip()
    # PagerDuty's own example offset is "+0000" (no colon); Python wants "+00:00".
    if len(text) > 5 and text[-5] in "+-" and text[-4:].isdigit():
        text = f"{text[:-2]}:{text[-2:]}"
    try:
        datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return False
    return True


def _fits(metadata: dict) -> bool:
    return len(canonical_json(metadata)) <= MAX_METADATA_BYTES


def _settle_open(principal: str, dedup_key: str, *, dismiss: bool, metadata: dict) -> dict:
    """Acknowledge (or dismiss) the principal's open notifications with this client dedup key.
    Returns ``{"settled": [ids], "unsettled": [{"id", "code"}]}``; rows not yet delivered (or
    settled meanwhile by someone else) are reported, not failed."""
    settled, unsettled = [], []
    for row in selectors.open_by_client_dedup_key(principal, dedup_key):
        try:
            runtime().acknowledge(row.id, principal, dismiss=dismiss, metadata=metadata)
        except Conflict as exc:
            unsettled.append({"id": row.id, "code": exc.code})
            continue
        settled.append(row.id)
    return {"settled": settled, "unsettled": unsettled}


# --- PagerDuty Events API v2 ---------------------------------------------------------------

PD_ACTIONS = ("trigger", "acknowledge", "resolve")
PD_SEVERITIES = ("critical", "error", "warning", "info")
PD_SUMMARY_MAX = 1024


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


def _optional_string(errors, obj: dict, name: str, label: str, max_length: int | None = None):
    value = obj.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        errors.append(f"{label} must be a string")
        return None
    if max_length is not None and len(value) > max_length:
        errors.append(f"{label} must be at most {max_length} characters")
    return value


def _context_list(errors, event: dict, name: str, required_key: str, keys: tuple[str, ...]) -> list | None:
    value = event.get(name)
    if value is None:
        return None
    if not isinstance(value, list):
        errors.append(f"{name} must be an array of objects")
        return None
    for i, item in enumerate(value):
        if not isinstance(item, dict):
            errors.append(f"{name}[{i}] must be an object")
        elif not isinstance(item.get(required_key), str) or not item[required_key]:
            errors.append(f"{name}[{i}].{required_key} is required")
        else:
            errors.extend(f"{name}[{i}].{k} must be a string" for k in keys
                          if item.get(k) is not None and not isinstance(item[k], str))
    return [{k: item.get(k) for k in keys if item.get(k) is not None} for item in value if isinstance(item, dict)]


def validate_pagerduty_event(event: dict) -> dict:
    """Check an Events API v2 alert event; return the fields UNS uses. Raises ``_InvalidEvent``
    listing every problem. Unknown members are ignored, as PagerDuty does."""
    errors = []
    action = event.get("event_action")
    if action not in PD_ACTIONS:
        errors.append(f"event_action must be one of {list(PD_ACTIONS)}")
    dedup_key = _optional_string(errors, event, "dedup_key", "dedup_key", DEDUP_KEY_MAX)
    if dedup_key is not None and not dedup_key.strip():
        errors.append("dedup_key must not be blank")
    out = {"event_action": action, "dedup_key": dedup_key}
    if action in ("acknowledge", "resolve"):
        if not dedup_key:
            errors.append(f"dedup_key is required to {action}")
    elif action == "trigger":
        payload = event.get("payload")
        if not isinstance(payload, dict):
            errors.append("payload is required and must be an object")
            payload = {}
        for name, limit in (("summary", PD_SUMMARY_MAX), ("source", SOURCE_MAX)):
            value = payload.get(name)
            if not isinstance(value, str) or not value.strip():
                errors.append(f"payload.{name} is required")
            elif len(value) > limit:
                errors.append(f"payload.{name} must be at most {limit} characters")
        if payload.get("severity") not in PD_SEVERITIES:
            errors.append(f"payload.severity must be one of {list(PD_SEVERITIES)}")
        if payload.get("timestamp") is not None and not _is_iso8601(payload["timestamp"]):
            errors.append("payload.timestamp must be an ISO-8601 date-time")
        context = {}
        for name in ("component", "group", "class"):
            context[name] = _optional_string(errors, payload, name, f"payload.{name}", 1024)
        context["timestamp"] = payload.get("timestamp")
        context["custom_details"] = payload.get("custom_details")
        context["links"] = _context_list(errors, event, "links", "href", ("href", "text"))
        context["images"] = _context_list(errors, event, "images", "src", ("src", "href", "alt"))
        context["client"] = _optional_string(errors, event, "client", "client", 1024)
        context["client_url"] = _optional_string(errors, event, "client_url", "client_url", 2048)
        out.update(summary=payload.get("summary"), source=payload.get("source"), severity=payload.get("severity"),
                   context={k: v for k, v in context.items() if v is not None})
    if errors:
        raise _InvalidEvent(errors)
    return out


def pagerduty_notification(event: dict, dedup_key: str) -> dict:
    """The SendNotificationRequest for a validated ``trigger`` event."""
    summary = event["summary"].strip()
    context = event["context"]
    lines = [summary] if len(summary) > TITLE_MAX else []
    lines += [f"{k}: {context[k]}" for k in ("component", "group", "class") if k in context]
    if "custom_details" in context:
        lines.append(json.dumps(context["custom_details"], indent=2, sort_keys=True, ensure_ascii=False))
    metadata = {"pagerduty": context}
    if not _fits(metadata) and "custom_details" in context:
        # Large details stay readable in the body; the metadata keeps the rest of the context.
        metadata = {"pagerduty": {**context, "custom_details": None, "custom_details_omitted": True}}
    return {
        "source": event["source"].strip(),
        "title": _clip(summary, TITLE_MAX),
        "body": _clip("\n".join(lines), BODY_MAX),
        "severity": event["severity"],
        "dedup_key": dedup_key,
        "require_ack": True,
        "metadata": metadata,
    }


class PagerDutyEnqueueView(UNSView):
    """``POST /api/v1/integrations/pagerduty/v2/enqueue``: a PagerDuty Events API v2 event."""

    authentication_classes = [RoutingKeyAuthentication]
    capabilities = {"POST": SEND}  # acknowledge and resolve also need RESPOND (checked below)
    error_shape = "pagerduty"  # errors in PagerDuty's shape, not problem details (openapi.py)

    def get_exception_handler(self):
        return pagerduty_exception_handler

    @extend_schema(
        summary="PagerDuty Events API v2 (alert events)", tags=["integrations"], request=doc.PagerDutyEventSerializer,
        responses={202: doc.PagerDutyResultSerializer,
                   400: OpenApiResponse(doc.PagerDutyErrorSerializer, description=(
                       "Invalid event, or a missing, unknown or expired routing key, or one lacking the capability.")),
                   503: OpenApiResponse(doc.PagerDutyErrorSerializer, description="UNS cannot take the event now: retry.")})
    def post(self, request):
        event = validate_pagerduty_event(request.data)
        principal = request.user.get_username()
        action = event["event_action"]
        if action == "trigger":
            dedup_key = event["dedup_key"] or uuid.uuid4().hex
            result = runtime().accept(principal, pagerduty_notification(event, dedup_key))
            uns = {"notification_id": result.notification.id, "status": result.notification.status,
                   "dedup_role": selectors.dedup_role(result.notification)}
        else:
            if not has_capability(request.user, RESPOND):
                raise _InvalidEvent([f"routing_key does not belong to a principal allowed to {action} (responder)"])
            dedup_key = event["dedup_key"]
            uns = _settle_open(principal, dedup_key, dismiss=action == "resolve",
                               metadata={"via": "pagerduty", "event_action": action})
        return Response({"status": "success", "message": "Event processed", "dedup_key": dedup_key, "uns": uns},
                        status=http.HTTP_202_ACCEPTED)


# --- Prometheus Alertmanager webhook --------------------------------------------------------

AM_STATUSES = ("firing", "resolved")
# labels.severity -> UNS severity; anything else (or none) is "warning".
AM_SEVERITY = {
    "critical": "critical", "page": "critical", "fatal": "critical", "emergency": "critical", "high": "critical",
    "error": "error", "major": "error",
    "warning": "warning", "warn": "warning", "minor": "warning", "medium": "warning",
    "info": "info", "informational": "info", "low": "info", "none": "info", "notice": "info",
}
AM_DEFAULT_SEVERITY = "warning"


def _string_map(errors, obj: dict, name: str, label: str, required: bool) -> dict:
    value = obj.get(name)
    if value is None and not required:
        return {}
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        errors.append({"field": label, "message": "must be an object of strings"})
        return {}
    return value


def _am_source(labels: dict, receiver: str) -> str:
    parts = [labels[k] for k in ("job", "instance") if labels.get(k)]
    return _clip("/".join(parts) or receiver or "alertmanager", SOURCE_MAX)


def alertmanager_notification(alert: dict, message: dict) -> dict:
    """The SendNotificationRequest for one firing alert. Only fields stable across
    Alertmanager's repeats go in, so a repeat matches the stored request's fingerprint."""
    labels, annotations = alert["labels"], alert["annotations"]
    title = (annotations.get("summary") or annotations.get("title") or labels.get("alertname")
             or f"alert {alert['fingerprint']}")
    body = annotations.get("description") or annotations.get("message") or ""
    context = {
        "fingerprint": alert["fingerprint"],
        "labels": labels,
        "annotations": annotations,
        "startsAt": alert["startsAt"],
        "generatorURL": alert.get("generatorURL"),
        "receiver": message["receiver"],
        "externalURL": message.get("externalURL"),
    }
    if not _fits({"alertmanager": context}):
        # Long annotations (the description is also the body) are clipped, then dropped.
        context["annotations"] = {k: _clip(v, 1024) for k, v in annotations.items()}
        context["annotations_clipped"] = True
        if not _fits({"alertmanager": context}):
            context["annotations"] = {}
    return {
        "source": _am_source(labels, message["receiver"]),
        "title": _clip(title.strip() or f"alert {alert['fingerprint']}", TITLE_MAX),
        "body": _clip(body, BODY_MAX),
        "severity": AM_SEVERITY.get(labels.get("severity", "").lower(), AM_DEFAULT_SEVERITY),
        "dedup_key": alert["fingerprint"],
        "idempotency_key": f"alertmanager:{alert['fingerprint']}:{alert['startsAt']}",
        "require_ack": True,
        "metadata": {"alertmanager": context},
    }


def validate_alertmanager_message(message) -> dict:
    """Check a webhook message (version "4"); return it with every alert normalised. Raises
    ``InvalidRequest`` listing every ``{"field", "message"}`` problem, including those the
    SendNotificationRequest of a firing alert would have, so a bad batch writes nothing."""
    if not isinstance(message, dict):
        raise InvalidRequest("the webhook body must be a JSON object", errors=[{"field": "", "message": "must be an object"}])
    errors = []
    if message.get("version") != "4":
        errors.append({"field": "version", "message": 'must be "4" (Alertmanager webhook payload version 4)'})
    receiver = message.get("receiver")
    if receiver is not None and not isinstance(receiver, str):
        errors.append({"field": "receiver", "message": "must be a string"})
        receiver = None
    external = message.get("externalURL")
    alerts = message.get("alerts")
    if not isinstance(alerts, list):
        errors.append({"field": "alerts", "message": "must be an array"})
        alerts = []
    normalised = {"receiver": receiver or "", "externalURL": external if isinstance(external, str) else None,
                  "alerts": []}
    for i, alert in enumerate(alerts):
        at = f"alerts[{i}]"
        if not isinstance(alert, dict):
            errors.append({"field": at, "message": "must be an object"})
            continue
        before = len(errors)
        status = alert.get("status")
        if status not in AM_STATUSES:
            errors.append({"field": f"{at}.status", "message": f"must be one of {list(AM_STATUSES)}"})
        fingerprint = alert.get("fingerprint")
        if not isinstance(fingerprint, str) or not fingerprint.strip() or len(fingerprint) > DEDUP_KEY_MAX:
            errors.append({"field": f"{at}.fingerprint", "message": f"must be a non-blank string of at most {DEDUP_KEY_MAX} characters"})
        labels = _string_map(errors, alert, "labels", f"{at}.labels", required=True)
        annotations = _string_map(errors, alert, "annotations", f"{at}.annotations", required=False)
        if not _is_iso8601(alert.get("startsAt")):
            errors.append({"field": f"{at}.startsAt", "message": "must be an RFC 3339 date-time"})
        for name in ("endsAt", "generatorURL"):
            if alert.get(name) is not None and not isinstance(alert[name], str):
                errors.append({"field": f"{at}.{name}", "message": "must be a string"})
        if len(errors) > before:
            continue
        item = {"status": status, "fingerprint": fingerprint, "labels": labels, "annotations": annotations,
                "startsAt": alert["startsAt"], "endsAt": alert.get("endsAt"), "generatorURL": alert.get("generatorURL")}
        if status == "firing":
            item["request"] = alertmanager_notification(item, normalised)
            try:
                validate_request(item["request"])
            except InvalidRequest as exc:
                errors.extend({"field": f"{at} -> {e['field']}", "message": e["message"]} for e in exc.extra["errors"])
        normalised["alerts"].append(item)
    if errors:
        raise InvalidRequest("the Alertmanager webhook message is invalid", errors=errors)
    return normalised


class AlertmanagerWebhookView(UNSView):
    """``POST /api/v1/integrations/alertmanager``: an Alertmanager webhook message (version 4).

    200 ``{"status": "success", "received": N, "alerts": [{"fingerprint", "status", "result",
    ...}]}`` where ``result`` is ``accepted`` (a new notification), ``duplicate`` (a repeat of an
    alert already accepted) or ``resolved`` (its open notifications acknowledged: ``settled``,
    and ``unsettled`` ones not yet delivered). 400 ``invalid_request`` for a malformed message
    (nothing written); 403 when it holds resolved alerts and the principal lacks the responder
    capability (nothing written).
    """

    capabilities = {"POST": SEND}  # resolved alerts also need RESPOND (checked below)

    @extend_schema(summary="Prometheus Alertmanager webhook receiver (payload version 4)", tags=["integrations"],
                   request=doc.AlertmanagerMessageSerializer, responses={
                       200: doc.AlertmanagerResultSerializer, **doc.problems(
                           c403="The principal lacks the producer capability, or the responder capability that "
                                "resolved alerts need.",
                           c409="A firing alert conflicts with stored state.",
                           c422="`unknown_channel`: the policy names a channel that is not configured.",
                           c503="`policy_unavailable`: retry later.")})
    def post(self, request):
        message = validate_alertmanager_message(request.data)
        principal = request.user.get_username()
        if any(a["status"] == "resolved" for a in message["alerts"]) and not has_capability(request.user, RESPOND):
            raise exceptions.PermissionDenied("resolved alerts acknowledge notifications: the principal needs the "
                                              "responder capability (or set send_resolved: false)")
        results = []
        for alert in message["alerts"]:
            entry = {"fingerprint": alert["fingerprint"], "status": alert["status"]}
            if alert["status"] == "firing":
                try:
                    accepted = runtime().accept(principal, alert["request"])
                except Conflict as exc:
                    if exc.code != "idempotency_conflict":
                        raise
                    # The same alert instance (fingerprint, startsAt) re-sent with changed
                    # annotations: the obligation already exists.
                    entry.update(result="duplicate", notification_id=exc.extra.get("notification_id"))
                else:
                    entry.update(result="accepted" if accepted.created else "duplicate",
                                 notification_id=accepted.notification.id)
            else:
                outcome = _settle_open(principal, alert["fingerprint"], dismiss=False, metadata={
                    "via": "alertmanager", "alert_status": "resolved", "endsAt": alert["endsAt"]})
                entry.update(result="resolved", **outcome)
            results.append(entry)
        return Response({"status": "success", "received": len(results), "alerts": results})
