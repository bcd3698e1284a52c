"""``POST /api/v1/integrations/alertmanager``: the Prometheus Alertmanager webhook (payload
``version`` "4"), authenticated like the rest of the API (``Authorization: Bearer``). One
notification per firing alert: ``fingerprint`` is the dedup key and, with ``startsAt``, the
idempotency key, so Alertmanager's repeats and retries never duplicate work. Resolved alerts
acknowledge the principal's open notifications with that fingerprint (responder capability
needed). Errors are problem details like the rest of the API; the whole batch is validated

Maps onto the runtime's ``accept`` and ``acknowledge``; the principal and the ACK actor are the
token's user, never a body field.
"""

from drf_spectacular.utils import extend_schema
from rest_framework import exceptions
from rest_framework.response import Response

from core.capabilities import RESPOND, SEND
from core.errors import Conflict
from notifications.access import has_capability
from notifications.apps import runtime
from notifications.runtime import InvalidRequest
from notifications.runtime.intake import validate_request
from notifications.api.openapi import problems
from notifications.api.views import UNSView

from . import payloads
from .common import BODY_MAX, SOURCE_MAX, TITLE_MAX, clip, fits, settle_open
from .payloads import AlertmanagerMessage, AlertmanagerResult

# --- Prometheus Alertmanager webhook --------------------------------------------------------

# labels.severity -> UNS severity; anything else (or none) is "warning".
AM_SEVERITY = {
    "critical": "critical", "page": "critical", "fatal": "critical", "emergency": "critical", "high": "critical",
    "error": "error", "major": "error",
    "warning": "warning", "warn": "warning", "minor": "warning", "medium": "warning",
    "info": "info", "informational": "info", "low": "info", "none": "info", "notice": "info",
}
AM_DEFAULT_SEVERITY = "warning"


def _am_source(labels: dict, receiver: str) -> str:
    parts = [labels[k] for k in ("job", "instance") if labels.get(k)]
    return clip("/".join(parts) or receiver or "alertmanager", SOURCE_MAX)


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
    if not fits({"alertmanager": context}):
        # Long annotations (the description is also the body) are clipped, then dropped.
        context["annotations"] = {k: clip(v, 1024) for k, v in annotations.items()}
        context["annotations_clipped"] = True
        if not fits({"alertmanager": context}):
            context["annotations"] = {}
    return {
        "source": _am_source(labels, message["receiver"]),
        "title": clip(title.strip() or f"alert {alert['fingerprint']}", TITLE_MAX),
        "body": clip(body, BODY_MAX),
        "severity": AM_SEVERITY.get(labels.get("severity", "").lower(), AM_DEFAULT_SEVERITY),
        "dedup_key": alert["fingerprint"],
        "idempotency_key": f"alertmanager:{alert['fingerprint']}:{alert['startsAt']}",
        "require_ack": True,
        "metadata": {"alertmanager": context},
    }


def validate_alertmanager_message(message) -> dict:
    """Parse a webhook message (``payloads.AlertmanagerMessage``, version "4"); return it with
    every alert normalised. Raises ``InvalidRequest`` listing every ``{"field", "message"}``
    problem, including those the SendNotificationRequest of a firing alert would have, so a bad
    batch writes nothing."""
    if not isinstance(message, dict):
        raise InvalidRequest("the webhook body must be a JSON object", errors=[{"field": "", "message": "must be an object"}])
    parsed, problems = payloads.parse(AlertmanagerMessage, message)
    errors = [{"field": field, "message": text} for field, text in problems]
    if errors:
        raise InvalidRequest("the Alertmanager webhook message is invalid", errors=errors)
    external = parsed.externalURL
    normalised = {"receiver": parsed.receiver or "", "externalURL": external if isinstance(external, str) else None,
                  "alerts": []}
    for i, alert in enumerate(parsed.alerts):
        item = {"status": alert.status, "fingerprint": alert.fingerprint, "labels": alert.labels,
                "annotations": alert.annotations or {}, "startsAt": alert.startsAt, "endsAt": alert.endsAt,
                "generatorURL": alert.generatorURL}
        if alert.status == "firing":
            item["request"] = alertmanager_notification(item, normalised)
            try:
                validate_request(item["request"])
            except InvalidRequest as exc:
                errors.extend({"field": f"alerts[{i}] -> {e['field']}", "message": e["message"]}
                              for e in exc.extra["errors"])
        normalised["alerts"].append(item)
    if errors:
        raise InvalidRequest("the Alertmanager webhook message is invalid", errors=errors)
    return normalised


class AlertmanagerWebhookView(UNSView):
    """``POST /api/v1/integrations/alertmanager``: an Alertmanager webhook message (version 4).

    200 ``{"status": "success", "received": N, "alerts": [{"fingerprint", "status", "result",
    ...}]}`` where ``result`` is ``accepted`` (a new notification), ``duplicate`` (a repeat of an
    alert already accepted) or ``resolved`` (its open notifications acknowledged: ``settled``;
    ``before_delivery`` those not delivered yet, whose page is withheld (``runtime.early``);
    ``unsettled`` those another response settled first). 400 ``invalid_request`` for a malformed message
    (nothing written); 403 when it holds resolved alerts and the principal lacks the responder
    capability (nothing written).
    """

    capabilities = {"POST": SEND}  # resolved alerts also need RESPOND (checked below)

    @extend_schema(summary="Prometheus Alertmanager webhook receiver (payload version 4)", tags=["integrations"],
                   request=AlertmanagerMessage, responses={
                       200: AlertmanagerResult, **problems(
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
                outcome = settle_open(principal, alert["fingerprint"], dismiss=False, resolved=True, metadata={
                    "via": "alertmanager", "alert_status": "resolved", "endsAt": alert["endsAt"]})
                entry.update(result="resolved", **outcome)
            results.append(entry)
        return Response({"status": "success", "received": len(results), "alerts": results})
