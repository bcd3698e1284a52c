"""Read models of notifications, timelines and the DLQ. Times are rendered as the raw Float epoch
seconds beside an ISO-8601 UTC string (``<field>_iso``)."""

from django.db.models import Q

from core.times import iso
from core.transitions import ACK_PENDING, DEDUPLICATED, ESCALATION_ACTIVE, PENDING, TIMED_OUT

from core.errors import InvalidRequest

from . import people_audit
from .adapters import apprise as apprise_channel
from .models import AcceptedAt, Event, Notification, PeopleAuditRecord, SilenceAuditRecord
from .pagination import (PageRequest, bounded_total, check_known, keyset, page_body, page_request, parse_time,
                         single)
from .redaction import mask_string
from .runtime import counts, dedup
from .runtime.dlq import replay_blockers
from .runtime import silences as _silences

TIME_FIELDS = ("next_attempt", "lease_until", "delivered_at", "deadline", "responded_at")


def time_fields(row: Notification) -> dict:
    """``TIME_FIELDS`` of ``row`` (Float epoch seconds, as stored) each beside its ISO-8601 UTC
    rendering (``<field>_iso``). ``lease_until`` is 0 while no lease is held (support reference
    2.1): its rendering is then null, not 1970-01-01."""
    body = {}
    for name in TIME_FIELDS:
        value = getattr(row, name)
        body[name] = value
        body[f"{name}_iso"] = None if name == "lease_until" and not value else iso(value)
    return body


def channel_delivers_to(ch) -> str:
    """Where a channel delivers, without its secret (webhook URL, email recipients, the Apprise
    URLs' schemes only). Not masked: callers mask (``redaction.mask_string``) what they show."""
    if ch.kind == "webhook":
        return ch.config.get("url", "")
    if ch.kind == "email":
        return ", ".join(ch.config.get("to", []))
    if ch.kind == "apprise":
        schemes = [u.split("://", 1)[0] for u in apprise_channel.parse_urls(ch.secret)]
        return f"{len(schemes)} Apprise URL(s): " + ", ".join(f"{s}://" for s in schemes)
    return "the in-app console inbox" if ch.kind == "console" else ""


def channel_view(ch) -> dict:
    """A channel as ``/api/v1/channels`` shows it: ``{name, kind, enabled, config,
    has_secret, delivers_to, created_at, created_at_iso}``; the secret never, URL credentials
    masked (``redaction.mask_string``)."""
    config = {k: (mask_string(v) if isinstance(v, str) else v) for k, v in ch.config.items()}
    return {"name": ch.name, "kind": ch.kind, "enabled": ch.enabled, "config": config, "has_secret": bool(ch.secret),
            "delivers_to": mask_string(channel_delivers_to(ch)), "created_at": ch.created_at.timestamp(),
            "created_at_iso": iso(ch.created_at.timestamp())}


def dedup_role(row: Notification) -> str:
    """The role ``row`` took at intake (``dedup.ROLES``): ``leader``, ``follower`` or ``deduplicated``."""
    if row.dedup_owner_id is None:
        return dedup.LEADER
    return dedup.DEDUPLICATED if row.status == DEDUPLICATED else dedup.FOLLOWER


def intake_summary(row: Notification) -> dict:
    """What ``POST /api/v1/notifications`` answers."""
    resolution = row.notification["metadata"]["uns_resolution"]
    return {
        "id": row.id,
        "status": row.status,
        "dedup_role": dedup_role(row),
        "owner_id": row.dedup_owner_id,
        "policy_id": resolution["policy_id"],
        "policy_revision": resolution["revision"],
        "effective_hash": resolution["effective_hash"],
    }


def event_view(ev: Event) -> dict:
    return {"id": ev.id, "kind": ev.kind, "at": ev.at, "at_iso": iso(ev.at), "payload": ev.payload}


def timeline(notification_id: str) -> list[dict]:
    """Every event of one notification, oldest first."""
    return [event_view(ev) for ev in Event.objects.filter(notification_id=notification_id).order_by("at", "id")]


