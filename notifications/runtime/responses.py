"""Acknowledgement lifecycle (reference 1.2): ``acknowledge`` and ``expire``."""
from django.db import connection, transaction


from core import codes, hooks
from core.actors import check_actor
from core.errors import Conflict, InvalidRequest
from core.keys import is_notification_id
from core.schema import parse
from core.transitions import (ACK_PENDING, ACK_TERMINAL, ACKED, DISMISSED, ESCALATION_ACTIVE, HOLD, TIMED_OUT,
                              transition)

from .. import people_audit
from ..models import AckAuditRecord, Notification
from . import audit, escalation, group_commit, rows, schemas, silences, timeline
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
                approve: bool = False, bulk_action_id: str | None = None) -> Notification:
    """ACK (or dismiss) a delivered notification awaiting response, before its deadline.

    Conditional UPDATE from ack_status PENDING with ``deadline > now``, plus the ACKED/DISMISSED
    event (always a callback outbox row, ``callbacks``) and an ``ack_audit_records`` row,
    and, in the same transaction, ``escalation.stop_chain``: the response stops the escalation
    chain of this notification and, for an escalation, of its original, and closes the chain's
    other escalation notifications still awaiting a response (they take this response, by this
    actor, with ``{"escalation_closed": "ESCALATION_STOPPED", ...}`` as metadata).
    The same actor repeating the same response gets the stored row back (idempotent).
    Statements: a won response is the UPDATE ... RETURNING and its INSERTs in one transaction,
    nothing read before or after; the row is read only when the UPDATE matched nothing, which it
    always does for an escalation notification (its originals are locked before it is written).

    ``bulk_action_id``: the bulk action this response is part of (``runtime.bulk``), for its
    people-audit row.

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
        return _acknowledge(runtime, notification_id, actor, wanted, metadata, approve, bulk_action_id)
    # Responders answering together share one transaction and one COMMIT (``group_commit``);
    # a response to a notification another request of the batch answered sees that answer.
    return _ACKS.run(lambda: _acknowledge(runtime, notification_id, actor, wanted, metadata, approve, bulk_action_id),
                     lambda: _acknowledge(runtime, notification_id, actor, wanted, metadata, approve, bulk_action_id))


def _acknowledge(runtime, notification_id: str, actor: str, wanted: str, metadata: dict, approve: bool,
                 bulk_action_id: str | None = None):
    """``acknowledge`` once the request is checked: the conditional UPDATE first, the row read
    only when it matched nothing. Its own transactions, or a group-commit batch's savepoint."""
    now = runtime.clock()
    # The common case first: the conditional UPDATE alone decides a response to a row awaiting
    # one, and returns the row it wrote (no read before, none after). Only when it matches
    # nothing is the row read, to say why (or to answer a repeat).
    if is_notification_id(notification_id):
        won = _respond(runtime, notification_id, wanted, actor, metadata, now, approve, bulk_action_id)
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
    # Awaiting a response now, though the UPDATE matched nothing a moment ago (delivered since,
    # or an escalation, which the first UPDATE leaves alone): the same conditional UPDATE decides.
    won = _respond(runtime, row.id, wanted, actor, metadata, now, approve, bulk_action_id, read=row)
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
             approve: bool = False, bulk_action_id: str | None = None, read: Notification | None = None):
    """The response transition, one transaction: the conditional UPDATE (ack_status PENDING ->
    ``wanted``, guarded through ``rows.update``'s ``states``, and ``deadline > now``) returning
    the row, then, when it matched, the event, the audit row, the ``response_settled`` hooks
    (governance settles its decision there) and the chain stop (which closes the chain's other
    escalation notifications).
    ``read``: the row as read before, or None for the first try, whose UPDATE leaves an
    escalation notification alone: its originals must be locked before it
    (``escalation.lock_ancestors``, which needs the row read), so that two responses on two
    levels of one chain queue on the original rather than deadlock on each other's copy.
    Returns the updated row, or None when the UPDATE matched nothing (nothing written).
    Raises ``Conflict`` (``ack_not_required``, ``approval_not_explicit``, ``self_approval``; the
    transaction rolls back)."""
    q = connection.ops.quote_name
    with transaction.atomic():
        if read is None:
            where, params = f"{q('deadline')} > %s AND {q('principal')} <> %s", [now, escalation.ESCALATION_PRINCIPAL]
        else:
            where, params = f"{q('deadline')} > %s", [now]
            if escalation.is_escalation(read):
                escalation.lock_ancestors(read)
        row = rows.update(Notification, notification_id,
                          {"actor": actor, "responded_at": now, "response_metadata": metadata},
                          where, params, states={"ack_status": (ACK_PENDING, wanted)})
        if row is None:
            return None
        if not row.notification.get("require_ack"):  # never PENDING without it; refused if it were
            raise Conflict("this notification does not require acknowledgement", code=codes.ACK_NOT_REQUIRED)
        _check_explicit_approval(row, wanted, approve)
        timeline.insert_events(runtime, [timeline.event(row.id, wanted, {"actor": actor, "metadata": metadata}, now)])
        rows.insert(AckAuditRecord, [audit.ack_audit(
            row.id, old=ACK_PENDING, new=wanted, actor=actor, at=now, metadata=metadata)])
        _record_response(row, wanted, actor, now, bulk_action_id)
        hooks.response_settled(runtime, row, wanted, actor, now)
        escalation.stop_chain(runtime, row, actor, wanted, now)  # same transaction: no level after this
    return row


