"""Read endpoints with filters and opaque cursors: the notification listing and paged timelines.

``GET /api/v1/notifications`` shares its path with the submit endpoint, so
``NotificationCollectionView`` extends ``NotificationSubmitView`` (whose POST is unchanged) with
GET. Console readers list every notification; a producer lists only its own.

Cursors are opaque to clients: URL-safe base64 of a small JSON document naming the ordering and
the (time, id) position of the last row of the page. A tampered or foreign cursor is a 400
``invalid_cursor``; a page ends the listing when ``next`` is null.
"""
import base64
import binascii
import json
import math
from datetime import datetime, timezone

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.response import Response

from notifications import selectors
from notifications.access import visible_notification, visible_principal
from notifications.runtime import InvalidRequest
from notifications.runtime.transitions import ACK_PENDING, ACK_TERMINAL, STATUSES

from . import openapi as doc
from .permissions import SEND, VIEW_CONSOLE
from .views import NotificationSubmitView, UNSView

MAX_LIMIT = 500
DEFAULT_LIMIT = 100
ACK_STATUSES = (ACK_PENDING, *ACK_TERMINAL)
# ``ack_status=NONE`` selects notifications without an ack status (not required, not delivered).
ACK_NONE = "NONE"
LIST_PARAMS = frozenset({"status", "ack_status", "source", "dead_letter", "principal", "since", "until",
                         "order", "limit", "cursor"})
TIMELINE_PARAMS = frozenset({"limit", "cursor"})


def _bad(field: str, message: str, code: str = "invalid_request"):
    return InvalidRequest(f"query parameter {field!r} {message}", code=code,
                          errors=[{"field": field, "message": message}])


def _single(params, name: str) -> str | None:
    values = params.getlist(name)
    if len(values) > 1:
        raise _bad(name, "must be given at most once")
    return values[0] if values else None


def _check_known(params, allowed: frozenset) -> None:
    unknown = sorted(set(params) - allowed)
    if unknown:
        raise InvalidRequest("unknown query parameters", errors=[{"field": k, "message": "unknown parameter"}
                                                                   for k in unknown])


def parse_limit(params) -> int:
    raw = _single(params, "limit")
    if raw is None:
        return DEFAULT_LIMIT
    try:
        limit = int(raw)
    except ValueError:
        limit = 0
    if not 1 <= limit <= MAX_LIMIT:
        raise _bad("limit", f"must be an integer from 1 to {MAX_LIMIT}")
    return limit


def parse_time(params, name: str) -> float | None:
    """Epoch seconds (``1800000000`` or ``1800000000.5``) or ISO-8601 (``2027-01-15T08:00:00Z``;
    without an offset the time is taken as UTC)."""
    raw = _single(params, name)
    if raw is None:
        return None
    try:
        value = float(raw)
    except ValueError:
        try:
            parsed = datetime.fromisoformat(raw.strip())
        except ValueError:
            raise _bad(name, "must be epoch seconds or an ISO-8601 date-time") from None
        if parsed.tzinfo is None:
            parsed = parsed.replace(tzinfo=timezone.utc)
        value = parsed.timestamp()
    if not math.isfinite(value):
        raise _bad(name, "must be a finite time")
    return value


def _choices(params, name: str, allowed: tuple[str, ...]) -> list[str] | None:
    """A comma-separated list (``status=PENDING,FAILED``); the parameter may also repeat."""
    raw = params.getlist(name)
    if not raw:
        return None
    values = [v.strip() for item in raw for v in item.split(",") if v.strip()]
    wrong = [v for v in values if v not in allowed]
    if wrong or not values:
        raise _bad(name, f"must be one or more of {list(allowed)}")
    return values


def _boolean(params, name: str) -> bool | None:
    raw = _single(params, name)
    if raw is None:
        return None
    lowered = raw.lower()
    if lowered in ("true", "1", "yes"):
        return True
    if lowered in ("false", "0", "no"):
        return False
    raise _bad(name, "must be true or false")


