"""Read endpoints with filters and opaque cursors: the notification listing and paged timelines.

``GET /api/v1/notifications`` shares its path with the submit endpoint, so
``NotificationCollectionView`` extends ``NotificationSubmitView`` (whose POST is unchanged) with
GET. Console readers list every notification; a producer lists only its own.

Pages follow ``notifications.pagination`` (``limit``, ``cursor`` -> ``{"items", "next"}``; a
cursor is bound to its list and order, a tampered or foreign one is 400 ``invalid_cursor``).
"""
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.response import Response

from core.capabilities import SEND, VIEW_CONSOLE
from core.transitions import ACK_PENDING, ACK_TERMINAL, STATUSES
from notifications import payloads, people_audit, selectors
from notifications.pagination import check_known, keyset, page_body, page_request, parse_time, single
from notifications.access import visible_notification, visible_principal
from notifications.runtime import InvalidRequest

from . import openapi as doc
from .views import NotificationSubmitView, UNSView

ACK_STATUSES = (ACK_PENDING, *ACK_TERMINAL)
# ``ack_status=NONE`` selects notifications without an ack status (not required, not delivered).
ACK_NONE = "NONE"
LIST_PARAMS = frozenset({"status", "ack_status", "source", "dead_letter", "principal", "since", "until",
                         "order", "limit", "cursor"})
TIMELINE_PARAMS = frozenset({"limit", "cursor"})


def _bad(field: str, message: str):
    return InvalidRequest(f"query parameter {field!r} {message}",
                          errors=[{"field": field, "message": message}])


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
    raw = single(params, name)
    if raw is None:
        return None
    lowered = raw.lower()
    if lowered in ("true", "1", "yes"):
        return True
    if lowered in ("false", "0", "no"):
        return False
    raise _bad(name, "must be true or false")


def listing_query(params, user):
    """The notification listing's query parameters (see ``NotificationCollectionView``), parsed
    once for ``GET /api/v1/notifications`` and the console's ``GET /ui/notifications``:
    ``(queryset, order, page request, filters)`` (``filters``: the keyword arguments of
    ``selectors.list_notifications``, for ``selectors.listing_total``), or None when ``user`` (a producer) asked for another
    principal's, which it may not see (an empty list). Raises ``InvalidRequest`` (400) for a bad
    or unknown parameter or cursor."""
    check_known(params, LIST_PARAMS)
    order = single(params, "order") or "desc"
    if order not in ("asc", "desc"):
        raise _bad("order", "must be asc or desc")
    page = page_request(params, f"notifications:{order}", len(selectors.LIST_ORDERS[order]))
    ack = _choices(params, "ack_status", (*ACK_STATUSES, ACK_NONE))
    principal = single(params, "principal")
    filters = {
        "statuses": _choices(params, "status", STATUSES),
        "ack_statuses": None if ack is None else [None if v == ACK_NONE else v for v in ack],
        "source": single(params, "source"),
        "dead_letter": _boolean(params, "dead_letter"),
        "since": parse_time(params, "since"),
        "until": parse_time(params, "until"),
        "principal": principal,
    }
    me = visible_principal(user)  # None: a console reader lists every principal's
    if me is not None:
        if principal not in (None, me):
            return None
        filters["principal"] = me
    return selectors.list_notifications(**filters), order, page, filters


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
        responses={200: payloads.NotificationPage, **doc.problems(
            c400="`invalid_request` (a bad or unknown parameter) or `invalid_cursor`.")})
    def get(self, request):
        query = listing_query(request.query_params, request.user)
        if query is None:
            return Response(page_body([], None))
        qs, order, page, _filters = query
        rows, next_cursor = keyset(qs, selectors.LIST_ORDERS[order], page)
        return Response(page_body([selectors.notification_list_item(r) for r in rows], next_cursor))


class NotificationTimelineView(UNSView):
    """``GET /api/v1/notifications/{id}/timeline?limit=N&cursor=...``: the notification's events,
    oldest first, ``{"items": [...], "next": <cursor or null>}``. Visibility as for the detail
    view (404 for a notification the caller may not see)."""

    capabilities = {"GET": (VIEW_CONSOLE, SEND)}
    known_params = TIMELINE_PARAMS

    @extend_schema(summary="A notification's timeline, paged", parameters=[doc.NOTIFICATION_ID, doc.LIMIT, doc.CURSOR],
                   responses={200: payloads.EventPage, **doc.problems(
                       c400="`invalid_request` (a bad or unknown parameter) or `invalid_cursor`.")})
    def get(self, request, notification_id):
        params = request.query_params
        page = page_request(params, "timeline", len(selectors.TIMELINE_ORDER))
        row = visible_notification(request.user, notification_id)  # else the unknown-id 404: no oracle
        events, next_cursor = keyset(selectors.timeline_events(row.id), selectors.TIMELINE_ORDER, page)
        return Response(page_body([selectors.event_view(e) for e in events], next_cursor))


class AuditListView(UNSView):
    """``GET /api/v1/audit?actor=&action=&object_type=&object_id=&bulk_action_id=&since=&until=
    &limit=&cursor=``: who did what, when, to what (``uns_people_audit_records``), newest first,
    ``{"items": [...], "next"}`` (``selectors.people_audit_page``, the console's ``/ui/audit``
    too). Console readers only (the capability every console read needs). 400 problem details
    for an unknown parameter or a bad value."""

    capabilities = {"GET": VIEW_CONSOLE}

    @extend_schema(
        summary="Who did what, when, to what: the audit of people's actions", operation_id="audit_list",
        parameters=[
            OpenApiParameter("actor", str, description="Exact user or token name."),
            OpenApiParameter("action", str, enum=list(people_audit.ACTION_NAMES)),
            OpenApiParameter("object_type", str, enum=list(people_audit.OBJECT_TYPES)),
            OpenApiParameter("object_id", str, description="Exact object id (needs `object_type`)."),
            OpenApiParameter("bulk_action_id", str, description="A bulk action and the actions on its items."),
            OpenApiParameter("since", str, description="Action time >= since: epoch seconds or ISO-8601 (UTC "
                                                       "when no offset)."),
            OpenApiParameter("until", str, description="Action time < until: epoch seconds or ISO-8601."),
            doc.LIMIT, doc.CURSOR,
        ],
        responses={200: payloads.AuditPage, **doc.problems(
            c400="`invalid_request` (a bad or unknown parameter) or `invalid_cursor`.")})
    def get(self, request):
        return Response(selectors.people_audit_page(request.query_params))
