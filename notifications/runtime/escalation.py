"""``escalate``: send to the frozen policy's escalation target, plus the automatic escalation
``expire()`` performs for notifications that time out (snooze is in ``snooze.py``).

An escalation is a new notification accepted through ``intake.accept`` (principal
``uns-escalation``), so it is delivered, retried and dead-lettered like any other; the original
records ESCALATED with the new id. Both commit in the same transaction. An automatic
escalation (a notification timed out) runs in its own transaction after the TIMED_OUT one:
``responses.time_out`` records it as due (``escalation_due``), ``escalate_due`` performs it once.
"""
import logging
from dataclasses import dataclass

from django.db import transaction

from ..logformat import log_ids
from ..models import Event, Notification
from . import intake, rows, schemas, timeline
from .errors import Conflict, UNSError, database_unreachable
from .requests import check_actor, check_request_id, earlier, not_awaiting
from .responses import TIMEOUT_ACTOR
from .transitions import ACK_PENDING, TIMED_OUT

log = logging.getLogger("uns.escalation")

ESCALATION_PRINCIPAL = "uns-escalation"
ESCALATION_TITLE_PREFIX = "ESCALATED: "
AUTO_ESCALATION_REASON = "acknowledgement deadline passed"
ESCALATABLE = (ACK_PENDING, TIMED_OUT)


@dataclass(frozen=True)
class EscalationResult:
    """``notification``: the original row; ``escalation``: the notification sent to ``target``;
    ``number``: 1 for the first escalation of the original; ``created``: False for a repeat."""

    notification: Notification
    escalation: Notification
    target: str
    number: int
    created: bool


def escalation_target(row: Notification) -> str | None:
    """The escalation target channel frozen in the notification's effective policy, or None."""
    effective = row.notification["metadata"]["uns_resolution"]["effective"]
    escalation = effective.get("escalation") or {}
    return escalation.get("target") or None


def escalation_request(row: Notification, *, target: str, number: int, actor: str, reason: str) -> dict:
    """The SendNotificationRequest of escalation ``number`` of ``row`` (to ``target``)."""
    n = row.notification
    title = (ESCALATION_TITLE_PREFIX + n["title"])[:schemas.MAX_TITLE]
    return {
        "source": n["source"],
        "title": title,
        "body": n.get("body") or "",
        "severity": n.get("severity") or "info",
        "intent": n.get("intent"),
        "agent_id": n.get("agent_id"),
        "autonomy_mode": n.get("autonomy_mode"),
        "channels": [target],
        "require_ack": True,
        "idempotency_key": f"escalation:{row.id}:{number}",
        "metadata": {
            "escalated_from": row.id,
            "escalation_number": number,
            "escalation_reason": reason,
            "escalated_by": actor,
        },
    }


def _escalate_locked(runtime, row: Notification, actor: str, reason: str, now: float,
                     request_id: str | None) -> EscalationResult:
    """Accept the escalation and write ESCALATED, inside the caller's transaction, which has
    already fenced ``row`` (its conditional UPDATE holds the row lock until commit)."""
    target = escalation_target(row)
    if target is None:
        raise Conflict("the notification's policy names no escalation target", code="no_escalation_target")
    number = Event.objects.filter(notification_id=row.id, kind=timeline.ESCALATED).count() + 1
    request = escalation_request(row, target=target, number=number, actor=actor, reason=reason)
    try:
        accepted = intake.accept(runtime, ESCALATION_PRINCIPAL, request)
    except UNSError as exc:
        raise Conflict(f"the escalation to {target!r} was refused: {exc.detail}",
                       code="escalation_target_unavailable", target=target, cause=exc.code) from exc
    timeline.insert_events(runtime, [timeline.event(row.id, timeline.ESCALATED, {
        "actor": actor,
        "reason": reason,
        "target": target,
        "escalation_id": accepted.notification.id,
        "escalation_number": number,
        "request_id": request_id,
    }, now)])
    return EscalationResult(row, accepted.notification, target, number, True)


def _lock_escalatable(notification_id: str) -> bool:
    """Lock the row (SELECT ... FOR UPDATE; SQLite's IMMEDIATE transaction already serialises
    writers) if its ack state is PENDING or TIMED_OUT. Inside the caller's transaction."""
    return (Notification.objects.select_for_update().filter(id=notification_id, ack_status__in=ESCALATABLE)
            .values_list("id", flat=True).first()) is not None


