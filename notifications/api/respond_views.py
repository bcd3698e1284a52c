"""Responder endpoints beyond ACK and dismiss: snooze and escalate (responder capability).

Both take an optional ``Idempotency-Key`` header: a retry with the same key by the same
principal returns the first result instead of snoozing or escalating again.
"""
from drf_spectacular.utils import extend_schema
from rest_framework import status as http
from rest_framework.response import Response

from core.capabilities import RESPOND
from core.schema import parse
from notifications import payloads, selectors
from notifications.apps import runtime
from notifications.runtime import schemas

from . import openapi as doc
from .views import UNSView


class SnoozeView(UNSView):
    """``POST /api/v1/notifications/{id}/snooze``: body ``{"seconds": N, "metadata": {...}}``.

    Postpones the acknowledgement deadline to now + ``seconds`` (60..86400) while the
    notification awaits a response; SNOOZED event and an ack audit row. 200 with the
    notification. 400 ``invalid_request`` (seconds missing or out of range); 409
    ``ack_not_required``, ``not_awaiting_ack``, ``ack_timed_out`` or ``ack_conflict``; 404.
    """

    capabilities = {"POST": RESPOND}

    @extend_schema(summary="Snooze: postpone the ACK deadline", parameters=[doc.NOTIFICATION_ID, doc.IDEMPOTENCY_KEY],
                   request=schemas.SnoozeRequest, responses={
                       200: payloads.Notification, **doc.problems(c409=doc.RESPONSE_CONFLICTS)})
    def post(self, request, notification_id):
        body = parse(schemas.SnoozeRequest, request.data)
        row = runtime().snooze(notification_id, request.user.get_username(), body.seconds,
                               metadata=body.metadata, request_id=request.headers.get("Idempotency-Key"))
        return Response(selectors.notification_detail(row, with_timeline=False))


class EscalateView(UNSView):
    """``POST /api/v1/notifications/{id}/escalate``: body ``{"reason": "..."}`` (optional).

    Jumps to the next level of the escalation chain frozen in the notification's policy (the
    first level before the chain started, the last level again at its end): sends a new
    notification (``ESCALATED: <title>``) to that level's channels; ESCALATED event on the
    original; the chain goes on from that level (``runtime.escalation.escalate``). Allowed while
    the notification awaits a response or after it timed out. 202 with the notification and
    ``escalation`` ``{id, number, level, channels, target, status}`` (200 for an
    ``Idempotency-Key`` repeat); 409 ``no_escalation_target``, ``escalation_stopped`` (a response
    stopped the chain), ``escalation_target_unavailable``, ``ack_not_required``,
    ``not_awaiting_ack`` or ``ack_conflict``; 404.
    """

    capabilities = {"POST": RESPOND}

    @extend_schema(summary="Escalate to the next level of the policy's escalation chain", parameters=[doc.NOTIFICATION_ID,
                                                                                     doc.IDEMPOTENCY_KEY],
                   request=schemas.EscalateRequest, responses={
                       202: payloads.EscalatedNotification, 200: payloads.EscalatedNotification,
                       **doc.problems(c409="`no_escalation_target`, `escalation_stopped`, `escalation_target_unavailable`, "
                                           "`ack_not_required`, `not_awaiting_ack` or `ack_conflict`.")})
    def post(self, request, notification_id):
        body = parse(schemas.EscalateRequest, request.data)
        result = runtime().escalate(notification_id, request.user.get_username(), body.reason,
                                    request_id=request.headers.get("Idempotency-Key"))
        return Response({
            **selectors.notification_detail(result.notification, with_timeline=False),
            "escalation": {
                "id": result.escalation.id,
                "number": result.number,
                "level": result.level,
                "channels": list(result.channels),
                "target": result.target,
                "status": result.escalation.status,
            },
        }, status=http.HTTP_202_ACCEPTED if result.created else http.HTTP_200_OK)
