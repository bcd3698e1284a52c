"""Bulk actions over HTTP (``runtime.bulk``): create one on a filtered list, then run it in
bounded chunks until done. Thin: parse, check the action's capability, call the runtime.

- ``POST /api/v1/bulk-actions``: body ``schemas.BulkActionRequest`` ``{"action": "replay" |
  "resolve" | "ack" | "snooze", "filter": {"q", "source"}, "expected": N, "seconds"}``; 201 with
  the bulk action's progress (``bulk.progress``). The first ``expected`` items matching now, in
  the list's order, are frozen; ``matched`` says how many matched in all.
- ``POST /api/v1/bulk-actions/{id}/run``: body ``{"limit": 1..100}`` (optional); 200 with the
  progress and ``results``, this call's per-item results (``settled`` or ``refused`` with the
  runtime's ``code``/``detail``). Call again while ``remaining`` > 0; after a crash, calling it
  continues where the last one stopped.

Capabilities: the one each action's single-item verb needs (``core.capabilities.BULK_CAPABILITIES``:
replay and resolve ``operate_dlq``, ack and snooze ``respond_notification``).
The console reads a bulk action's items from ``GET /ui/bulk-actions/{id}``.
"""
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status as http
from rest_framework.response import Response

from core.capabilities import OPERATE_DLQ, RESPOND
from core.schema import parse
from notifications import payloads
from notifications.access import check_bulk_capability
from notifications.apps import runtime
from notifications.runtime import bulk, schemas

from . import openapi as doc
from .views import UNSView

BULK_ID = OpenApiParameter("bulk_id", str, OpenApiParameter.PATH, description="The bulk action's id.")


class BulkActionCollectionView(UNSView):
    """``POST /api/v1/bulk-actions``: create a bulk action (see the module docstring). 400
    ``invalid_request``; 403 without the action's capability; 409 ``bulk_nothing_matches``."""

    capabilities = {"POST": (OPERATE_DLQ, RESPOND)}

    @extend_schema(summary="Create a bulk action on a filtered list", request=schemas.BulkActionRequest,
                   responses={201: payloads.BulkProgress, **doc.problems(
                       c409="`bulk_nothing_matches`: no item matches the filter now.")})
    def post(self, request):
        action = request.data.get("action") if isinstance(request.data, dict) else None
        if isinstance(action, str) and action in bulk.ACTIONS:
            check_bulk_capability(request.user, action)
        created = runtime().create_bulk(request.user.get_username(), request.data)
        return Response(bulk.progress(created), status=http.HTTP_201_CREATED,
                        headers={"Location": f"/ui/bulk-actions/{created.id}"})


class BulkActionRunView(UNSView):
    """``POST /api/v1/bulk-actions/{id}/run``: settle the next items (at most ``limit``, 100).
    404 ``bulk_action_not_found``; 403 without the action's capability."""

    capabilities = {"POST": (OPERATE_DLQ, RESPOND)}

    @extend_schema(summary="Run the next chunk of a bulk action", parameters=[BULK_ID],
                   request=schemas.BulkRunRequest, responses={200: payloads.BulkRun, **doc.problems(
                       c404="`bulk_action_not_found`.")})
    def post(self, request, bulk_id):
        body = parse(schemas.BulkRunRequest, request.data)
        check_bulk_capability(request.user, bulk.get(bulk_id).action)
        return Response(runtime().run_bulk(bulk_id, request.user.get_username(), body.limit))
