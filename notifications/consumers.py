"""WebSocket consumers (Channels): live timelines and responses over the socket.

Both authenticate in ``connect()`` (``ws_auth``: token header, ``token`` query parameter or the
session) and need a capability: ``/ws/timeline/`` the console one, ``/ws/respond/`` the
responder one. A refused socket is accepted and closed at once with 4401 (no or bad
credentials) or 4403 (no capability): closing before the handshake completes would reach the
client as a bare HTTP 403, with nothing to tell the two apart. No message is read or sent first.

Every inbound frame is validated (a JSON object of known fields, at most
``UNS_MAX_BODY_BYTES``); group names are built only from validated UUIDs. Errors are RFC 9457
problem details with the same ``code`` as over HTTP.
"""
import asyncio
import json
import logging
from collections import OrderedDict
from typing import Literal

from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings
from pydantic import Field

from core import codes, json_values
from core.capabilities import RESPOND, VIEW_CONSOLE
from core.errors import InvalidJSON
from core.json_values import refusal
from core.keys import is_notification_id
from core.problems import payload_too_large, problem, problem_of
from core.schema import Schema, parse, parse_dict

from . import live, selectors, ws_auth
from .access import CapabilityDenied, NotAuthenticated, TokenRefused, visible_notification
from .models import Event
from .runtime import InvalidRequest, UNSError, schemas
from .runtime.requests import check_request_id

log = logging.getLogger("uns.ws")

MAX_SUBSCRIPTIONS = 100
CATCH_UP_LIMIT = 1000  # events of one notification sent on subscribe (the newest ones)
STREAM_CATCH_UP_DEFAULT = 100
STREAM_CATCH_UP_MAX = 500
SENT_IDS_REMEMBERED = 10000


def _invalid(field: str, message: str) -> InvalidRequest:
    return InvalidRequest(f"{field or 'message'} {message}", errors=[{"field": field, "message": message}])


def _uuid(message: dict, field: str = "notification_id") -> str:
    value = message.get(field)
    if not is_notification_id(value):
        raise _invalid(field, "must be a notification id (a UUID string)")
    return value


def _echoable_request_id(message) -> str | None:
    """The ``request_id`` of a frame refused as a whole (a NUL or ``1e400`` elsewhere in it), so
    the client can match the error to its request; None unless it is a valid request id
    (``check_request_id``) that ``core.json_values.refusal`` accepts."""
    if not isinstance(message, dict):
        return None
    try:
        value = check_request_id(message.get("request_id"))
    except InvalidRequest:
        return None
    return value if value is not None and refusal(value) is None else None


class _StreamFrame(Schema):
    """The members of a timeline frame about the stream of all events, besides ``action`` and
    ``request_id``."""

    stream: Literal["all"]
    limit: int = Field(STREAM_CATCH_UP_DEFAULT, ge=0, le=STREAM_CATCH_UP_MAX)


class _NotificationFrame(Schema):
    """The members of a timeline frame about one notification, besides ``action`` and
    ``request_id`` (``notification_id`` is then checked to be a UUID)."""

    notification_id: str


def _members(message: dict, model: type[Schema]) -> Schema:
    """``message`` without its ``action`` and ``request_id``, parsed as ``model``."""
    return parse(model, {k: v for k, v in message.items() if k not in ("action", "request_id")})


