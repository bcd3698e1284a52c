"""Screen-shaped read models of the operator console (``/ui/*``, GET only; INV-UI-001).

Each selector runs a fixed number of queries whatever the page size (no per-row lookups; the
tests pin the counts), and lists page as every list does (``notifications.pagination``:
``{"items", "next"}``). Times are Float
epoch seconds beside ISO-8601 UTC strings (``<field>_iso``), as everywhere in the API.
Nothing here writes; mutations go through ``/api/v1/*`` and the runtime.
"""
from django.db.models import Count, F, Func, OuterRef, Q, Subquery

from core.errors import InvalidRequest
from core.times import iso
from core.transitions import ACK_PENDING, DELIVERED, FAILED, PENDING
from notifications import selectors as shared
from notifications.failure_hints import hint
from notifications.access import has_capability
from notifications.models import (BulkActionItem, Channel, Event, Notification, NotificationAuditRecord,
                                  ResultChannel, ResultSuccess, Silence, SilenceHold)
from notifications.pagination import PageRequest, bounded_total, keyset, page_body
from notifications.runtime import bulk, counts, escalation, lists, series as rollups, timeline
from notifications.runtime import silences as rules
from notifications.runtime.schemas import MAX_BULK_ITEMS
from notifications.runtime.dlq import dead_letter_depth, failed_split, oldest_dead_letter_failed_at, replay_blockers
from notifications.runtime.rows import get as load_row
from notifications.selectors import dedup_role, event_view, pending_ack_item
from notifications import oncall_selectors as oncall_sel
from notifications.runtime import oncall as oncall_runtime
from oncall import rotation
from oncall import targets as oncall_targets
from oncall.models import Layer, Override, Team
from policies.governance.bridge import approval_summary

HOUR = 3600.0


def _with_iso(body: dict, *names: str) -> dict:
    for name in names:
        body[f"{name}_iso"] = iso(body[name])
    return body


def _summary(row: Notification) -> dict:
    """The few fields every list shows about a notification."""
    n = row.notification
    return {
        "id": row.id,
        "title": n.get("title"),
        "source": n.get("source"),
        "severity": n.get("severity"),
        "status": row.status,
        "ack_status": row.ack_status,
        "dead_letter": row.dead_letter,
    }


def settled_without_delivery(rows) -> dict[str, str]:
    """Why each FAILED row of one page that is out of the DLQ stopped without a delivery, by id:
    ``"resolved"`` (an operator resolved its dead letter: ``FAILURE_RESOLVED``,
    ``runtime.dlq.resolve_failure``) or ``"withheld"`` (never sent: its source resolved it first or
    a silence held it until it was stale: ``DELIVERY_WITHHELD``, ``runtime.withhold``); the later
    event wins when a row has both. Rows with neither (a best-effort failure) are absent. One query
    for the page, only over its FAILED rows not in the DLQ (none: no query)."""
    candidates = [r.id for r in rows if r.status == FAILED and not r.dead_letter]
    if not candidates:
        return {}
    why = {timeline.FAILURE_RESOLVED: "resolved", timeline.DELIVERY_WITHHELD: "withheld"}
    found = (Event.objects.filter(notification_id__in=candidates, kind__in=list(why))
             .order_by("at", "id").values_list("notification_id", "kind"))
    return {notification_id: why[kind] for notification_id, kind in found}


def notification_list_items(rows) -> list[dict]:
    """``/ui/notifications``' entries: ``notifications.selectors.notification_list_item``,
    ``resolved`` and ``withheld`` (``settled_without_delivery``)."""
    settled = settled_without_delivery(rows)
    return [{**shared.notification_list_item(r), "resolved": settled.get(r.id) == "resolved",
             "withheld": settled.get(r.id) == "withheld"} for r in rows]


# --- overview ---------------------------------------------------------------------------------