def encode_cursor(kind: str, position: tuple[float, str]) -> str:
    raw = json.dumps({"k": kind, "t": position[0], "id": position[1]}, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(params, kind: str) -> tuple[float, str] | None:
    """The (time, id) position in a cursor made by ``encode_cursor`` with the same ``kind``."""
    raw = _single(params, "cursor")
    if raw is None:
        return None
    try:
        data = json.loads(base64.urlsafe_b64decode(raw + "=" * (-len(raw) % 4)))
        at, last_id = data["t"], data["id"]
        valid = (data["k"] == kind and isinstance(at, (int, float)) and not isinstance(at, bool)
                 and math.isfinite(at) and isinstance(last_id, str) and len(last_id) <= 64)
    except (ValueError, TypeError, KeyError, binascii.Error, UnicodeDecodeError):
        valid = False
    if not valid:
        raise _bad("cursor", "is not a cursor this listing produced", code="invalid_cursor")
    return float(at), last_id


class NotificationCollectionView(NotificationSubmitView):
    """``/api/v1/notifications``: POST submits (``NotificationSubmitView``, unchanged); GET lists.

    GET filters (all optional, combined with AND): ``status`` and ``ack_status`` (comma-separated
    values; ``ack_status=NONE`` matches rows without one), ``source`` (exact), ``dead_letter``
    (true/false), ``principal`` (exact), ``since`` (inclusive) and ``until`` (exclusive) on the
    acceptance time, as epoch seconds or ISO-8601. ``order`` is ``desc`` (newest first, the
    default) or ``asc``; ``limit`` 1..500 (default 100); ``cursor`` is the previous page's
    ``next``. Answers ``{"items": [...], "next": <cursor or null>}``. Unknown parameters are 400.
    """

    capabilities = {**NotificationSubmitView.capabilities, "GET": (VIEW_CONSOLE, SEND)}

    @extend_schema(
        summary="List notifications", operation_id="notifications_list",
        parameters=[
            OpenApiParameter("status", str, description=f"Comma-separated, any of {list(STATUSES)}."),
            OpenApiParameter("ack_status", str,
                             description=f"Comma-separated, any of {[*ACK_STATUSES, ACK_NONE]} (`NONE`: no ack status)."),
            OpenApiParameter("source", str, description="Exact source."),
            OpenApiParameter("dead_letter", bool),
            OpenApiParameter("principal", str, description="Exact principal (a producer only ever sees its own)."),
            OpenApiParameter("since", str, description="Acceptance time >= since: epoch seconds or ISO-8601 (UTC "
                                                       "when no offset)."),
            OpenApiParameter("until", str, description="Acceptance time < until: epoch seconds or ISO-8601."),
            OpenApiParameter("order", str, enum=["desc", "asc"], description="By acceptance time, then id; "
                                                                              "default desc (newest first)."),
            doc.LIMIT, doc.CURSOR,
        ],
        responses={200: doc.NotificationPageSerializer, **doc.problems(
            c400="`invalid_request` (a bad or unknown parameter) or `invalid_cursor`.")})
    def get(self, request):
        params = request.query_params
        _check_known(params, LIST_PARAMS)
        order = _single(params, "order") or "desc"
        if order not in ("asc", "desc"):
            raise _bad("order", "must be asc or desc")
        limit = parse_limit(params)
        kind = f"notifications:{order}"
        after = decode_cursor(params, kind)
        ack = _choices(params, "ack_status", (*ACK_STATUSES, ACK_NONE))
        principal = _single(params, "principal")
        filters = {
            "statuses": _choices(params, "status", STATUSES),
            "ack_statuses": None if ack is None else [None if v == ACK_NONE else v for v in ack],
            "source": _single(params, "source"),
            "dead_letter": _boolean(params, "dead_letter"),
            "since": parse_time(params, "since"),
            "until": parse_time(params, "until"),
            "principal": principal,
        }
        me = visible_principal(request.user)  # None: a console reader lists every principal's
        if me is not None:
            if principal not in (None, me):
                return Response({"items": [], "next": None})
            filters["principal"] = me
        rows = selectors.list_notifications(**filters, after=after, newest_first=order == "desc", limit=limit + 1)
        page = rows[:limit]
        next_cursor = None
        if len(rows) > limit:
            last = page[-1]
            next_cursor = encode_cursor(kind, (float(last.notification["created_at"]), last.id))
        return Response({"items": [selectors.notification_list_item(r) for r in page], "next": next_cursor})


class NotificationTimelineView(UNSView):
    """``GET /api/v1/notifications/{id}/timeline?limit=N&cursor=...``: the notification's events,
    oldest first, ``{"items": [...], "next": <cursor or null>}``. Visibility as for the detail
    view (404 for a notification the caller may not see)."""

    capabilities = {"GET": (VIEW_CONSOLE, SEND)}

    @extend_schema(summary="A notification's timeline, paged", parameters=[doc.NOTIFICATION_ID, doc.LIMIT, doc.CURSOR],
                   responses={200: doc.EventPageSerializer, **doc.problems(
                       c400="`invalid_request` (a bad or unknown parameter) or `invalid_cursor`.")})
    def get(self, request, notification_id):
        params = request.query_params
        _check_known(params, TIMELINE_PARAMS)
        limit = parse_limit(params)
        after = decode_cursor(params, "timeline")
        row = visible_notification(request.user, notification_id)  # else the unknown-id 404: no oracle
        events = selectors.timeline_events(row.id, after=after, limit=limit + 1)
        page = events[:limit]
        next_cursor = encode_cursor("timeline", (page[-1].at, page[-1].id)) if len(events) > limit else None
        return Response({"items": [selectors.event_view(e) for e in page], "next": next_cursor})