class _Consumer(AsyncWebsocketConsumer):
    """Authentication, frame decoding and problem replies shared by the UNS sockets."""

    capability: str = ""
    path: str = ""

    async def connect(self):
        self.principal, refusal = await ws_auth.authenticate(self.scope, self.capability)
        if refusal:
            await self.accept()
            await self.close(code=refusal)
            return
        live.bind_loop(asyncio.get_running_loop())  # see notifications.live: where sends must run
        await self.accept()

    async def send_json(self, content: dict) -> None:
        """Send one JSON text frame. A client that went away while it was being answered
        (the server's transport refuses the send: uvicorn's ``ClientDisconnected``, an
        ``OSError``) has nobody left to answer: logged at INFO, not as a failure."""
        try:
            await self.send(text_data=json.dumps(content))
        except OSError as exc:
            log.info("%s: the client left before its answer was sent (%s)", self.path, type(exc).__name__)

    def problem(self, exc: Exception) -> dict:
        if isinstance(exc, UNSError):
            return problem(exc.status, exc.code, exc.title, exc.detail, self.path, **exc.extra)
        log.exception("unexpected failure handling a %s message", self.path)
        return problem_of(codes.INTERNAL_ERROR, "the server failed; retry the message", self.path)

    async def receive(self, text_data=None, bytes_data=None):
        if getattr(self, "principal", None) is None:
            return  # a refused socket: its close is already on the way
        limit = settings.UNS_MAX_BODY_BYTES
        if text_data is None:
            await self.reply_error(None, problem_of(codes.UNSUPPORTED_FRAME, "send JSON text frames, not binary ones",
                                                    self.path))
            return
        if len(text_data) > limit:
            await self.reply_error(None, payload_too_large(limit, self.path, what="messages", unit="characters"))
            return
        try:
            message = json_values.loads(text_data)  # the HTTP parser's refusals (NUL, surrogates, non-finite)
        except InvalidJSON as exc:  # echo the frame's request_id when it is itself a good one
            await self.reply_error(_echoable_request_id(getattr(exc, "parsed", None)), self.problem(exc))
            return
        except ValueError:
            # the code HTTP gives a body that is not JSON (parse_error), as the reference promises
            await self.reply_error(None, problem_of(codes.PARSE_ERROR, "JSON parse error - the message is not JSON",
                                                 self.path))
            return
        if not isinstance(message, dict):
            await self.reply_error(None, self.problem(_invalid("", "must be a JSON object")))
            return
        await self.checked(message)

    async def checked(self, message: dict) -> None:
        """Re-check the socket's credentials (``ws_auth.reauthorize``), then ``handle`` the
        message. A consumer whose messages need the database anyway overrides this to run the
        check in the same ``ws_auth.database_call`` as the work (``RespondConsumer``)."""
        refusal = await ws_auth.reauthorize(self.scope, self.principal, self.capability)
        if refusal:
            await self.refuse(message.get("request_id"), refusal)
            return
        await self.handle(message)

    async def refuse(self, request_id, refusal: int) -> None:
        """Answer a message of a socket whose credentials no longer hold, with the message's
        ``request_id`` when it is a string, then close with ``refusal`` (``ws_auth.UNAUTHENTICATED``
        or ``ws_auth.FORBIDDEN``). The problem is the one HTTP and MCP give the same credentials
        (``access``): 403 ``permission_denied`` for a capability gone, 401
        ``authentication_failed`` for a token refused (revoked, expired, user inactive), 401
        ``not_authenticated`` for a session that ended."""
        detail = "the credentials of this socket are no longer valid for this action"
        if refusal == ws_auth.FORBIDDEN:
            exc = CapabilityDenied(detail)
        elif self.principal.token is not None:
            exc = TokenRefused(detail)
        else:
            exc = NotAuthenticated(detail)
        await self.reply_error(request_id if isinstance(request_id, str) else None, self.problem(exc))
        await self.close(code=refusal)

    async def handle(self, message: dict) -> None:
        raise NotImplementedError

    async def reply_error(self, request_id, body: dict) -> None:
        raise NotImplementedError


