"""Acknowledgement lifecycle (reference 1.2): ``acknowledge`` and ``expire``."""
from django.db import connection, transaction


from core import codes, hooks
from core.actors import check_actor
from core.errors import Conflict, InvalidRequest
from core.keys import is_notification_id
from core.schema import parse
from core.transitions import (ACK_PENDING, ACK_TERMINAL, ACKED, DISMISSED, ESCALATION_ACTIVE, TIMED_OUT,
                              transition)

from ..models import AckAuditRecord, Notification
from . import audit, escalation, group_commit, rows, schemas, timeline
from .requests import TIMEOUT_ACTOR

# Responses of this process: one writer at a time (``group_commit.GroupCommit``).
_ACKS = group_commit.GroupCommit("ack")


def _settled_response(row: Notification, actor: str, wanted: str) -> Notification:
    """The idempotent answer for a row whose ack_status is already terminal, or a Conflict."""
    if row.ack_status == wanted and row.actor == actor:
        return row
    if row.ack_status == TIMED_OUT:
        raise Conflict("the acknowledgement deadline passed; the notification timed out",
                       code=codes.ACK_TIMED_OUT, ack_status=row.ack_status)
    raise Conflict(f"already {row.ack_status} by another actor or response",
                   code=codes.ACK_CONFLICT, ack_status=row.ack_status)


def acknowledge(runtime, notification_id: str, actor: str, *, dismiss: bool = False, metadata=None,
                approve: bool = False) -> Notification:
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
    ``ack_conflict`` (another actor or the other response), ``approval_not_explicit`` (an ACK of a
    governance approval notification without ``approve=True``: an approval is granted only when the
    approver says so; nothing is written); ``InvalidRequest`` for a bad ``metadata`` (must be an
    object) or ``approve`` (a boolean, and true only on an ACK: a dismiss denies).

    Outside a transaction, responses of one process arriving together are written in one
    transaction (``group_commit``: each in its own savepoint, one COMMIT), each answered after it.
    """
    body = parse(schemas.RespondRequest, {"metadata": metadata, "approve": approve})
    metadata, approve = body.metadata or {}, body.approve
    if dismiss and approve:
        raise InvalidRequest("approve is only for an ACK; a dismiss denies",
                             errors=[{"field": "approve", "message": "only for an ACK; a dismiss denies"}])
    check_actor(actor)
    wanted = DISMISSED if dismiss else ACKED
    if connection.in_atomic_block:  # the caller's transaction holds it: no group commit
        return _acknowledge(runtime, notification_id, actor, wanted, metadata, approve)
    # Responders answering together share one transaction and one COMMIT (``group_commit``);
    # a response to a notification another request of the batch answered sees that answer.
    return _ACKS.run(lambda: _acknowledge(runtime, notification_id, actor, wanted, metadata, approve),
                     lambda: _acknowledge(runtime, notification_id, actor, wanted, metadata, approve))


def _acknowledge(runtime, notification_id: str, actor: str, wanted: str, metadata: dict, approve: bool):
    """``acknowledge`` once the request is checked: the conditional UPDATE first, the row read
    only when it matched nothing. Its own transactions, or a group-commit batch's savepoint."""
    now = runtime.clock()
    # The common case first: the conditional UPDATE alone decides a response to a row awaiting
    # one, and returns the row it wrote (no read before, none after). Only when it matches
    # nothing is the row read, to say why (or to answer a repeat).
    if is_notification_id(notification_id):
        won = _respond(runtime, notification_id, wanted, actor, metadata, now, approve)
        if won is not None:
            return won
    row = rows.get(notification_id)
    if not row.notification.get("require_ack"):
        raise Conflict("this notification does not require acknowledgement", code=codes.ACK_NOT_REQUIRED)
    if row.ack_status in ACK_TERMINAL:
        return _settled_response(row, actor, wanted)
    if row.ack_status != ACK_PENDING:
        raise Conflict("this notification is not awaiting acknowledgement (not delivered yet)",
                       code=codes.NOT_AWAITING_ACK, status=row.status)
    if row.deadline is not None and row.deadline <= now:
        raise Conflict("the acknowledgement deadline passed", code=codes.ACK_TIMED_OUT, deadline=row.deadline)
    # Awaiting a response now, though the UPDATE matched nothing a moment ago (delivered since):
    # the same conditional UPDATE decides.
    won = _respond(runtime, row.id, wanted, actor, metadata, now, approve)
    if won is not None:
        return won
    # Someone else responded (or the sweep ran) between our read and our UPDATE.
    return _settled_response(rows.get(row.id), actor, wanted)


def _check_explicit_approval(row: Notification, wanted: str, approve: bool) -> None:
    """An ACK settles a governance approval only when the approver says so (``approve``); raises
    ``Conflict`` ``approval_not_explicit`` otherwise. A dismiss (deny) needs no flag."""
    if wanted == ACKED and not approve and schemas.approval_request(row.notification) is not None:
        raise Conflict("this notification is an approval: approve it explicitly (approve: true) or dismiss it "
                       "to deny", code=codes.APPROVAL_NOT_EXPLICIT)