def _record_response(row: Notification, wanted: str, actor: str, now: float, bulk_action_id: str | None) -> None:
    """The people-audit row of a won response: APPROVED / DENIED of the governance decision for an
    approval notification (``schemas.approval_request``), else ACKED / DISMISSED of the
    notification (with the bulk action it was part of: ``runtime.bulk`` says so, never the
    responder's own ``metadata``)."""
    approval = schemas.approval_request(row.notification)
    if approval is not None:
        title = " on ".join(str(approval[k]) for k in ("action", "resource") if approval.get(k))
        people_audit.record(actor, "APPROVED" if wanted == ACKED else "DENIED", approval["decision_id"], at=now,
                            title=title, detail={"notification_id": row.id, "risk": approval.get("risk")})
        return
    people_audit.record(actor, wanted, row.id, at=now, title=row.notification.get("title"),
                        bulk_action_id=bulk_action_id)


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
        .only("id", "principal", "notification", "deadline", "delivered_at")[:limit]
    )
    window = silences.Window.read(now) if due else None
    swept = []
    for row in due:
        if _pause_deadline(runtime, row, window, now):
            continue
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


def _pause_deadline(runtime, row: Notification, window, now: float) -> bool:
    """A silence holding ``row`` at ``now`` pauses its ACK deadline instead of timing it out: one
    transaction moves the deadline (the HOLD self-edge, fenced on ``deadline <= now``) to the
    silence's end plus the time it had left when the silence began (or was delivered, if later),
    records the hold (its ``remaining``) and, the first time, SILENCED (scope ``deadline``), with an
    ack audit row (PENDING -> PENDING, actor the silence's creator, metadata action ``silence``). A
    deadline that passed before the silence began is not paused. Returns whether it paused."""
    silence = silences.silencing(row.notification, now, window) if window is not None and window.active else None
    if silence is None:
        return False
    remaining = silences.paused_remaining(silence, row)
    if remaining <= 0:
        return False
    deadline = silence.ends_at + remaining
    with transaction.atomic():
        if transition(Notification.objects.filter(id=row.id), ack_status=(ACK_PENDING, ACK_PENDING), edge=HOLD,
                      where={"deadline__lte": now}, set={"deadline": deadline}):
            silences.hold(runtime, silence, row.id, silences.DEADLINE, now, remaining=remaining,
                          payload={"deadline_before": row.deadline, "deadline_after": deadline})
            rows.insert(AckAuditRecord, [audit.ack_audit(
                row.id, old=ACK_PENDING, new=ACK_PENDING, actor=silence.created_by, at=now,
                metadata={"action": "silence", "silence_id": silence.id, "previous_deadline": row.deadline,
                          "deadline": deadline})])
    return True


def expire(runtime, limit: int = 500) -> list[str]:
    """The timeout pass: ``time_out`` (each row TIMED_OUT in its own transaction), then
    ``escalation.escalate_due`` (each due automatic escalation in its own fenced transaction,
    including ones a crash left behind after an earlier pass). Returns the ids swept to
    TIMED_OUT by this pass. ``limit`` bounds each of the two steps.
    """
    swept = time_out(runtime, limit)
    escalation.escalate_due(runtime, limit)
    return swept