def notification_detail(row: Notification, *, with_timeline: bool = True) -> dict:
    """State, outcome, ack fields and (optionally) the timeline of one notification."""
    body = {
        **intake_summary(row),
        "principal": row.principal,
        "notification": row.notification,
        "outcome": row.outcome,
        "attempts": row.attempts,
        "cycle": row.cycle,
        "cycle_attempts": row.cycle_attempts,
        "dead_letter": row.dead_letter,
        "dedup_generation": row.dedup_generation,
        "dedup_successor_id": row.dedup_successor_id,
        "leased": bool(row.lease_token),
        "ack_status": row.ack_status,
        "actor": row.actor,
        "response_metadata": row.response_metadata,
    }
    body.update(time_fields(row))
    if with_timeline:
        body["timeline"] = timeline(row.id)
    return body


def dlq_items(rows: list[Notification], now: float) -> list[dict]:
    """DLQ entries for ``rows`` (from ``dead_letters``), their replay blockers read in one batch
    (3 queries at most)."""
    blockers = replay_blockers(rows, now)
    return [dlq_item(row, blockers.get(row.id)) for row in rows]


def dlq_item(row: Notification, blocker: dict | None) -> dict:
    """One DLQ entry of a row from ``dead_letters``: failure reason, cycle, attempts, when it
    was accepted and dead-lettered (``failed_at``, epoch seconds) and what blocks replay."""
    return {
        "id": row.id,
        "source": row.notification.get("source"),
        "title": row.notification.get("title"),
        "error_message": row.outcome.get("error_message"),
        "channels_failed": row.outcome.get("channels_failed", []),
        "cycle": row.cycle,
        "cycle_attempts": row.cycle_attempts,
        "attempts": row.attempts,
        "accepted_at": row.accepted_at,
        "accepted_at_iso": iso(row.accepted_at),
        "failed_at": row.failed_at,
        "failed_at_iso": iso(row.failed_at),
        "replay_blocked": blocker is not None,
        "replay_blocker": blocker,
    }


def pending_acks(*, limit: int = 50) -> list[Notification]:
    """Delivered notifications awaiting a response (ack_status PENDING), soonest deadline first.
    Rows whose deadline already passed stay listed until the timeout sweep settles them."""
    return list(Notification.objects.filter(ack_status=ACK_PENDING).order_by("deadline", "id")[:limit])


def pending_ack_item(row: Notification) -> dict:
    """One entry of ``pending_acks``: what a responder needs to decide, and by when."""
    n = row.notification
    return {
        "id": row.id,
        "source": n.get("source"),
        "title": n.get("title"),
        "severity": n.get("severity"),
        "intent": n.get("intent"),
        "status": row.status,
        "ack_status": row.ack_status,
        "delivered_at": row.delivered_at,
        "delivered_at_iso": iso(row.delivered_at),
        "deadline": row.deadline,
        "deadline_iso": iso(row.deadline),
    }


# --- Listing and paginated timelines (GET /api/v1/notifications, .../{id}/timeline) -----------
#
# Keyset pagination (``notifications.pagination``): the listing is ordered by (acceptance time,
# id) and a page resumes strictly after the pair of the last row seen. Acceptance time is ``notification.created_at`` (``models.AcceptedAt``), covered by the
# ``ix_uns_accepted`` / ``ix_uns_principal_accepted`` expression indexes.

def notification_list_item(row: Notification) -> dict:
    """One listing entry: identity, state and response fields, without the full request body."""
    n = row.notification
    body = {
        "id": row.id,
        "principal": row.principal,
        "source": n.get("source"),
        "title": n.get("title"),
        "severity": n.get("severity"),
        "dedup_key": n.get("dedup_key"),
        "require_ack": bool(n.get("require_ack")),
        "status": row.status,
        "dead_letter": row.dead_letter,
        "dedup_role": dedup_role(row),
        "owner_id": row.dedup_owner_id,
        "attempts": row.attempts,
        "cycle": row.cycle,
        "ack_status": row.ack_status,
        "actor": row.actor,
        "accepted_at": n.get("created_at"),
        "accepted_at_iso": iso(n.get("created_at")),
    }
    body.update(time_fields(row))
    return body


# Orders of the listing (by ``order``) and of a timeline, for ``pagination.keyset``.
LIST_ORDERS = {"desc": [("accepted", True), ("id", True)], "asc": [("accepted", False), ("id", False)]}
TIMELINE_ORDER = [("at", False), ("id", False)]


