"""Acknowledgement lifecycle (reference 1.2): ``acknowledge`` and ``expire``."""
from django.db import transaction
from django.db.models import Case, F, Q, Value, When

from ..models import AckAuditRecord, Notification
from . import audit, rows, schemas, timeline
from .errors import Conflict
from .requests import check_actor
from .transitions import ACK_PENDING, ACK_TERMINAL, ACKED, DISMISSED, TIMED_OUT, sql_guard, transition

TIMEOUT_ACTOR = "uns-timeout-worker"


def _settle_governance(runtime, row: Notification, ack_status: str, actor: str, now: float) -> None:
    """A won response on a governance approval notification settles its decision in this same
    transaction (``policies.governance.bridge``); any other notification: nothing."""
    if schemas.GOVERNANCE_METADATA_KEY not in ((row.notification or {}).get("metadata") or {}):
        return
    from policies.governance.bridge import settle_response  # the bridge builds on this module

    settle_response(runtime, row, ack_status, actor, now)


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
    event (always a callback outbox row, ``callbacks``) and an ``ack_audit_records`` row,
    and, in the same transaction, ``escalation.stop_chain``: the response stops the escalation
    chain of this notification and, for an escalation, of its original.
    The same actor repeating the same response gets the stored row back (idempotent).
    Statements: a won response is the UPDATE ... RETURNING and its INSERTs in one transaction,
    nothing read before or after; the row is read only when the UPDATE matched nothing.

    Raises ``NotFound``; ``Conflict`` with code ``ack_not_required`` (require_ack false),
    ``not_awaiting_ack`` (not yet delivered), ``ack_timed_out`` (TIMED_OUT or deadline passed),
    ``ack_conflict`` (another actor or the other response); ``InvalidRequest`` for a bad
    ``metadata`` (must be an object).
    """
    metadata = schemas.parse(schemas.RespondRequest, {"metadata": metadata}).metadata or {}
    check_actor(actor)
    wanted = DISMISSED if dismiss else ACKED
    now = runtime.clock()
    # The common case first: the conditional UPDATE alone decides a response to a row awaiting
    # one, and returns the row it wrote (no read before, none after). Only when it matches
    # nothing is the row read, to say why (or to answer a repeat).
    if isinstance(notification_id, str) and rows.ID_SHAPE.fullmatch(notification_id):
        won = _respond(runtime, notification_id, wanted, actor, metadata, now)
        if won is not None:
            return won
    row = rows.get(notification_id)
    if not row.notification.get("require_ack"):
        raise Conflict("this notification does not require acknowledgement", code="ack_not_required")
    if row.ack_status in ACK_TERMINAL:
        return _settled_response(row, actor, wanted)
    if row.ack_status != ACK_PENDING:
        raise Conflict("this notification is not awaiting acknowledgement (not delivered yet)",
                       code="not_awaiting_ack", status=row.status)
    if row.deadline is not None and row.deadline <= now:
        raise Conflict("the acknowledgement deadline passed", code="ack_timed_out", deadline=row.deadline)
    # Awaiting a response now, though the UPDATE matched nothing a moment ago (delivered since):
    # the same conditional UPDATE decides.
    won = _respond(runtime, row.id, wanted, actor, metadata, now)
    if won is not None:
        return won
    # Someone else responded (or the sweep ran) between our read and our UPDATE.
    return _settled_response(rows.get(row.id), actor, wanted)


def _respond(runtime, notification_id: str, wanted: str, actor: str, metadata: dict, now: float):
    """The response transition, one transaction: the conditional UPDATE (ack_status PENDING ->
    ``wanted``, guarded by ``transitions.sql_guard``, and ``deadline > now``) returning the row,
    then, when it matched, the event, the audit row, the governance settlement and the chain stop.
    Returns the updated row, or None when the UPDATE matched nothing (nothing written).
    Raises ``Conflict`` (``ack_not_required``, ``self_approval``; the transaction rolls back)."""
    from django.db import connection

    from .escalation import stop_chain  # escalation builds on this module

    guard, guard_params = sql_guard("ack_status", [(ACK_PENDING, wanted)],
                                    column=connection.ops.quote_name("ack_status"))
    with transaction.atomic():
        row = rows.update(Notification, notification_id,
                          {"ack_status": wanted, "actor": actor, "responded_at": now, "response_metadata": metadata},
                          f"{guard} AND {connection.ops.quote_name('deadline')} > %s", [*guard_params, now])
        if row is None:
            return None
        if not row.notification.get("require_ack"):  # never PENDING without it; refused if it were
            raise Conflict("this notification does not require acknowledgement", code="ack_not_required")
        timeline.insert_events(runtime, [timeline.event(row.id, wanted, {"actor": actor, "metadata": metadata}, now)])
        rows.insert(AckAuditRecord, [audit.ack_audit(
            row.id, old=ACK_PENDING, new=wanted, actor=actor, at=now, metadata=metadata)])
        _settle_governance(runtime, row, wanted, actor, now)
        stop_chain(runtime, row, actor, wanted, now)  # same transaction: no level after this
    return row


def time_out(runtime, limit: int = 500) -> list[str]:
    """Sweep ack_status PENDING rows whose ``deadline <= now`` (epoch seconds, runtime clock) to
    TIMED_OUT (actor ``uns-timeout-worker``, metadata ``{"escalation_required": true}``), at
    most ``limit`` of them, earliest deadline first. Returns the ids this call swept.

    One transition, one transaction: each row is its own conditional UPDATE (ack_status PENDING
    and ``deadline <= now`` in the WHERE clause, so a response or another sweeper that won first
    leaves it alone) with its TIMED_OUT event and ack audit row. A row whose policy names an
    escalation chain (``escalation.auto_escalation_applies``) that has not started yet starts
    it in the same UPDATE (``escalation_state`` ACTIVE, step 0, ``escalation_due = now``);
    ``escalation.escalate_due`` fires its levels later, each in its own transaction.
    Spec: support reference 1.2 (PENDING -> TIMED_OUT).
    """
    from .escalation import ACTIVE, auto_escalation_applies  # escalation builds on this module

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
            # The chain starts here unless a manual escalation already started it (the same
            # UPDATE decides, on the row it writes: a concurrent escalate holds the row lock).
            fresh = Q(escalation_state__isnull=True)
            changes["escalation_state"] = Case(When(fresh, then=Value(ACTIVE)), default=F("escalation_state"))
            changes["escalation_due"] = Case(When(fresh, then=Value(now)), default=F("escalation_due"))
            changes["escalation_step"] = Case(When(fresh, then=Value(0)), default=F("escalation_step"))
        with transaction.atomic():
            if transition(Notification.objects.filter(id=row.id), ack_status=(ACK_PENDING, TIMED_OUT),
                          where={"deadline__lte": now}, set=changes):
                timeline.insert_events(runtime, [timeline.event(
                    row.id, timeline.TIMED_OUT, {"actor": TIMEOUT_ACTOR, "metadata": metadata}, now)])
                rows.insert(AckAuditRecord, [audit.ack_audit(
                    row.id, old=ACK_PENDING, new=TIMED_OUT, actor=TIMEOUT_ACTOR, at=now, metadata=metadata)])
                _settle_governance(runtime, row, TIMED_OUT, TIMEOUT_ACTOR, now)
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