class TimelineConsumer(_Consumer):
    """``/ws/timeline/``: live timelines (console capability).

    Client messages::

        {"action": "subscribe", "notification_id": "<uuid>"}
        {"action": "subscribe", "stream": "all", "limit": 100}      # limit: catch-up size, 0..500
        {"action": "unsubscribe", "notification_id": "<uuid>"}  |  {"action": "unsubscribe", "stream": "all"}

    each with an optional ``request_id`` echoed back. A subscribe is answered with
    ``{"type": "subscribed", "notification_id" | "stream", "events": [...], "truncated": bool}``:
    the catch-up, oldest first (one notification: its newest ``CATCH_UP_LIMIT`` events; the
    stream: the newest ``limit`` events of all). Then every event committed afterwards, by any
    process, arrives as ``{"type": "event", "event": {id, notification_id, kind, at, at_iso,
    payload}}``, each event once per socket even when two subscriptions cover it. Live pushes
    are best effort; re-subscribing catches up again. Errors: ``{"type": "error", "request_id",
    "problem": {...}}``. The frames' models: ``payloads.TimelineSubscribed``, ``TimelineEventFrame``,
    ``TimelineUnsubscribed``, ``TimelineError``.
    """

    capability = VIEW_CONSOLE
    path = "/ws/timeline/"

    async def connect(self):
        self.groups_joined: set[str] = set()
        self.sent_ids: OrderedDict[str, None] = OrderedDict()
        await super().connect()

    async def disconnect(self, code):
        for group in list(getattr(self, "groups_joined", ())):
            await self.channel_layer.group_discard(group, self.channel_name)
        self.groups_joined = set()

    async def reply_error(self, request_id, body):
        await self.send_json({"type": "error", "request_id": request_id, "problem": body})

    async def handle(self, message):
        request_id = None
        try:
            request_id = check_request_id(message.get("request_id"))
            action = message.get("action")
            if action not in ("subscribe", "unsubscribe"):
                raise InvalidRequest("action must be subscribe or unsubscribe", code=codes.UNKNOWN_ACTION,
                                     errors=[{"field": "action", "message": "must be subscribe or unsubscribe"}])
            if "stream" in message:
                limit = _members(message, _StreamFrame).limit
                target = {"stream": "all"}
                group = live.TIMELINE_ALL
            else:
                _members(message, _NotificationFrame)
                nid = _uuid(message)
                target = {"notification_id": nid}
                group = live.timeline_group(nid)
            if action == "unsubscribe":
                if group in self.groups_joined:
                    await self.channel_layer.group_discard(group, self.channel_name)
                    self.groups_joined.discard(group)
                await self.send_json({"type": "unsubscribed", "request_id": request_id, **target})
                return
            if group not in self.groups_joined and len(self.groups_joined) >= MAX_SUBSCRIPTIONS:
                raise InvalidRequest(f"at most {MAX_SUBSCRIPTIONS} subscriptions per socket",
                                     code=codes.TOO_MANY_SUBSCRIPTIONS)
            if "stream" not in target:  # the unknown-id 404 also for one the principal may not see
                await ws_auth.database_call(visible_notification)(self.principal.user, target["notification_id"])
            # Join before reading: an event committed meanwhile is in the catch-up, the live
            # stream or both (sent once), never in neither.
            await self.channel_layer.group_add(group, self.channel_name)
            self.groups_joined.add(group)
            if "stream" in target:
                events, truncated = await self._recent(None, limit)
            else:
                events, truncated = await self._recent(target["notification_id"], CATCH_UP_LIMIT)
            fresh = [e for e in events if e["id"] not in self.sent_ids]
            for e in fresh:
                self._remember(e["id"])
            await self.send_json({"type": "subscribed", "request_id": request_id, **target, "events": fresh,
                                  "truncated": truncated})
        except Exception as exc:  # every failure is answered, and the socket stays usable
            await self.reply_error(request_id, self.problem(exc))

    @ws_auth.database_call
    def _recent(self, notification_id: str | None, limit: int) -> tuple[list[dict], bool]:
        qs = Event.objects.all() if notification_id is None else Event.objects.filter(notification_id=notification_id)
        newest = list(qs.order_by("-at", "-id")[:limit + 1]) if limit else []
        truncated = len(newest) > limit or (limit == 0 and qs.exists())
        return [live.event_message(ev) for ev in reversed(newest[:limit])], truncated

    def _remember(self, event_id: str) -> None:
        self.sent_ids[event_id] = None
        if len(self.sent_ids) > SENT_IDS_REMEMBERED:
            self.sent_ids.popitem(last=False)

    async def timeline_event(self, message):
        """A live event from the channel layer (``live.MESSAGE_TYPE``)."""
        event = message.get("event") or {}
        event_id = event.get("id")
        if not event_id or event_id in self.sent_ids:
            return
        self._remember(event_id)
        await self.send_json({"type": "event", "event": event})


