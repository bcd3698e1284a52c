"""``/api/v1/silences``: silences and maintenance windows over HTTP, through the runtime
(``runtime.silences``; the MCP tools and the console call the same verbs).

Reading needs the console capability; creating, editing, expiring and previewing need the
operator capability (``core.capabilities.SILENCE``). Bodies are ``runtime.silences``' request
models; answers ``selectors.silence_view``. Errors are problem details: 400 ``invalid_request``
(shape) or ``invalid_silence`` (unknown matcher field, bad regular expression, matchers that match
everything, an end not after the start or already past), 404 ``silence_not_found``, 409
``silence_expired`` (editing an ended silence). The creator and every audit row's actor are the
authenticated principal.
"""
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status as http
from rest_framework.response import Response

from core.capabilities import SILENCE, VIEW_CONSOLE
from core.errors import InvalidRequest
from notifications import payloads, selectors
from notifications.apps import runtime
from notifications.models import Silence
from notifications.pagination import keyset, page_body, page_request, single
from notifications.runtime import silences

from . import openapi as doc
from .views import UNSView

SILENCE_ID = OpenApiParameter("silence_id", str, OpenApiParameter.PATH, description="The silence's id.")
SILENCE_ORDER = [("created_at", True), ("id", True)]  # newest first
SILENCE_LIST_PARAMS = frozenset({"limit", "cursor", "state"})
STATES = (silences.ACTIVE, silences.PENDING_STATE, silences.EXPIRED)
_MISSING = "`silence_not_found`: no silence has this id."
_BAD = ("`invalid_request` (body shape) or `invalid_silence` (unknown matcher field, bad regular expression, "
        "matchers that match everything, an end not after the start or in the past).")


class SilenceCollectionView(UNSView):
    """``GET /api/v1/silences``: silences, newest first (``?state=active|pending|expired``).
    ``POST``: create one (201)."""

    capabilities = {"GET": VIEW_CONSOLE, "POST": SILENCE}
    known_params = SILENCE_LIST_PARAMS

    @extend_schema(summary="Silences", operation_id="silences_list", parameters=[
        OpenApiParameter("state", str, enum=list(STATES), description="Only silences in this state now."),
        OpenApiParameter("limit", int, description="Page size, 1..500 (default 100)."),
        OpenApiParameter("cursor", str, description="`next` of the previous page.")],
        responses={200: payloads.SilenceList, **doc.problems(
            c400="`invalid_request` (a bad or unknown parameter) or `invalid_cursor`.")})
    def get(self, request):
        """One page of silences: ``{"items": [silence view], "next": cursor | null}``."""
        params = request.query_params
        state = single(params, "state")
        if state is not None and state not in STATES:
            raise InvalidRequest("unknown state", errors=[{"field": "state", "message": f"must be one of {list(STATES)}"}])
        now = runtime().clock()
        qs = Silence.objects.all() if state is None else Silence.objects.filter(silences.state_filter(state, now))
        rows, next_cursor = keyset(qs, SILENCE_ORDER, page_request(params, "silences", len(SILENCE_ORDER)))
        return Response(page_body([selectors.silence_view(s, now) for s in rows], next_cursor))

    @extend_schema(summary="Create a silence (a later start makes a maintenance window)",
                   request=silences.SilenceRequest,
                   responses={201: payloads.Silence, **doc.problems(c400=_BAD)})
    def post(self, request):
        rt = runtime()
        row = rt.create_silence(request.user.get_username(), request.data)
        return Response(selectors.silence_view(row, rt.clock()), status=http.HTTP_201_CREATED,
                        headers={"Location": f"/api/v1/silences/{row.id}"})


class SilenceItemView(UNSView):
    """``GET /api/v1/silences/{id}`` (with its audit trail); ``PATCH`` edits a pending or active
    silence (matchers, comment, times; a started silence keeps its start)."""

    capabilities = {"GET": VIEW_CONSOLE, "PATCH": SILENCE}

    @extend_schema(summary="One silence and its audit trail", parameters=[SILENCE_ID],
                   responses={200: payloads.SilenceDetail, **doc.problems(c404=_MISSING)})
    def get(self, request, silence_id):
        row = silences.get(silence_id)
        return Response({**selectors.silence_view(row, runtime().clock()), "audit": selectors.silence_audit(row.id)})

    @extend_schema(summary="Edit a silence", parameters=[SILENCE_ID], request=silences.SilenceUpdateRequest,
                   responses={200: payloads.Silence, **doc.problems(
                       c400=_BAD, c404=_MISSING, c409="`silence_expired`: an ended silence cannot be edited.")})
    def patch(self, request, silence_id):
        rt = runtime()
        return Response(selectors.silence_view(rt.update_silence(silence_id, request.user.get_username(),
                                                                 request.data), rt.clock()))


class SilenceExpireView(UNSView):
    """``POST /api/v1/silences/{id}/expire``: end it now (idempotent); what it held is re-timed."""

    capabilities = {"POST": SILENCE}

    @extend_schema(summary="Expire a silence now", parameters=[SILENCE_ID], request=None,
                   responses={200: payloads.Silence, **doc.problems(c404=_MISSING)})
    def post(self, request, silence_id):
        rt = runtime()
        return Response(selectors.silence_view(rt.expire_silence(silence_id, request.user.get_username()), rt.clock()))


class SilencePreviewView(UNSView):
    """``POST /api/v1/silences/preview``: which open notifications these matchers would match
    now (a bounded count and a sample); writes nothing."""

    capabilities = {"POST": SILENCE}

    @extend_schema(summary="Preview what a silence would match now", request=silences.PreviewRequest,
                   responses={200: payloads.SilencePreview, **doc.problems(c400=_BAD)})
    def post(self, request):
        return Response(silences.preview(request.data))