def list_notifications(*, principal: str | None = None, statuses=None, ack_statuses=None, source: str | None = None,
                       dead_letter: bool | None = None, since: float | None = None, until: float | None = None):
    """Queryset of the notifications matching every given filter, annotated with ``accepted``
    (acceptance time, epoch seconds); page it in ``LIST_ORDERS[order]``.

    ``statuses``/``ack_statuses`` are collections of values (``None`` inside ``ack_statuses``
    means "no ack status"); ``since`` (inclusive) and ``until`` (exclusive) bound the acceptance
    time in epoch seconds.
    """
    qs = Notification.objects.annotate(accepted=AcceptedAt())
    if principal is not None:
        qs = qs.filter(principal=principal)
    if statuses:
        qs = qs.filter(status__in=list(statuses))
    if ack_statuses:
        values = [v for v in ack_statuses if v is not None]
        cond = Q(ack_status__in=values)
        if None in ack_statuses:
            cond |= Q(ack_status__isnull=True)
        qs = qs.filter(cond)
    if source is not None:
        qs = qs.filter(notification__source=source)
    if dead_letter is not None:
        qs = qs.filter(dead_letter=dead_letter)
    if since is not None:
        qs = qs.filter(accepted__gte=since)
    if until is not None:
        qs = qs.filter(accepted__lt=until)
    return qs


def listing_total(filters: dict, qs) -> dict:
    """``{"total": n, "total_capped": bool}`` of the listing ``qs`` that ``list_notifications``
    built from ``filters`` (its keyword arguments). On PostgreSQL, when the only filter given is
    ``statuses``, ``ack_statuses`` or ``source`` (or none), the exact count from the maintained
    counts (``runtime.counts``: one query over the states or sources, whatever the table's size;
    never capped); otherwise ``pagination.bounded_total(qs)`` (at most ``TOTAL_CAP`` rows counted)."""
    given = {name: value for name, value in filters.items() if value is not None}
    if counts.maintained() and len(given) <= 1:
        name = next(iter(given), None)
        if name in (None, "statuses", "ack_statuses"):
            by_status, by_ack = counts.by_state()
            if name == "ack_statuses":
                n = sum(by_ack.get(counts.NO_ACK if v is None else v, 0) for v in set(given[name]))
            else:
                n = sum(by_status.get(v, 0) for v in set(given.get("statuses") or by_status))
            return {"total": n, "total_capped": False}
        if name == "source":
            return {"total": counts.total(counts.SOURCE, given["source"]), "total_capped": False}
    return bounded_total(qs)


def timeline_events(notification_id: str):
    """Queryset of one notification's events; page it in ``TIMELINE_ORDER`` (oldest first)."""
    return Event.objects.filter(notification_id=notification_id)


def open_by_client_dedup_key(principal: str, dedup_key: str, *, limit: int = 100) -> list[Notification]:
    """The principal's notifications sent with this client-side ``dedup_key`` (the request
    field, not the scoped digest in the ``dedup_key`` column) that are still open: awaiting a
    response (ack_status PENDING), not yet delivered (status PENDING, no ack status), or timed
    out with their escalation chain still paging (ack_status TIMED_OUT, escalation_state ACTIVE).
    Oldest first. Used by the PagerDuty / Alertmanager intake to acknowledge or resolve by key
    (and to stop the chain of a timed-out one)."""
    open_rows = (Q(ack_status=ACK_PENDING) | Q(ack_status__isnull=True, status=PENDING)
                 | Q(ack_status=TIMED_OUT, escalation_state=ESCALATION_ACTIVE))
    return list(Notification.objects.filter(open_rows, principal=principal, notification__dedup_key=dedup_key)
                .annotate(accepted=AcceptedAt()).order_by("accepted", "id")[:limit])


# --- the people audit (who did what, when, to what) --------------------------------------------

AUDIT_KIND = "people-audit"
AUDIT_ORDER = [("at", True), ("id", True)]  # newest first
AUDIT_FILTERS = ("actor", "action", "object_type", "object_id", "bulk_action_id", "since", "until")
AUDIT_PARAMS = frozenset({*AUDIT_FILTERS, "limit", "cursor"})


def _audit_bad(field: str, message: str) -> InvalidRequest:
    return InvalidRequest(f"query parameter {field!r} {message}", errors=[{"field": field, "message": message}])