class RespondConsumer(_Consumer):
    """``/ws/respond/``: ACK, dismiss and snooze over the socket (responder capability).

    Client messages (``request_id``: the client's id for the message, 1..128 characters)::

        {"action": "ack",     "request_id": "...", "notification_id": "<uuid>", "metadata": {...}}
        {"action": "dismiss", "request_id": "...", "notification_id": "<uuid>", "metadata": {...}}
        {"action": "snooze",  "request_id": "...", "notification_id": "<uuid>", "seconds": 600, "metadata": {...}}

    An ACK of a governance approval notification approves only with ``"approve": true`` in the
    frame (else the problem ``approval_not_explicit``); a dismiss of one denies.

    Answers ``{"request_id", "ok": true, "notification": {...}}`` (the HTTP notification body,
    without timeline) or ``{"request_id", "ok": false, "problem": {...}}`` with the same
    ``code`` HTTP gives (``ack_conflict``, ``ack_timed_out``, ``not_found``, ...). Repeats are
    idempotent: ACK and dismiss by the same actor return the settled row, and a snooze repeated
    with the same ``request_id`` does not snooze again. The actor is the socket's principal.
    The answers' models: ``payloads.RespondReply`` and ``payloads.RespondError``.
    """

    capability = RESPOND
    path = "/ws/respond/"
    # Each action's body is its verb's input schema, as over HTTP and MCP; the frame adds the
    # addressing members ENVELOPE.
    ACTIONS = {
        "ack": schemas.RespondRequest,
        "dismiss": schemas.RespondRequest,
        "snooze": schemas.SnoozeRequest,
    }
    ENVELOPE = ("action", "request_id", "notification_id")

    async def reply_error(self, request_id, body):
        await self.send_json({"request_id": request_id, "ok": False, "problem": body})

    async def checked(self, message):
        """Validate the message, then re-check the credentials, respond and read the answer in
        one ``ws_auth.database_call`` (one thread hop, one pooled connection): with a token,
        1 statement for the check and what ``Runtime.acknowledge`` / ``snooze`` need."""
        request_id = None  # echoed only once it is itself valid
        try:
            request_id = check_request_id(message.get("request_id"), required=True)
            action = message.get("action")
            if action not in self.ACTIONS:
                raise InvalidRequest(f"unknown action {action!r}; use one of {sorted(self.ACTIONS)}",
                                     code=codes.UNKNOWN_ACTION,
                                     errors=[{"field": "action", "message": f"must be one of {sorted(self.ACTIONS)}"}])
            nid = _uuid(message)
            parsed = parse_dict(self.ACTIONS[action], {k: v for k, v in message.items()
                                                                if k not in self.ENVELOPE})
        except Exception as exc:
            # Credentials are re-checked before every answer, a refusal of bad input included.
            refusal = await ws_auth.reauthorize(self.scope, self.principal, self.capability)
            if refusal:
                await self.refuse(request_id, refusal)
            else:
                await self.reply_error(request_id, self.problem(exc))
            return
        try:
            refusal, body = await ws_auth.database_call(self._respond)(action, nid, parsed, request_id)
        except Exception as exc:
            await self.reply_error(request_id, self.problem(exc))
            return
        if refusal:
            await self.refuse(request_id, refusal)
            return
        await self.send_json({"request_id": request_id, "ok": True, "notification": body})

    def _respond(self, action: str, nid: str, message: dict, request_id: str) -> tuple[int | None, dict | None]:
        """In a database thread: ``(close code, None)`` when the credentials no longer hold, else
        ``(None, notification body)`` after the response. Raises what the runtime raises."""
        refusal = ws_auth.recheck(self.scope, self.principal, self.capability)
        if refusal:
            return refusal, None
        row = self._act(action, nid, message, request_id)
        return None, selectors.notification_detail(row, with_timeline=False)

    def _act(self, action: str, nid: str, message: dict, request_id: str):
        from .apps import runtime  # the process's runtime, shared with every transport

        actor = self.principal.name
        if action == "snooze":
            return runtime().snooze(nid, actor, message["seconds"], metadata=message.get("metadata"),
                                    request_id=request_id)
        return runtime().acknowledge(nid, actor, dismiss=action == "dismiss", metadata=message.get("metadata"),
                                     approve=message.get("approve", False))