def _respond(runtime, notification_id: str, wanted: str, actor: str, metadata: dict, now: float,
             approve: bool = False):
    """The response transition, one transaction: the conditional UPDATE (ack_status PENDING ->
    ``wanted``, guarded through ``rows.update``'s ``states``, and ``deadline > now``) returning
    the row, then, when it matched, the event, the audit row, the ``response_settled`` hooks
    (governance settles its decision there) and the chain stop.
    Returns the updated row, or None when the UPDATE matched nothing (nothing written).
    Raises ``Conflict`` (``ack_not_required``, ``approval_not_explicit``, ``self_approval``; the
    transaction rolls back)."""
    with transaction.atomic():
        row = rows.update(Notification, notification_id,
                          {"actor": actor, "responded_at": now, "response_metadata": metadata},
                          f"{connection.ops.quote_name('deadline')} > %s", [now],
                          states={"ack_status": (ACK_PENDING, wanted)})
        if row is None:
            return None
        if not row.notification.get("require_ack"):  # never PENDING without it; refused if it were
            raise Conflict("this notification does not require acknowledgement", code=codes.ACK_NOT_REQUIRED)
        _check_explicit_approval(row, wanted, approve)
        timeline.insert_events(runtime, [timeline.event(row.id, wanted, {"actor": actor, "metadata": metadata}, now)])
        rows.insert(AckAuditRecord, [audit.ack_audit(
            row.id, old=ACK_PENDING, new=wanted, actor=actor, at=now, metadata=metadata)])
        hooks.response_settled(runtime, row, wanted, actor, now)
        escalation.stop_chain(runtime, row, actor, wanted, now)  # same transaction: no level after this
    return row


def time_out(runtime, limit: int = 500) -> list[str]:
    """Sweep ack_status PENDING rows whose ``deadline <= now`` (epoch seconds, runtime clock) to
    TIMED_OUT (actor ``uns-timeout-worker``, metadata ``{"escalation_required": true}``), at
    most ``limit`` of them, earliest deadline first. Returns the ids this call swept.

    One transition, one transaction: each row is its own conditional UPDATE (ack_status PENDING
    and ``deadline <= now`` in the WHERE clause, so a response or another sweeper that won first
    leaves it alone) with its TIMED_OUT event and ack audit row. A row whose policy names an
    escalation chain (``escalation.auto_escalation_applies``) that has not started yet starts
    it in the same transaction (``escalation_state`` None -> ACTIVE, step 0, ``escalation_due =
    now``: a conditional UPDATE that a manual escalation which started the chain first makes
    match nothing); ``escalation.escalate_due`` fires its levels later, each in its own
    transaction.
    Spec: support reference 1.2 (PENDING -> TIMED_OUT).
    """
    now = runtime.clock()
    metadata = {"escalation_required": True}
    due = list(
        Notification.objects.filter(ack_status=ACK_PENDING, deadline__lte=now)
        .order_by("deadline", "id")
        .only("id", "principal", "notification")[:limit]
    )
    swept = []
    for row in due:
        with transaction.atomic():
            fenced = Notification.objects.filter(id=row.id)
            if transition(fenced, ack_status=(ACK_PENDING, TIMED_OUT), where={"deadline__lte": now},
                          set={"actor": TIMEOUT_ACTOR, "responded_at": now, "response_metadata": metadata}):
                if escalation.auto_escalation_applies(row):
                    # The chain starts here unless a manual escalation already started it (the
                    # row is locked by the UPDATE above: a concurrent escalate waits for us).
                    transition(fenced, escalation_state=(None, ESCALATION_ACTIVE),
                               set={"escalation_due": now, "escalation_step": 0})
                timeline.insert_events(runtime, [timeline.event(
                    row.id, timeline.TIMED_OUT, {"actor": TIMEOUT_ACTOR, "metadata": metadata}, now)])
                rows.insert(AckAuditRecord, [audit.ack_audit(
                    row.id, old=ACK_PENDING, new=TIMED_OUT, actor=TIMEOUT_ACTOR, at=now, metadata=metadata)])
                hooks.response_settled(runtime, row, TIMED_OUT, TIMEOUT_ACTOR, now)
                swept.append(row.id)
    return swept


def expire(runtime, limit: int = 500) -> list[str]:
    """The timeout pass: ``time_out`` (each row TIMED_OUT in its own transaction), then
    ``escalation.escalate_due`` (each due automatic escalation in its own fenced transaction,
    including ones a crash left behind after an earlier pass). Returns the ids swept to
    TIMED_OUT by this pass. ``limit`` bounds each of the two steps.
    """
    swept = time_out(runtime, limit)
    escalation.escalate_due(runtime, limit)
    return swept