def escalate(runtime, notification_id: str, actor: str, reason: str = "", *,
             request_id: str | None = None) -> EscalationResult:
    """Escalate a notification awaiting a response (ack_status PENDING) or timed out (TIMED_OUT)
    to the escalation target channel of its frozen effective policy.

    One transaction: the row is locked while its ack state allows escalating (escalation is no
    transition of either state machine, so it writes no state; the lock numbers concurrent
    escalations one after the other), the escalation is accepted through ``intake.accept`` (principal
    ``uns-escalation``, channels ``[target]``, title prefixed ``ESCALATED: ``, ``require_ack``,
    metadata ``escalated_from`` / ``escalation_number`` / ``escalation_reason`` /
    ``escalated_by``, idempotency key derived from the original id and escalation number), and
    the original gets ESCALATED (actor, reason, target, escalation_id, escalation_number,
    request_id). ``request_id`` makes retries idempotent (same actor and id: the earlier
    escalation, ``created`` False). Every call without one escalates again (number + 1).

    ``reason`` is parsed as ``schemas.EscalateRequest`` (the body HTTP parses; None is ``""``).

    Raises ``NotFound``; ``InvalidRequest`` (reason not a string of at most
    ``schemas.MAX_REASON_LENGTH`` characters; ``parse_error`` for one UNS cannot store); ``Conflict``
    ``no_escalation_target``, ``escalation_target_unavailable`` (the target channel refused the
    escalation: not configured, disabled or not allowed by policy; ``cause`` names why),
    ``ack_not_required``, ``not_awaiting_ack`` or ``ack_conflict`` (already ACKED/DISMISSED).
    """
    reason = schemas.parse(schemas.EscalateRequest, {"reason": reason}).reason or ""
    check_actor(actor)
    check_request_id(request_id)
    row = rows.get(notification_id)
    repeat = earlier(row.id, timeline.ESCALATED, actor, request_id)
    if repeat is not None:
        return EscalationResult(row, Notification.objects.get(id=repeat.payload["escalation_id"]),
                                repeat.payload["target"], repeat.payload["escalation_number"], False)
    if row.ack_status not in ESCALATABLE or not row.notification.get("require_ack"):
        raise not_awaiting(row, "escalated")
    if escalation_target(row) is None:
        raise Conflict("the notification's policy names no escalation target", code="no_escalation_target")
    now = runtime.clock()
    with transaction.atomic():
        fenced = _lock_escalatable(row.id)
        if fenced:
            row.refresh_from_db()
            # Under the fence: a concurrent retry with the same request_id may have just won.
            repeat = earlier(row.id, timeline.ESCALATED, actor, request_id)
            if repeat is not None:
                return EscalationResult(row, Notification.objects.get(id=repeat.payload["escalation_id"]),
                                        repeat.payload["target"], repeat.payload["escalation_number"], False)
            result = _escalate_locked(runtime, row, actor, reason, now, request_id)
    if not fenced:  # settled (ACKED / DISMISSED) between our read and our UPDATE
        raise not_awaiting(rows.get(notification_id), "escalated")
    return result


def auto_escalation_applies(row: Notification) -> bool:
    """Whether ``row`` timing out makes an automatic escalation due: its frozen policy names a
    target and it is not itself an escalation (principal ``uns-escalation``: one automatic
    level, so a target that never answers is not paged in a loop; a responder may still
    escalate an escalation by hand). Pure: reads only the row."""
    return row.principal != ESCALATION_PRINCIPAL and escalation_target(row) is not None


def auto_escalate(runtime, row: Notification, now: float) -> list[Event]:
    """Perform the automatic escalation of ``row`` (TIMED_OUT, ``auto_escalation_applies``)
    inside the caller's transaction, which holds the row lock (``escalate_due``'s fence).

    A refused escalation (say the target channel was disabled) rolls back only its savepoint and
    returns the ESCALATION_FAILED event for the caller to insert; a successful one inserts its
    own events and returns ``[]``.
    """
    try:
        with transaction.atomic():
            _escalate_locked(runtime, row, TIMEOUT_ACTOR, AUTO_ESCALATION_REASON, now, None)
    except UNSError as exc:
        log.warning("automatic escalation of %s failed: %s (%s)", row.id, exc.detail, exc.code,
                    extra=log_ids(row.id))
        return [timeline.event(row.id, timeline.ESCALATION_FAILED, {
            "actor": TIMEOUT_ACTOR, "reason": AUTO_ESCALATION_REASON, "target": escalation_target(row),
            "code": getattr(exc, "extra", {}).get("cause", exc.code), "detail": exc.detail,
        }, now)]
    return []


def escalate_due(runtime, limit: int = 500) -> list[str]:
    """Perform the automatic escalations that ``responses.time_out`` recorded as due
    (``escalation_due <= now``, epoch seconds), at most ``limit``, oldest first. Returns the ids
    of the originals this call escalated or recorded ESCALATION_FAILED for.

    Each is its own transaction, fenced by a conditional UPDATE that clears ``escalation_due``
    (it must still be set): of two workers racing for one row, the second's UPDATE waits for the
    first's commit and then matches nothing, so a timed-out notification is escalated exactly
    once. A crash after TIMED_OUT and before this step (or during it: the transaction rolls
    back) leaves ``escalation_due`` set, and the next pass escalates it. An unexpected error on
    one row (not a refusal, which is ESCALATION_FAILED) is logged and leaves it due; the others
    proceed.
    """
    now = runtime.clock()
    due = list(Notification.objects.filter(escalation_due__isnull=False, escalation_due__lte=now)
               .order_by("escalation_due", "id").values_list("id", flat=True)[:limit])
    done = []
    for nid in due:
        try:
            with transaction.atomic():
                if not Notification.objects.filter(id=nid, escalation_due__isnull=False).update(escalation_due=None):
                    continue  # another worker escalated it first
                row = Notification.objects.get(id=nid)
                timeline.insert_events(runtime, auto_escalate(runtime, row, now))
        except Exception as exc:
            if database_unreachable(exc):
                raise  # no row at fault: the worker loop backs off and logs the outage once
            log.exception("automatic escalation of %s could not run; it stays due", nid, extra=log_ids(nid))
            continue
        done.append(nid)
    return done