def parse_audit_query(params) -> tuple[dict, PageRequest]:
    """The audit list's filters and page from query parameters: ``actor`` (exact user or token
    name), ``action`` (one of ``people_audit.ACTIONS``), ``object_type`` (one of
    ``people_audit.OBJECT_TYPES``) and ``object_id`` (exact; needs ``object_type``),
    ``bulk_action_id`` (the bulk action and its items), ``since`` (inclusive) and ``until``
    (exclusive) on the action's time (epoch seconds or ISO-8601, ``pagination.parse_time``),
    ``limit`` (1..500, default 100) and ``cursor``. Each filter takes one value, so every
    filter shape is one range of one index (``models.PeopleAuditRecord``). Raises
    ``InvalidRequest`` (400 problem details naming the field): an unknown parameter, a value
    given twice, an unknown action or object type, an empty or over-long value, ``object_id``
    without ``object_type``, ``since`` not before ``until``, a bad ``limit`` or ``cursor``."""
    check_known(params, AUDIT_PARAMS)
    filters: dict = {}
    for name, longest in (("actor", 255), ("action", 32), ("object_type", 32), ("object_id", 255),
                          ("bulk_action_id", 36)):
        value = single(params, name)
        if value is None:
            continue
        if not value or len(value) > longest or "\x00" in value:
            raise _audit_bad(name, f"must be 1..{longest} characters")
        filters[name] = value
    if "action" in filters and filters["action"] not in people_audit.ACTIONS:
        raise _audit_bad("action", f"must be one of {sorted(people_audit.ACTIONS)}")
    if "object_type" in filters and filters["object_type"] not in people_audit.OBJECT_TYPES:
        raise _audit_bad("object_type", f"must be one of {list(people_audit.OBJECT_TYPES)}")
    if "object_id" in filters and "object_type" not in filters:
        raise _audit_bad("object_id", "needs object_type")
    for name in ("since", "until"):
        value = parse_time(params, name)
        if value is not None:
            filters[name] = value
    if "since" in filters and "until" in filters and filters["since"] >= filters["until"]:
        raise _audit_bad("until", "must be later than since")
    return filters, page_request(params, AUDIT_KIND, len(AUDIT_ORDER))


def audit_rows(filters: dict):
    """Queryset of the audit rows matching ``filters`` (``parse_audit_query``'s); page it in
    ``AUDIT_ORDER``."""
    qs = PeopleAuditRecord.objects.all()
    for name in ("actor", "action", "object_type", "object_id", "bulk_action_id"):
        if name in filters:
            qs = qs.filter(**{name: filters[name]})
    if "since" in filters:
        qs = qs.filter(at__gte=filters["since"])
    if "until" in filters:
        qs = qs.filter(at__lt=filters["until"])
    return qs


def audit_item(r: PeopleAuditRecord) -> dict:
    """One audit row as every transport shows it."""
    return {"id": r.id, "at": r.at, "at_iso": iso(r.at), "actor": r.actor, "action": r.action,
            "object_type": r.object_type, "object_id": r.object_id, "object_title": r.object_title,
            "bulk_action_id": r.bulk_action_id, "detail": r.detail}


def people_audit_page(params) -> dict:
    """``{"items": [audit_item...], "next"}``: who did what, when, to what, newest first,
    filtered and paged as ``parse_audit_query`` reads ``params``. One query (the page, read
    from the index of its filter shape; no count of the table). Raises ``InvalidRequest``."""
    filters, page = parse_audit_query(params)
    rows, cursor = keyset(audit_rows(filters), AUDIT_ORDER, page)
    return page_body([audit_item(r) for r in rows], cursor)


def silence_view(silence, now: float) -> dict:
    """A silence as the API and the console show it: ``{id, matchers, starts_at, ends_at,
    comment, created_by, created_at, updated_at, expired_by, state}`` with each time also as
    ``<field>_iso``; ``state`` (``active``, ``pending``, ``expired``) at ``now`` (epoch seconds)."""
    body = {"id": silence.id, "matchers": silence.matchers, "comment": silence.comment,
            "created_by": silence.created_by, "expired_by": silence.expired_by,
            "state": _silences.state(silence, now)}
    for name in ("starts_at", "ends_at", "created_at", "updated_at"):
        body[name] = getattr(silence, name)
        body[f"{name}_iso"] = iso(body[name])
    return body


def silence_audit(silence_id: str) -> list[dict]:
    """The audit trail of a silence, oldest first: ``[{action, actor, at, at_iso, matchers,
    starts_at, ends_at, comment}]``."""
    return [{"action": a.action, "actor": a.actor, "at": a.at, "at_iso": iso(a.at), "matchers": a.matchers,
             "starts_at": a.starts_at, "ends_at": a.ends_at, "comment": a.comment}
            for a in SilenceAuditRecord.objects.filter(silence_id=silence_id).order_by("at", "id")]
