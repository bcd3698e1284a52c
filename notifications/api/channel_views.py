"""``/api/v1/channels``: the operator's channel management over HTTP, through the one channel
service (``runtime.channels``, which ``uns_channel`` and the admin call too).

Every method needs the operator capability (``core.capabilities.OPERATE_DLQ``, the capability the
seeded ``operator`` group holds). Bodies are the ``schemas.Channel*Request`` models; answers
are ``selectors.channel_view`` (never the secret; URL credentials masked). Errors are problem
details: 400 ``invalid_request`` / ``invalid_channel`` (bad URL, bad timeout, unknown config
member), 404 ``channel_not_found``, 409 ``channel_exists`` or ``channel_routed`` (disabling a
channel the ACTIVE policy set routes to: nothing changes). The actor of each audit row is the
authenticated principal.
"""
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status as http
from rest_framework.response import Response

from core import codes
from core.capabilities import OPERATE_DLQ
from core.errors import NotFound
from core.schema import parse
from notifications import payloads, selectors
from notifications.apps import runtime
from notifications.models import Channel
from notifications.pagination import keyset, page_body, page_request
from notifications.runtime import channels, schemas

from . import openapi as doc
from .views import UNSView

CHANNEL_NAME = OpenApiParameter("name", str, OpenApiParameter.PATH, description="The channel's name.")
CHANNEL_ORDER = [("name", False)]  # names are unique
CHANNEL_LIST_PARAMS = frozenset({"limit", "cursor"})
_BAD = "`invalid_request` (body shape) or `invalid_channel` (a bad URL, timeout, address or member)."
_ROUTED = "`channel_routed`: the ACTIVE policy set routes to this channel; `routes` says where."


class ChannelCollectionView(UNSView):
    """``GET /api/v1/channels``: every channel, by name. ``POST``: create one (201)."""

    capabilities = {"GET": OPERATE_DLQ, "POST": OPERATE_DLQ}
    known_params = CHANNEL_LIST_PARAMS

    @extend_schema(summary="Delivery channels", operation_id="channels_list",
                   parameters=[OpenApiParameter("limit", int, description="Page size, 1..500 (default 100)."),
                               OpenApiParameter("cursor", str, description="`next` of the previous page.")],
                   responses={200: payloads.ChannelList, **doc.problems(
                       c400="`invalid_request` (a bad or unknown parameter) or `invalid_cursor`.")})
    def get(self, request):
        """One page of channels by name: ``{"items": [channel view], "next": cursor | null}``
        (``notifications.pagination``; an unknown query parameter is 400 ``invalid_request``)."""
        params = request.query_params
        page = page_request(params, "channels", len(CHANNEL_ORDER))
        rows, next_cursor = keyset(Channel.objects.all(), CHANNEL_ORDER, page)
        return Response(page_body([selectors.channel_view(ch) for ch in rows], next_cursor))

    @extend_schema(summary="Create a delivery channel", request=schemas.ChannelCreateRequest,
                   responses={201: payloads.Channel, **doc.problems(
                       c400=_BAD, c409="`channel_exists`: the name is taken.")})
    def post(self, request):
        body = parse(schemas.ChannelCreateRequest, request.data)
        row = channels.create(body.name, body.kind, body.config, body.secret, enabled=body.enabled,
                              actor=request.user.get_username())
        return Response(selectors.channel_view(row), status=http.HTTP_201_CREATED,
                        headers={"Location": f"/api/v1/channels/{row.name}"})


class ChannelItemView(UNSView):
    """``GET /api/v1/channels/{name}``; ``PATCH`` changes config members (``null`` removes)."""

    capabilities = {"GET": OPERATE_DLQ, "PATCH": OPERATE_DLQ}

    @extend_schema(summary="One delivery channel", parameters=[CHANNEL_NAME], responses={200: payloads.Channel})
    def get(self, request, name):
        row = Channel.objects.filter(name=name).first() if "\x00" not in name else None
        if row is None:
            raise NotFound(f"no channel {name!r}", code=codes.CHANNEL_NOT_FOUND)
        return Response(selectors.channel_view(row))

    @extend_schema(summary="Change a channel's settings", parameters=[CHANNEL_NAME],
                   request=schemas.ChannelUpdateRequest,
                   responses={200: payloads.Channel, **doc.problems(c400=_BAD)})
    def patch(self, request, name):
        body = parse(schemas.ChannelUpdateRequest, request.data)
        return Response(selectors.channel_view(channels.update(name, body.config, actor=request.user.get_username())))


class ChannelSecretView(UNSView):
    """``POST /api/v1/channels/{name}/rotate-secret``: replace the secret (write-only)."""

    capabilities = {"POST": OPERATE_DLQ}

    @extend_schema(summary="Rotate a channel's secret", parameters=[CHANNEL_NAME],
                   request=schemas.ChannelSecretRequest,
                   responses={200: payloads.Channel, **doc.problems(c400=_BAD)})
    def post(self, request, name):
        body = parse(schemas.ChannelSecretRequest, request.data)
        row = channels.rotate_secret(name, body.secret, actor=request.user.get_username())
        return Response(selectors.channel_view(row))


class ChannelEnableView(UNSView):
    """``POST /api/v1/channels/{name}/enable`` (idempotent)."""

    capabilities = {"POST": OPERATE_DLQ}

    @extend_schema(summary="Enable a channel", parameters=[CHANNEL_NAME], request=schemas.ChannelActionRequest,
                   responses={200: payloads.Channel})
    def post(self, request, name):
        parse(schemas.ChannelActionRequest, request.data)
        return Response(selectors.channel_view(channels.enable(name, actor=request.user.get_username())))


class ChannelDisableView(UNSView):
    """``POST /api/v1/channels/{name}/disable`` (idempotent); 409 ``channel_routed``."""

    capabilities = {"POST": OPERATE_DLQ}

    @extend_schema(summary="Disable a channel", parameters=[CHANNEL_NAME], request=schemas.ChannelActionRequest,
                   responses={200: payloads.Channel, **doc.problems(c409=_ROUTED)})
    def post(self, request, name):
        parse(schemas.ChannelActionRequest, request.data)
        return Response(selectors.channel_view(channels.disable(name, actor=request.user.get_username())))


class ChannelTestView(UNSView):
    """``POST /api/v1/channels/{name}/test``: send one test message through the channel's real
    adapter; 200 ``{success, answer, error}`` whether or not the provider accepted it."""

    capabilities = {"POST": OPERATE_DLQ}

    @extend_schema(summary="Send a test message through a channel", parameters=[CHANNEL_NAME],
                   request=schemas.ChannelActionRequest, responses={200: payloads.ChannelTestResult})
    def post(self, request, name):
        parse(schemas.ChannelActionRequest, request.data)
        result = channels.send_test(name, adapters=runtime().adapters, actor=request.user.get_username())
        return Response({"success": result.success, "answer": result.answer, "error": result.error})