def overview(now: float) -> dict:
    """Counts by status and ack_status, DLQ depth and oldest age, and the last hour's
    deliveries and failures (settled attempts in ``notification_audit_records``). 4 queries
    or so: the counts by state come from ``runtime.counts`` (maintained, not a count of the
    table, on PostgreSQL), the oldest dead letter from ``dlq.oldest_dead_letter_failed_at``
    (one probe of ``ix_uns_dlq_failed``, not every dead letter)."""
    by_status, by_ack = counts.by_state()
    depth = dead_letter_depth()
    oldest = oldest_dead_letter_failed_at() if depth else None
    since = now - HOUR
    hour = dict(NotificationAuditRecord.objects.filter(created_at__gte=since).order_by()
                .values_list("status").annotate(n=Count("id")))
    return {
        "now": now,
        "now_iso": iso(now),
        "counts_by_status": by_status,
        "counts_by_ack_status": by_ack,
        "total": sum(by_status.values()),
        # FAILED by the DLQ's one definition: the dead letters (the DLQ's depth) apart from the
        # resolved ones and BEST_EFFORT failures, so the overview never shows more failures
        # waiting than the DLQ holds.
        "failed": failed_split(by_status.get(FAILED, 0), depth),
        "dlq": {
            "depth": depth,
            "oldest_failed_at": oldest,
            "oldest_failed_at_iso": iso(oldest),
            "oldest_age_seconds": None if oldest is None else max(0.0, now - oldest),
        },
        "last_hour": {
            "since": since,
            "since_iso": iso(since),
            "deliveries": hour.get(DELIVERED, 0),
            "failures": hour.get(FAILED, 0),
            "retries": hour.get(PENDING, 0),
        },
        "pending_acks": by_ack.get(ACK_PENDING, 0),
    }


# --- time series ----------------------------------------------------------------------------

