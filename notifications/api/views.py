"""HTTP endpoints under /api/v1/: thin views that parse, call the runtime or a selector, render.

Each view declares the capability of each method (``capabilities``); see ``permissions.py``.
Errors are RFC 9457 problem details (``problems.py``).
"""
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status as http
from rest_framework.response import Response
from rest_framework.views import APIView

from core.capabilities import OPERATE_DLQ, RESPOND, SEND, VIEW_CONSOLE
from core.schema import parse
from notifications import payloads, selectors
from notifications.access import visible_notification
from notifications.apps import runtime
from notifications.pagination import KnownParams, keyset, page_body, page_request
from notifications.runtime import lists, schemas

from . import openapi as doc
from .deprecation import DLQ_ACTIONS_MOVED, DeprecatedAlias, deprecated
from .parsers import idempotency_header, with_idempotency_header
from .permissions import HasCapability

class UNSView(KnownParams, APIView):
    """An ``/api/v1`` view: the capability its method needs (``capabilities``), and for a GET
    the ``known_params`` it takes when set (``pagination.KnownParams``)."""

    permission_classes = [HasCapability]
    capabilities: dict = {}


class NotificationSubmitView(UNSView):
    """``POST /api/v1/notifications``: submit one notification obligation.

    Body: a ``schemas.SendNotificationRequest`` (parsed by ``runtime.accept``); an
    ``Idempotency-Key`` header stands in for ``idempotency_key``. Answers 202 with
    ``{id, status, dedup_role, owner_id, policy_id, policy_revision, effective_hash}`` for new
    work, 200 with the same body for an idempotent repeat, 409 ``idempotency_conflict`` when the
    key was used with another request, 400/413/415/422 problem details for bad input.
    """

    capabilities = {"POST": SEND}

    @extend_schema(
        summary="Submit a notification", request=schemas.SendNotificationRequest,
        parameters=[OpenApiParameter("Idempotency-Key", str, OpenApiParameter.HEADER,
                                     description="Stands in for `idempotency_key` (they must agree if both are given).")],
        responses={202: payloads.IntakeSummary, 200: payloads.IntakeSummary, **doc.problems(
            c409="`idempotency_conflict`: the key was used with another request.",
            c422="`unknown_channel`: a named channel is not configured or disabled.",
            c503="`policy_unavailable`: no policy can be resolved; retry later.")})
    def post(self, request):
        body = request.data  # {} for an empty body; parsed (and a non-object refused) by accept
        body = with_idempotency_header(body, idempotency_header(request))
        result = runtime().accept(request.user.get_username(), body)
        code = http.HTTP_202_ACCEPTED if result.created else http.HTTP_200_OK
        return Response(selectors.intake_summary(result.notification), status=code,
                        headers={"Location": f"/api/v1/notifications/{result.notification.id}"})


class NotificationDetailView(UNSView):
    """``GET /api/v1/notifications/{id}``: state, outcome, ack fields and timeline.

    Console readers see any notification; a producer sees the ones it submitted. 404 otherwise.
    """

    capabilities = {"GET": (VIEW_CONSOLE, SEND)}

    @extend_schema(summary="One notification with its timeline", parameters=[doc.NOTIFICATION_ID],
                   responses={200: payloads.Notification})
    def get(self, request, notification_id):
        row = visible_notification(request.user, notification_id)  # else the unknown-id 404: no oracle
        return Response(selectors.notification_detail(row))


class _RespondView(UNSView):
    capabilities = {"POST": RESPOND}
    dismiss = False

    @extend_schema(parameters=[doc.NOTIFICATION_ID], request=schemas.RespondRequest, responses={
        200: payloads.Notification, **doc.problems(
            c409="`ack_not_required`, `not_awaiting_ack`, `ack_timed_out`, `ack_conflict`, "
                 "`approval_not_explicit` (an ACK of an approval without `approve: true`) or `self_approval`.")})
    def post(self, request, notification_id):
        body = parse(schemas.RespondRequest, request.data)
        row = runtime().acknowledge(notification_id, request.user.get_username(), dismiss=self.dismiss,
                                    metadata=body.metadata, approve=body.approve)
        return Response(selectors.notification_detail(row, with_timeline=False))


