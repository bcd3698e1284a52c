"""``/ui/*``: the console's read models. GET, HEAD and OPTIONS only (INV-UI-001).

Every view needs the console capability (``notifications.view_console``), answers other
methods with 405 problem details before authentication runs (so no body, token or session can
ever reach a write), and passes its body through ``console.redaction`` so no secret leaves.
Views are thin: parse query parameters, call one selector in ``console.selectors``, render.
"""
import time

from django.middleware.csrf import get_token
from rest_framework import exceptions
from rest_framework.permissions import SAFE_METHODS
from rest_framework.response import Response
from rest_framework.views import APIView

from core.capabilities import MANAGE_POLICIES, OPERATE_DLQ, RESPOND, SEND, VIEW_CONSOLE
from core.times import iso
from notifications.api.permissions import HasCapability

from notifications import selectors as shared
from notifications.api.list_views import listing_query
# The /api/v1/oncall query parser of epoch seconds (start, end, at): the calendar's parameters are the same.
from notifications.api.oncall_views import epoch_param
from notifications.runtime import lists
from notifications.pagination import KnownParams, keyset, page_body, page_request, single

from . import policies as policy_selectors
from .auth import session_expiry
from . import selectors
from .redaction import channel_secrets, redact

# What /ui/me reports, by the name the app uses.
CAPABILITIES = {
    "view_console": VIEW_CONSOLE,
    "respond": RESPOND,
    "operate_dlq": OPERATE_DLQ,
    "send": SEND,
    "manage_policies": MANAGE_POLICIES,
}


def clock() -> float:
    """Wall-clock epoch seconds; tests replace it to pin ``now``."""
    return time.time()


class UIView(KnownParams, APIView):
    """A ``/ui`` read model: GET only, the console capability, secrets masked, ``no-store``;
    ``known_params`` as every API view (``pagination.KnownParams``)."""

    permission_classes = [HasCapability]
    capabilities = {"GET": VIEW_CONSOLE}
    http_method_names = ["get", "head", "options"]

    def initial(self, request, *args, **kwargs):
        # INV-UI-001: refuse writes before authentication, so a write can never be authorised here.
        if request.method not in SAFE_METHODS:
            raise exceptions.MethodNotAllowed(request.method)
        super().initial(request, *args, **kwargs)

    def finalize_response(self, request, response, *args, **kwargs):
        response = super().finalize_response(request, response, *args, **kwargs)
        if isinstance(response, Response) and 200 <= response.status_code < 300 and response.data is not None:
            response.data = redact(response.data, channel_secrets())
        response["Cache-Control"] = "no-store"
        return response


class OverviewView(UIView):
    """``GET /ui/overview``: counts by status and ack_status, DLQ depth and oldest age, the last
    hour's deliveries and failures."""

    known_params = frozenset()  # takes none

    def get(self, request):
        return Response(selectors.overview(clock()))


class SeriesView(UIView):
    """``GET /ui/series?window=1h|24h|7d``: the charts' time series (``selectors.series_window``):
    per bucket accepted, delivered, retried, failed, dead-lettered and deduplicated
    notifications, delivery latency p50/p95/p99, the DLQ depth and pending acknowledgements,
    and per channel attempts and failures. 400 problem details for another window or an
    unknown parameter."""

    known_params = frozenset({"window"})

    def get(self, request):
        return Response(selectors.series_window(single(request.query_params, "window"), clock()))


class ChannelsView(UIView):
    """``GET /ui/channels``: per channel its kind, enabled flag, last success, last failure and
    its (masked) reason, and the last hour's failure rate (``selectors.channel_health``)."""

    known_params = frozenset()  # takes none

    def get(self, request):
        return Response(selectors.channel_health(clock()))


class SilencesView(UIView):
    """``GET /ui/silences``: active, pending and recently expired silences, each with how many
    notifications it held (``selectors.silences``)."""

    known_params = frozenset()  # takes none

    def get(self, request):
        return Response(selectors.silences(clock()))


class InboxView(UIView):
    """``GET /ui/inbox?q=&source=&severity=&channel=&dedup_key=&limit=&cursor=``: pending
    acknowledgements, oldest deadline first, with ``total`` (``selectors.inbox``; filters:
    ``notifications.runtime.lists.parse_list_filter``, which bulk actions share; 400 for an unknown
    parameter)."""

    def get(self, request):
        filters = lists.parse_list_filter(request.query_params, "inbox")
        page = page_request(request.query_params, selectors.INBOX_KIND, len(selectors.INBOX_ORDER))
        return Response(selectors.inbox(page, clock(), filters))


class InboxGroupsView(UIView):
    """``GET /ui/inbox/groups?by=source|severity|channel|dedup_key&<inbox filters>``: the largest
    groups of matching pending acknowledgements with their counts (``selectors.inbox_groups``)."""

    def get(self, request):
        filters = lists.parse_list_filter(request.query_params, "inbox", "by")
        return Response(selectors.inbox_groups(single(request.query_params, "by") or "source", filters))


class NotificationListView(UIView):
    """``GET /ui/notifications?status=&ack_status=&source=&dead_letter=&principal=&since=&until=
    &order=&limit=&cursor=``: every notification, filtered exactly as ``GET /api/v1/notifications``
    filters (``list_views.listing_query``, the one parser), newest first by default, with
    ``total``/``total_capped`` (``notifications.selectors.listing_total``: exact from the
    maintained counts for one status, ack status or source filter on PostgreSQL, else
    ``pagination.bounded_total``). The console's "all notifications" view, which the Overview's
    counts link to."""

    def get(self, request):
        qs, order, page, filters = listing_query(request.query_params, request.user)  # a console reader sees all
        rows, cursor = keyset(qs, shared.LIST_ORDERS[order], page)
        return Response(page_body(selectors.notification_list_items(rows), cursor, **shared.listing_total(filters, qs),
                                  now=clock(), now_iso=iso(clock())))


