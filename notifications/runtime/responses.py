"""Acknowledgement lifecycle (reference 1.2): ``acknowledge`` and ``expire``."""
from django.db import transaction

from ..models import AckAuditRecord, Notification
from . import audit, rows, schemas, timeline
from .errors import Conflict
from .requests import check_actor
from .transitions import ACK_PENDING, ACK_TERMINAL, ACKED, DISMISSED, TIMED_OUT, transition

TIMEOUT_ACTOR = "uns-timeout-worker"


def _settled_response(row: Notification, actor: str, wanted: str) -> Notification:
    """The idempotent answer for a row whose ack_status is already terminal, or a Conflict."""
    if row.ack_status == wanted and row.actor == actor:
        return row
    if row.ack_status == TIMED_OUT:
        raise Conflict("the acknowledgement deadline passed; the notification timed out",
                       code="ack_timed_out", ack_status=row.ack_status)
    raise Conflict(f"already {row.ack_status} by another actor or response",
                   code="ack_conflict", ack_status=row.ack_status)


def acknowledge(runtime, notification_id: str, actor: str, *, dismiss: bool = False, metadata=None) -> Notification:
    """ACK (or dismiss) a delivered notification awaiting response, before its deadline.

    Conditional UPDATE from ack_status PENDING with ``deadline > now``, plus the ACKED/DISMISSED
    event (a callback outbox row when a callback is configured) and an ``ack_audit_records`` row.
    The same actor repeating the same response gets the stored row back (idempotent).

    Raises ``NotFound``; ``Conflict`` with code ``ack_not_required`` (require_ack false),
    ``not_awaiting_ack`` (not yet delivered), ``ack_timed_out`` (TIMED_OUT or deadline passed),
    ``ack_conflict`` (another actor or the other response); ``InvalidRequest`` for a bad
    ``metadata`` (must be an object).
    """
    metadata = schemas.parse(schemas.RespondRequest, {"metadata": metadata}).metadata or {}
    check_actor(actor)
    wanted = DISMISSED if dismiss else ACKED
    row = rows.get(notification_id)
    if not row.notification.get("require_ack"):
        raise Conflict("this notification does not require acknowledgement", code="ack_not_required")
    if row.ack_status in ACK_TERMINAL:
        return _settled_response(row, actor, wanted)
    if row.ack_status != ACK_PENDING:
        raise Conflict("this notification is not awaiting acknowledgement (not delivered yet)",
                       code="not_awaiting_ack", status=row.status)
    now = runtime.clock()
    if row.deadline is not None and row.deadline <= now:
        raise Conflict("the acknowledgement deadline passed", code="ack_timed_out", deadline=row.deadline)
    with transaction.atomic():
        won = transition(Notification.objects.filter(id=row.id), ack_status=(ACK_PENDING, wanted),
                         where={"deadline__gt": now},
                         set={"actor": actor, "responded_at": now, "response_metadata": metadata})
        if won:
            timeline.insert_events(runtime, [timeline.event(row.id, wanted, {"actor": actor, "metadata": metadata}, now,
                                                          callbacks_enabled=runtime.callback is not None)])
            rows.insert(AckAuditRecord, [audit.ack_audit(
                row.id, old=ACK_PENDING, new=wanted, actor=actor, at=now, metadata=metadata)])
    row = rows.get(row.id)  # re-read: what the UPDATE (or whoever won) stored
    if not won:  # someone else responded (or the sweep ran) between our read and our UPDATE
        return _settled_response(row, actor, wanted)
    return row


def time_out(runtime, limit: int = 500) -> list[str]:
    """Sweep ack_status PENDING rows whose ``deadline <= now`` (epoch seconds, runtime clock) to
    TIMED_OUT (actor ``uns-timeout-worker``, metadata ``{"escalation_required": true}``), at
    most ``limit`` of them, earliest deadline first. Returns the ids this call swept.

    One transition, one transaction: each row is its own conditional UPDATE (ack_status PENDING
    and ``deadline <= now`` in the WHERE clause, so a response or another sweeper that won first
    leaves it alone) with its TIMED_OUT event and ack audit row. A row due an automatic
    escalation (``escalation.auto_escalation_applies``) gets ``escalation_due = now`` in the
    same UPDATE; ``escalation.escalate_due`` performs it later in its own transaction.
    Spec: support reference 1.2 (PENDING -> TIMED_OUT).
    """
    from .escalation import auto_escalation_applies  # escalation builds on this module

    now = runtime.clock()
    metadata = {"escalation_required": True}
    due = list(
        Notification.objects.filter(ack_status=ACK_PENDING, deadline__lte=now)
        .order_by("deadline", "id")
        .only("id", "principal", "notification")[:limit]
    )
    swept = []
    for row in due:
        changes = {"actor": TIMEOUT_ACTOR, "responded_at": now, "response_metadata": metadata}
        if auto_escalation_applies(row):
            changes["escalation_due"] = now
        with transaction.atomic():
            if transition(Notification.objects.filter(id=row.id), ack_status=(ACK_PENDING, TIMED_OUT),
                          where={"deadline__lte": now}, set=changes):
                timeline.insert_events(runtime, [timeline.event(
                    row.id, timeline.TIMED_OUT, {"actor": TIMEOUT_ACTOR, "metadata": metadata}, now,
                    callbacks_enabled=runtime.callback is not None)])
                rows.insert(AckAuditRecord, [audit.ack_audit(
                    row.id, old=ACK_PENDING, new=TIMED_OUT, actor=TIMEOUT_ACTOR, at=now, metadata=metadata)])
                swept.append(row.id)
    return swept


def expire(runtime, limit: int = 500) -> list[str]:
    """The timeout pass: ``time_out`` (each row TIMED_OUT in its own transaction), then
    ``escalation.escalate_due`` (each due automatic escalation in its own fenced transaction,
    including ones a crash left behind after an earlier pass). Returns the ids swept to
    TIMED_OUT by this pass. ``limit`` bounds each of the two steps.
    """
    from .escalation import escalate_due

    swept = time_out(runtime, limit)
    escalate_due(runtime, limit)
    return swept