def series_window(window: str | None, now: float) -> dict:
    """The console's charts for ``window`` (``runtime.series.WINDOWS``: "1h", "24h" or "7d";
    None: "1h"): ``points`` buckets of ``step_seconds`` each (60 s, 600 s, 3600 s; the last one
    holds ``now`` and is still filling), with per bucket the counters (``counts``: accepted,
    delivered, retried, failed, dead_lettered, deduplicated), the latency percentiles of the
    deliveries settled in it (``latency``: p50/p95/p99 seconds from acceptance, first cycle
    only; None without deliveries; ``count``: how many), the gauges at the bucket's end
    (``gauges``: dlq_depth, ack_pending) and per channel its answered attempts and failures.
    ``buckets`` are the buckets' starts (epoch seconds); bucket i covers [buckets[i],
    buckets[i] + step_seconds). Read from the rollups (``runtime.series.read``: one query over
    the primary key's range, at most points x series x shards rows, whatever the history) plus
    the current DLQ depth and pending acknowledgements the gauges are anchored at, and the
    channel names: 4 queries. ``InvalidRequest`` (400, field ``window``) for another window."""
    name = window or "1h"
    if name not in rollups.WINDOWS:
        allowed = ", ".join(rollups.WINDOWS)
        raise InvalidRequest(f"window must be one of {allowed}",
                             errors=[{"field": "window", "message": f"must be one of {allowed}"}])
    seconds, step = rollups.WINDOWS[name]
    points = seconds // step
    last = int(now // step) * step
    start = last - (points - 1) * step
    buckets = [start + i * step for i in range(points)]
    data = rollups.read(step, start)

    def column(series: str, label: str = "") -> list[int]:
        values = data.get((series, label), {})
        return [values.get(b, 0) for b in buckets]

    latency_bins: dict[int, dict[int, int]] = {}
    for (series_name, label), values in data.items():
        if series_name == rollups.LATENCY:
            for b, n in values.items():
                latency_bins.setdefault(b, {})[int(label)] = n
    per_bucket = [rollups.percentiles(latency_bins.get(b, {})) for b in buckets]

    def gauge(series: str, current: int) -> list[int]:
        # The value at each bucket's end: the current value minus the changes after that bucket.
        changes = data.get((series, ""), {})
        after = sum(n for b, n in changes.items() if b > last)
        out, value = [], current - after
        for b in reversed(buckets):
            out.append(value)
            value -= changes.get(b, 0)
        return out[::-1]

    _, by_ack = counts.by_state()
    channels = sorted(set(Channel.objects.values_list("name", flat=True))
                      | {label for (series_name, label) in data if series_name == rollups.CHANNEL_ATTEMPTS})
    return {
        "window": name, "step_seconds": step, "points": points,
        "now": now, "now_iso": iso(now), "start": float(start), "start_iso": iso(start),
        "end": float(last + step), "end_iso": iso(last + step),
        "buckets": [float(b) for b in buckets],
        "counts": {c: column(c) for c in rollups.COUNTERS},
        "latency": {
            "basis": "accepted",
            **{p: [q[p] for q in per_bucket] for p, _ in rollups.PERCENTILES},
            "count": [sum(latency_bins.get(b, {}).values()) for b in buckets],
        },
        "gauges": {"dlq_depth": gauge("dlq", dead_letter_depth()),
                   "ack_pending": gauge("ack_pending", by_ack.get(ACK_PENDING, 0))},
        "channels": [{"name": ch, "attempts": column(rollups.CHANNEL_ATTEMPTS, ch),
                      "failures": column(rollups.CHANNEL_FAILURES, ch)} for ch in channels],
    }


# --- channel health ---------------------------------------------------------------------------

def _results(ok: str):
    """CHANNEL_ATTEMPT_RESULT rows of the outer query's channel with ``success`` ``ok``
    (``"true"``/``"false"``): one range of ``ix_uns_channel_results``."""
    return (Event.objects.filter(kind=timeline.CHANNEL_ATTEMPT_RESULT)
            .annotate(result_channel=ResultChannel(), result_success=ResultSuccess())
            .filter(result_channel=OuterRef("name"), result_success=ok))


def _count(qs):
    return Subquery(qs.order_by().annotate(n=Func(F("id"), function="COUNT")).values("n")[:1])


def channel_health(now: float) -> dict:
    """Every configured channel with its kind, enabled flag and what its provider answers say
    (CHANNEL_ATTEMPT_RESULT rows): the last success, the last failure with its error and
    attempt, and the last hour's successes, failures and ``failure_rate`` (failures / answers,
    None without answers). 2 queries whatever the history: one over the channels whose
    per-channel subqueries each read one ``ix_uns_channel_results`` range (the latest row of a
    (channel, success) pair, or its last hour), and one fetching the last failures by id.
    Errors are shown as recorded; the ``/ui`` view masks secrets (``console.redaction``)."""
    since = now - HOUR
    rows = list(Channel.objects.order_by("name").annotate(
        last_success_at=Subquery(_results("true").order_by("-at").values("at")[:1]),
        last_failure_id=Subquery(_results("false").order_by("-at").values("id")[:1]),
        hour_successes=_count(_results("true").filter(at__gte=since)),
        hour_failures=_count(_results("false").filter(at__gte=since)),
    ))
    failures = Event.objects.in_bulk([r.last_failure_id for r in rows if r.last_failure_id])
    items = []
    for r in rows:
        failure = failures.get(r.last_failure_id)
        answers = (r.hour_successes or 0) + (r.hour_failures or 0)
        items.append({
            "name": r.name, "kind": r.kind, "enabled": r.enabled,
            "last_success_at": r.last_success_at, "last_success_at_iso": iso(r.last_success_at),
            "last_failure": None if failure is None else {
                "at": failure.at, "at_iso": iso(failure.at), "notification_id": failure.notification_id,
                "error": failure.payload.get("error"), "attempt": failure.payload.get("attempt"),
                "retryable": (failure.payload.get("metadata") or {}).get("retryable"),
            },
            "last_hour": {"successes": r.hour_successes or 0, "failures": r.hour_failures or 0,
                          "failure_rate": (r.hour_failures or 0) / answers if answers else None},
        })
    return {"now": now, "now_iso": iso(now), "since": since, "since_iso": iso(since), "items": items}


# --- inbox ------------------------------------------------------------------------------------

INBOX_KIND = "ui:inbox"
INBOX_ORDER = lists.INBOX_ORDER


# --- list filters and groups ---------------------------------------------------------------------

# The filters each list accepts are ``notifications.runtime.lists.LIST_FILTERS`` (one parser,
# ``parse_list_filter``, shared with bulk actions, so a bulk action takes what its list shows).
INBOX_FILTERS = lists.LIST_FILTERS["inbox"]
DLQ_FILTERS = lists.LIST_FILTERS["dlq"]
# group name -> the column (or JSON path) its value comes from; "channel" groups by the set of
# channels (the inbox: requested; the DLQ: failed, ``lists.CHANNEL_FIELDS``), as a list.
_GROUP_FIELDS = {"source": "notification__source", "severity": "notification__severity",
                 "dedup_key": "notification__dedup_key", "reason": "outcome__error_message"}
INBOX_GROUPS = ("source", "severity", "channel", "dedup_key")
DLQ_GROUPS = ("source", "severity", "channel", "reason", "dedup_key")
GROUP_LIMIT = 50


def _check_group(by: str, allowed: tuple[str, ...]) -> None:
    if by not in allowed:
        raise InvalidRequest(f"group_by must be one of {', '.join(allowed)}",
                             errors=[{"field": "by", "message": f"must be one of {', '.join(allowed)}"}])


def _groups(qs, by: str, list_name: str, allowed: tuple[str, ...]) -> list[dict]:
    """``[{"value", "count"}]``: the ``GROUP_LIMIT`` largest groups of ``qs`` by ``by``. 1 query."""
    _check_group(by, allowed)
    field = lists.CHANNEL_FIELDS[list_name] if by == "channel" else _GROUP_FIELDS[by]
    rows = (qs.order_by().values(field).annotate(n=Count("id")).order_by("-n", field)[:GROUP_LIMIT])
    return [{"value": r[field], "count": r["n"]} for r in rows]


def inbox_groups(by: str, filters: dict) -> dict:
    """Pending acknowledgements matching ``filters`` (``lists.parse_list_filter(.., "inbox")``)
    grouped by ``by`` (``INBOX_GROUPS``), the largest groups first: ``{"by", "groups": [{"value",
    "count"}]}``. ``InvalidRequest`` for an unknown ``by``. 1 query (over ``ix_uns_response``)."""
    return {"by": by, "groups": _groups(lists.inbox(filters), by, "inbox", INBOX_GROUPS)}


def inbox(page: PageRequest, now: float, filters: dict | None = None) -> dict:
    """Pending acknowledgements, oldest deadline first (``notifications.runtime.lists.inbox``),
    filtered by ``filters`` (``lists.parse_list_filter(.., "inbox")``), with the seconds left
    before each deadline, whether Escalate applies (``runtime.escalation.can_escalate``), for a
    governance approval its ``approval`` (``policies.governance.bridge.approval_summary``; null
    otherwise), and ``total``/``total_capped``, the number matching on all pages
    (``pagination.bounded_total``). 2 queries (page, count; both on ``ix_uns_response``)."""
    qs = lists.inbox(filters)
    rows, cursor = keyset(qs, INBOX_ORDER, page)
    items = []
    for row in rows:
        item = pending_ack_item(row)
        item.update(principal=row.principal, seconds_left=row.deadline - now, overdue=row.deadline <= now,
                    channels=row.notification.get("channels", []), dedup_key=row.notification.get("dedup_key"),
                    can_escalate=escalation.can_escalate(row),
                    approval=approval_summary(row.notification))  # a governance approval: its action
        items.append(item)
    return page_body(items, cursor, **bounded_total(qs), now=now, now_iso=iso(now))


# --- notification detail ----------------------------------------------------------------------

def _resolution(n: dict) -> dict:
    res = dict(n.get("metadata", {}).get("uns_resolution") or {})
    rule = res.get("rule")
    res["why"] = (f"rule {rule!r} was the first rule whose conditions matched this request"
                  if rule else "no rule matched; the policy's defaults applied")
    return res


def _request(n: dict) -> dict:
    """What the producer asked for (the resolution snapshot is shown apart)."""
    body = {k: v for k, v in n.items() if k != "metadata"}
    body["metadata"] = {k: v for k, v in n.get("metadata", {}).items() if k != "uns_resolution"}
    if "created_at" in body:
        _with_iso(body, "created_at")
    return body


def _channel_results(events: list[Event], channels: list[str], succeeded: list[str]) -> list[dict]:
    """Per channel, every CHANNEL_ATTEMPT_RESULT in order and the latest one; ``succeeded`` is
    the outcome's ``channels_succeeded`` (a channel with several provider attempts per attempt,
    apprise, can end an attempt on a successful URL and still have failed)."""
    by_channel: dict[str, list[dict]] = {ch: [] for ch in channels}
    for ev in events:
        if ev.kind != timeline.CHANNEL_ATTEMPT_RESULT:
            continue
        p = ev.payload
        meta = p.get("metadata") or {}
        by_channel.setdefault(p.get("channel"), []).append({
            "at": ev.at, "at_iso": iso(ev.at),
            "attempt": p.get("attempt"), "cycle": p.get("cycle"), "cycle_attempt": p.get("cycle_attempt"),
            "success": p.get("success"), "error": p.get("error"), "message_id": p.get("message_id"),
            "hint": None if p.get("success") else hint(p.get("error")), "host": meta.get("host"),
            "retryable": meta.get("retryable"), "status_code": meta.get("status_code"),
            "provider_attempt": meta.get("provider_attempt"), "service": meta.get("service"),
        })
    return [{"channel": ch, "attempts": attempts, "last": attempts[-1] if attempts else None,
             "succeeded": ch in succeeded} for ch, attempts in by_channel.items()]


def _member(row) -> dict:
    return {**_summary(row), "role": dedup_role(row), "owner_id": row.dedup_owner_id,
            "generation": row.dedup_generation, "successor_id": row.dedup_successor_id}


def _dedup_group(row: Notification) -> dict | None:
    """Leader, followers (pending and satisfied) and successor of ``row``'s dedup group. 1 query."""
    if not row.dedup_key:
        return None
    leader_id = row.dedup_owner_id or row.id
    wanted = {leader_id, row.dedup_successor_id} - {None}
    members = {m.id: m for m in Notification.objects.filter(
        Q(dedup_owner_id=leader_id) | Q(id__in=wanted)).order_by("id")[:200]}
    members.setdefault(row.id, row)
    leader = members.get(leader_id)
    successor = members.get(row.dedup_successor_id) if row.dedup_successor_id else None
    return {
        "dedup_key": row.dedup_key,
        "generation": row.dedup_generation,
        "role": dedup_role(row),
        "leader": _member(leader) if leader else {"id": leader_id, "missing": True},
        "followers": [_member(m) for m in members.values() if m.dedup_owner_id == leader_id],
        "successor": (_member(successor) if successor else
                      {"id": row.dedup_successor_id, "missing": True}) if row.dedup_successor_id else None,
    }


def notification_detail(notification_id: str, now: float) -> dict:
    """Everything the detail screen shows about one notification. 3 queries (row, events,
    dedup group) plus 3 more when it is dead-lettered (replay blocker) and 1 when it was
    escalated (its escalation notifications, for ``escalation``: the chain, which level is
    active, what fired when and who responded; ``runtime.escalation.chain_view``).
    ``escalated_from``: for an escalation, ``{"id", "level"}`` of its original. ``NotFound``
    (404)."""
    row = load_row(notification_id)
    n = row.notification
    events = list(Event.objects.filter(notification_id=row.id).order_by("at", "id"))
    fired = escalation.escalation_ids(events)
    escalations = {e.id: e for e in Notification.objects.filter(id__in=fired)} if fired else {}
    meta = n.get("metadata") or {}
    resolution = _resolution(n)
    body = {
        **_summary(row),
        "principal": row.principal,
        "request": _request(n),
        "resolution": resolution,
        "outcome": row.outcome,
        "failure_hint": hint((row.outcome or {}).get("error_message")),
        "attempts": row.attempts,
        "cycle": row.cycle,
        "cycle_attempts": row.cycle_attempts,
        "max_attempts": (resolution.get("effective") or {}).get("max_attempts"),
        "leased": bool(row.lease_token),
        "actor": row.actor,
        "response_metadata": row.response_metadata,
        "channels": _channel_results(events, n.get("channels", []),
                                     (row.outcome or {}).get("channels_succeeded", [])),
        "dedup": _dedup_group(row),
        "timeline": [event_view(ev) for ev in events],
        "replay_blocker": _replay_blockers([row], now).get(row.id) if row.dead_letter else None,
        "escalation": escalation.chain_view(row, events, escalations),
        "escalated_from": ({"id": meta["escalated_from"], "level": meta.get("escalation_level", 1)}
                           if row.principal == escalation.ESCALATION_PRINCIPAL and meta.get("escalated_from") else None),
    }
    for name in ("next_attempt", "delivered_at", "deadline", "responded_at"):
        body[name] = getattr(row, name)
        _with_iso(body, name)
    return body


# --- DLQ ----------------------------------------------------------------------------------------

def _replay_blockers(rows: list[Notification], now: float) -> dict[str, dict]:
    """The runtime's ``replay_blockers`` (the rule ``replay`` enforces), each with a sentence a
    person can read."""
    blockers = replay_blockers(rows, now)
    for b in blockers.values():
        b["explanation"] = (
            "the successor that carried this obligation no longer exists, so its lineage cannot be established"
            if b["code"] == "replay_lineage_unknown" else
            f"notification {b['successor_id']} ({b['successor_status']}) already carries this obligation; "
            "replaying would deliver it twice")
    return blockers


# DLQ orders: ``sort`` name -> (pagination kind, order). "accepted" is ``GET /api/v1/dlq``'s order
# (the partial index ``ix_uns_dlq_accepted`` serves it); the failure-time orders read
# ``Notification.failed_at``, which every dead letter has (its dead-lettering settle wrote it;
# migration 0012 filled it for older rows), in the partial index ``ix_uns_dlq_failed``: a page
# reads its rows from the index, whatever the depth of the DLQ.
DLQ_SORTS = {
    "failed": ("ui:dlq:failed", [("failed_at", False), ("id", False)]),
    "-failed": ("ui:dlq:-failed", [("failed_at", True), ("id", True)]),
    "accepted": (lists.DLQ_KIND, lists.DLQ_ORDER),
}
DEFAULT_DLQ_SORT = "accepted"  # GET /api/v1/dlq's order: a cursor serves both lists


def dlq_sort(name: str | None) -> tuple[str, list]:
    """``(kind, order)`` of DLQ sort ``name`` (``DLQ_SORTS``; None: oldest accepted first, the
    order of ``GET /api/v1/dlq``, whose cursors this list shares; the console asks for "failed").
    ``InvalidRequest`` (400, field ``sort``) for another name."""
    name = name or DEFAULT_DLQ_SORT
    if name not in DLQ_SORTS:
        raise InvalidRequest(f"sort must be one of {', '.join(DLQ_SORTS)}",
                             errors=[{"field": "sort", "message": f"must be one of {', '.join(DLQ_SORTS)}"}])
    return DLQ_SORTS[name]


def dlq_groups(by: str, filters: dict) -> dict:
    """Dead letters matching ``filters`` grouped by ``by`` (``DLQ_GROUPS``; ``channel`` is the
    list of channels that failed), the largest groups first: ``{"by", "groups": [{"value",
    "count"}]}``. ``InvalidRequest`` for an unknown ``by``. 1 query: without a filter, on
    PostgreSQL, over the maintained per-group counts (``lists.dead_letter_groups``, whatever the
    DLQ's depth); otherwise over the matching dead letters."""
    _check_group(by, DLQ_GROUPS)
    counted = lists.dead_letter_groups(by, filters, GROUP_LIMIT)
    if counted is not None:
        return {"by": by, "groups": counted}
    return {"by": by, "groups": _groups(lists.dead_letter_rows(filters), by, "dlq", DLQ_GROUPS)}


def dlq(page: PageRequest, now: float, filters: dict | None = None, sort: str | None = None) -> dict:
    """Dead-lettered notifications as ``GET /api/v1/dlq`` lists them (``lists.dead_letters``,
    the same ``failed_at``), with what the screen adds: status fields, principal, channels that
    succeeded, max_attempts, a readable replay blocker and ``age_seconds`` (since the failure),
    filtered by ``filters`` (``lists.parse_list_filter(.., "dlq")``), in ``sort`` order
    (``DLQ_SORTS``, default oldest accepted first; ``page.kind`` must be that sort's kind) and with
    ``total``/``total_capped`` (``lists.dead_letter_total``: exact from the maintained counts
    for no filter or one of ``lists.COUNTED_DLQ_FILTERS`` on PostgreSQL, else
    ``pagination.bounded_total``). 5 queries."""
    _, order = dlq_sort(sort)
    filters = filters or {}
    rows, cursor = keyset(lists.dead_letters(filters), order, page)
    blockers = _replay_blockers(rows, now)
    items = []
    for row in rows:
        effective = row.notification.get("metadata", {}).get("uns_resolution", {}).get("effective", {})
        items.append({
            **_summary(row),
            **shared.dlq_item(row, blockers.get(row.id)),
            "principal": row.principal,
            "channels_succeeded": row.outcome.get("channels_succeeded", []),
            "max_attempts": effective.get("max_attempts"),
            "severity": row.notification.get("severity"),
            "dedup_key": row.notification.get("dedup_key"),
            "age_seconds": None if row.failed_at is None else max(0.0, now - row.failed_at),
            "failure_hint": hint(row.outcome.get("error_message")),
        })
    return page_body(items, cursor, **lists.dead_letter_total(filters), now=now, now_iso=iso(now))


# --- audit --------------------------------------------------------------------------------------

def audit(params) -> dict:
    """Who did what, when, to what (``uns_people_audit_records``), newest first, filtered by
    actor, action, object and time: ``notifications.selectors.people_audit_page`` (the
    ``/api/v1/audit`` list too). 1 query. Delivery attempts are not here: they stay on each
    notification's timeline."""
    return shared.people_audit_page(params)


# --- me -----------------------------------------------------------------------------------------

def me(user, capability_names: dict[str, str], token_expiry: float | None) -> dict:
    """Who is calling and what they may do; the app shows only the allowed actions (the server
    still checks every mutation, ``access.has_capability`` as here). 2 queries (groups,
    permissions; none for the permissions when this request already loaded them)."""
    return {
        "username": user.get_username(),
        "groups": sorted(user.groups.values_list("name", flat=True)),
        "is_superuser": user.is_superuser,
        "capabilities": {name: has_capability(user, perm) for name, perm in capability_names.items()},
        "token_expiry": token_expiry,
        "token_expiry_iso": iso(token_expiry),
    }


# --- bulk actions -------------------------------------------------------------------------------

BULK_ITEMS_KIND = "ui:bulk-items"


def bulk_preview(action: str | None, params) -> dict:
    """``{"action", "list", "filter", "matched", "max_items"}``: how many items bulk ``action``
    (``runtime.bulk.ACTIONS``) would take now with the filter of its list in ``params`` (query
    parameters, parsed by ``lists.parse_list_filter`` for that list, as the list itself and
    ``POST /api/v1/bulk-actions`` parse it). ``InvalidRequest`` for an unknown action or
    filter. 1 query."""
    if action not in bulk.ACTIONS:
        raise InvalidRequest("action must be one of " + ", ".join(bulk.ACTIONS),
                             errors=[{"field": "action", "message": f"must be one of {list(bulk.ACTIONS)}"}])
    filters = lists.parse_list_filter(params, bulk.list_of(action), "action")
    return {"action": action, "list": bulk.list_of(action), "filter": filters,
            "matched": bulk.count(action, filters), "max_items": MAX_BULK_ITEMS}


def bulk_action(bulk_id: str, page: PageRequest) -> dict:
    """A bulk action's progress (``runtime.bulk.progress``) and a page of its items in order,
    each with its result and the notification's title. 4 queries. ``NotFound``."""
    found = bulk.get(bulk_id)
    rows, cursor = keyset(BulkActionItem.objects.filter(bulk=found), [("ordinal", False)], page)
    titles = dict(Notification.objects.filter(id__in=[r.notification_id for r in rows])
                  .values_list("id", "notification__title"))
    items = [{**bulk.item_view(r.ordinal, r.notification_id, r.result, r.code, r.detail, r.actor, r.at),
              "title": titles.get(r.notification_id)} for r in rows]
    return {**bulk.progress(found), "items": page_body(items, cursor)}


SILENCES_EXPIRED_SHOWN = 50
SILENCES_OPEN_MAX = 500


def silences(now: float) -> dict:
    """``/ui/silences``: the active and pending silences (active ending soonest first, pending
    starting soonest first; at most ``SILENCES_OPEN_MAX`` each) and the ``SILENCES_EXPIRED_SHOWN``
    most recently ended, each with how many notifications it held. 4 queries."""
    active = list(Silence.objects.filter(rules.state_filter(rules.ACTIVE, now)).order_by("ends_at", "id")[:SILENCES_OPEN_MAX])
    pending = list(Silence.objects.filter(rules.state_filter(rules.PENDING_STATE, now))
                   .order_by("starts_at", "id")[:SILENCES_OPEN_MAX])
    expired = list(Silence.objects.filter(rules.state_filter(rules.EXPIRED, now))
                   .order_by("-ends_at", "-id")[:SILENCES_EXPIRED_SHOWN])
    ids = [s.id for s in active + pending + expired]
    held = dict(SilenceHold.objects.filter(silence_id__in=ids).values("silence_id")
                .annotate(n=Count("notification_id", distinct=True)).values_list("silence_id", "n"))

    def view(s):
        return {**shared.silence_view(s, now), "held": held.get(s.id, 0)}

    return {"now": now, "now_iso": iso(now), "active": [view(s) for s in active],
            "pending": [view(s) for s in pending], "expired": [view(s) for s in expired]}


# --- on-call (/ui/oncall*) ---------------------------------------------------------------------
# The shapes are the /api/v1/oncall read models' (``notifications.oncall_selectors``); these only
# gather what one console screen shows in one answer.

CALENDAR_MAX_SPAN = 31 * 86400.0  # the longest window one calendar answer covers


def oncall_board(at: float) -> dict:
    """``/ui/oncall``: every schedule with who is on call at ``at`` (epoch seconds) and next
    (``oncall_selectors.schedules``), and every team with its members and schedules."""
    return {"now": at, "now_iso": iso(at), "schedules": oncall_sel.schedules(at),
            "teams": [oncall_sel.team_view(t) for t in Team.objects.order_by("name")]}


def oncall_calendar(name: str, a: float, b: float) -> dict:
    """``/ui/oncall/schedules/{name}/calendar``: the shifts of schedule ``name`` between ``a``
    and ``b`` (epoch seconds, ``a < b <= a + 31 days``): per layer alone (its rotation and
    restrictions, as if it were the only layer and there were no overrides) and the final
    resolved shifts (``oncall.rotation.shifts`` over the whole schedule, each naming its layer
    or override), and the overrides overlapping the window. Raises ``InvalidRequest`` for a bad
    window, ``NotFound`` (``schedule_not_found``) for an unknown schedule."""
    if not a < b <= a + CALENDAR_MAX_SPAN:
        raise InvalidRequest("end must be after start and at most 31 days later",
                             errors=[{"field": "end", "message": "must be after start, at most 31 days"}])
    row = oncall_runtime.schedule(name)
    spec = oncall_targets.schedule_spec(row)
    layers = Layer.objects.filter(schedule=row).order_by("position")
    per_layer = []
    for i, layer in enumerate(layers):
        alone = rotation.ScheduleSpec((spec.layers[i],), (), spec.time_zone)
        per_layer.append({**oncall_sel.layer_view(layer),
                          "shifts": [oncall_sel.shift_view(alone, s) for s in rotation.shifts(alone, a, b)]})
    overrides = (Override.objects.filter(schedule=row, end__gt=a, start__lt=b).select_related("user")
                 .order_by("start", "id"))
    return {"schedule": row.name, "time_zone": row.time_zone, "team": row.team.name if row.team_id else None,
            "start": a, "start_iso": iso(a), "end": b, "end_iso": iso(b), "layers": per_layer,
            "shifts": [oncall_sel.shift_view(spec, s) for s in rotation.shifts(spec, a, b)],
            "overrides": [oncall_sel.override_view(o) for o in overrides]}


def my_oncall(user) -> dict:
    """``/ui/oncall/me``: the caller's contact methods (secrets never, ``oncall_selectors``)
    and their latest pages (``ONCALL_RESOLVED`` events naming them, newest first)."""
    return {"user": user.get_username(), "contact_methods": oncall_sel.contact_methods(user),
            "pages": oncall_sel.pages_of(user.get_username())}