class NotificationView(UIView):
    """``GET /ui/notifications/{id}``: request, resolved policy and why, per-channel attempts,
    dedup group, escalation chain (active level, what fired when, who responded), timeline."""

    def get(self, request, notification_id):
        return Response(selectors.notification_detail(notification_id, clock()))


class DeadLetterView(UIView):
    """``GET /ui/dlq?q=&source=&severity=&channel=&reason=&dedup_key=&sort=failed|-failed|accepted
    &limit=&cursor=``: dead letters with failure reason, age, cycle, attempts and replay blocker,
    oldest accepted first by default (as ``GET /api/v1/dlq``), with ``total`` (``selectors.dlq``)."""

    def get(self, request):
        params = request.query_params
        filters = lists.parse_list_filter(params, "dlq", "sort")
        sort = single(params, "sort")
        kind, order = selectors.dlq_sort(sort)
        page = page_request(params, kind, len(order))
        return Response(selectors.dlq(page, clock(), filters, sort))


class DeadLetterGroupsView(UIView):
    """``GET /ui/dlq/groups?by=source|severity|channel|reason|dedup_key&<DLQ filters>``: the
    largest groups of matching dead letters with their counts (``selectors.dlq_groups``)."""

    def get(self, request):
        filters = lists.parse_list_filter(request.query_params, "dlq", "by")
        return Response(selectors.dlq_groups(single(request.query_params, "by") or "source", filters))


class PoliciesView(UIView):
    """``GET /ui/policies``: policy versions with status, the current revision and recent
    revisions."""

    known_params = frozenset()  # takes none

    def get(self, request):
        return Response(policy_selectors.policies())


class PolicyDiffView(UIView):
    """``GET /ui/policies/{policy_id}/diff?from=V&to=W``: unified diff of two versions' content."""

    known_params = frozenset({"from", "to"})

    def get(self, request, policy_id):
        params = request.query_params
        return Response(policy_selectors.diff(policy_id, params.get("from"), params.get("to")))


class ActivationPreviewView(UIView):
    """``GET /ui/policies/{policy_id}/versions/{version}/activation-preview``: the diff against
    the ACTIVE version and a simulation of recent requests, shown before Activate."""

    known_params = frozenset()  # takes none

    def get(self, request, policy_id, version):
        return Response(policy_selectors.activation_preview(policy_id, version))


class AuditView(UIView):
    """``GET /ui/audit?actor=&action=&object_type=&object_id=&bulk_action_id=&since=&until=&limit=
    &cursor=``: who did what, when, to what, newest first (``selectors.audit``; 400 problem
    details for an unknown parameter or a bad value, ``notifications.selectors.parse_audit_query``)."""

    def get(self, request):
        return Response(selectors.audit(request.query_params))


class MeView(UIView):
    """``GET /ui/me``: the caller's username, groups, capabilities and when its credentials end;
    with a console session also ``csrf_token`` (the console calls it after a reload to resume
    the session: 401 when there is none)."""

    known_params = frozenset()  # takes none

    def get(self, request):
        expiry = getattr(request.auth, "expiry", None)
        expiry = expiry.timestamp() if expiry else session_expiry(request)
        body = selectors.me(request.user, CAPABILITIES, expiry)
        if request.auth is None:  # the console's session: the CSRF token its writes need
            body["csrf_token"] = get_token(request._request)
        return Response(body)


class BulkPreviewView(UIView):
    """``GET /ui/bulk-actions/preview?action=&<the filters of the action's list>``: how many
    items the bulk ``action`` would take with this filter now (the N a confirmation shows) and
    the most one takes (``selectors.bulk_preview``)."""

    def get(self, request):
        return Response(selectors.bulk_preview(single(request.query_params, "action"), request.query_params))


class BulkActionView(UIView):
    """``GET /ui/bulk-actions/{id}?limit=&cursor=``: a bulk action's progress and its per-item
    results in list order, each with the notification's title."""

    def get(self, request, bulk_id):
        page = page_request(request.query_params, selectors.BULK_ITEMS_KIND, 1)
        return Response(selectors.bulk_action(bulk_id, page))


class OncallBoardView(UIView):
    """``GET /ui/oncall``: every schedule with who is on call now and next, and the teams
    (``selectors.oncall_board``)."""

    known_params = frozenset()  # takes none

    def get(self, request):
        return Response(selectors.oncall_board(clock()))


class OncallCalendarView(UIView):
    """``GET /ui/oncall/schedules/{name}/calendar?start=&end=``: the schedule's shifts per
    layer and final, and its overrides, between ``start`` and ``end`` (epoch seconds; default
    now and 14 days later; at most 31 days). 400 ``invalid_request``, 404 ``schedule_not_found``."""

    known_params = frozenset({"start", "end"})

    DEFAULT_SPAN = 14 * 86400.0

    def get(self, request, name):
        a = epoch_param(request.query_params, "start", clock())
        b = epoch_param(request.query_params, "end", a + self.DEFAULT_SPAN)
        return Response(selectors.oncall_calendar(name, a, b))


class MyOncallView(UIView):
    """``GET /ui/oncall/me``: the caller's contact methods and latest pages (``selectors.my_oncall``)."""

    known_params = frozenset()  # takes none

    def get(self, request):
        return Response(selectors.my_oncall(request.user))