class AckView(_RespondView):
    """``POST /api/v1/notifications/{id}/ack``: body ``{"metadata": {...}, "approve": bool}`` (both
    optional; ``approve: true`` is required to ACK a governance approval, i.e. to approve it).

    200 with the notification; repeats by the same actor are idempotent. 409 ``ack_not_required``,
    ``not_awaiting_ack``, ``ack_timed_out``, ``ack_conflict``, ``approval_not_explicit`` or
    ``self_approval``; 404 for an unknown id.
    """


class DismissView(_RespondView):
    """``POST /api/v1/notifications/{id}/dismiss``: as ``ack``, settling to DISMISSED."""

    dismiss = True


class ReplayView(UNSView):
    """``POST /api/v1/dlq/{id}/replay``: start a new delivery cycle for a dead-lettered
    notification. 200 with the notification; 409 ``not_dead_lettered``, ``replay_blocked`` or
    ``replay_lineage_unknown``; 404."""

    capabilities = {"POST": OPERATE_DLQ}

    @extend_schema(summary="Replay a dead-lettered notification", parameters=[doc.NOTIFICATION_ID],
                   request=schemas.ReplayRequest, responses={200: payloads.Notification, **doc.problems(
                       c409="`not_dead_lettered`, `replay_blocked` or `replay_lineage_unknown`.")})
    def post(self, request, notification_id):
        parse(schemas.ReplayRequest, request.data)
        row = runtime().replay(notification_id, request.user.get_username())
        return Response(selectors.notification_detail(row, with_timeline=False))


@deprecated
class DeprecatedReplayView(DeprecatedAlias, ReplayView):
    """``POST /api/v1/runtime/notifications/{id}/replay``, deprecated: ``POST /api/v1/dlq/{id}/replay``
    answers the same."""

    successor = "dlq-replay"
    deprecated_at = DLQ_ACTIONS_MOVED


DLQ_PARAMS = frozenset({"limit", "cursor"})


class DeadLetterListView(UNSView):
    """``GET /api/v1/dlq?limit=N&cursor=...``: dead-lettered notifications, oldest accepted
    first (``lists.dead_letters``, the list ``/ui/dlq`` shows). Answers ``{"items": [...],
    "next": <cursor or null>}`` (``notifications.pagination``); ``failed_at`` is when the
    settle that dead-lettered each one happened. Unknown parameters are 400."""

    capabilities = {"GET": (VIEW_CONSOLE, OPERATE_DLQ)}
    known_params = DLQ_PARAMS

    @extend_schema(summary="The dead-letter queue", parameters=[doc.LIMIT, doc.CURSOR],
                   responses={200: payloads.DeadLetterPage, **doc.problems(
                       c400="`invalid_request` (a bad or unknown parameter) or `invalid_cursor`.")})
    def get(self, request):
        page = page_request(request.query_params, lists.DLQ_KIND, len(lists.DLQ_ORDER))
        rows, next_cursor = keyset(lists.dead_letters(), lists.DLQ_ORDER, page)
        return Response(page_body(selectors.dlq_items(rows, runtime().clock()), next_cursor))


class ResolveView(UNSView):
    """``POST /api/v1/dlq/{id}/resolve``: resolve without replay (dead_letter=false,
    FAILURE_RESOLVED). 200 with the notification (also for a repeat); 409 ``not_dead_lettered``;
    404."""

    capabilities = {"POST": OPERATE_DLQ}
    schema_kwargs = {"summary": "Resolve a dead-lettered notification without replay",
                     "parameters": [doc.NOTIFICATION_ID], "request": schemas.ResolveRequest,
                     "responses": {200: payloads.Notification, **doc.problems(c409="`not_dead_lettered`.")}}

    @extend_schema(**schema_kwargs)
    def post(self, request, notification_id):
        parse(schemas.ResolveRequest, request.data)
        row = runtime().resolve_failure(notification_id, request.user.get_username())
        return Response(selectors.notification_detail(row, with_timeline=False))


@deprecated
class DeadLetterItemView(DeprecatedAlias, UNSView):
    """``DELETE /api/v1/dlq/{id}``, deprecated: ``POST /api/v1/dlq/{id}/resolve`` answers the same."""

    capabilities = {"DELETE": OPERATE_DLQ}
    successor = "dlq-resolve"
    deprecated_at = DLQ_ACTIONS_MOVED

    @extend_schema(**ResolveView.schema_kwargs)
    def delete(self, request, notification_id):
        return ResolveView.post(self, request, notification_id)



