"""``snooze``: postpone the acknowledgement deadline of a notification awaiting a response
(a modelled ack self-edge, PENDING -> PENDING, named ``snooze`` in ``core.transitions``)."""
from django.db import transaction

from core import codes
from core.actors import check_actor
from core.errors import Conflict
from core.schema import parse
from core.transitions import ACK_PENDING, SNOOZE, transition

from .. import people_audit
from ..models import AckAuditRecord, Notification
from . import audit, rows, schemas, timeline
from .requests import check_request_id, earlier, not_awaiting


def snooze(runtime, notification_id: str, actor: str, seconds, *, metadata=None,
           request_id: str | None = None, bulk_action_id: str | None = None) -> Notification:
    """Postpone the acknowledgement deadline of a notification awaiting a response.

    Allowed while ack_status is PENDING and ``deadline > now``; sets ``deadline = now +
    seconds`` (60..86400; the new deadline may be earlier than the old one: snoozing means "ask
    me again in N seconds"). One transaction: the row locked, a conditional UPDATE naming
    ack_status PENDING and the deadline that was read, a SNOOZED event (actor, previous_deadline, deadline, seconds,
    metadata, request_id) and an ``ack_audit_records`` row (PENDING -> PENDING, ``ack_metadata``
    describing the snooze). ack_status stays PENDING.

    ``bulk_action_id``: the bulk action this snooze is part of (``runtime.bulk``), for its
    people-audit row. ``request_id`` makes retries idempotent: a repeat by the same actor with the same id returns
    the row without snoozing again.

    Raises ``NotFound``; ``InvalidRequest`` (seconds out of range, metadata not an object);
    ``Conflict`` ``ack_not_required``, ``not_awaiting_ack``, ``ack_timed_out`` (TIMED_OUT or the
    deadline passed), ``ack_conflict`` (already ACKED or DISMISSED) or ``approval_not_snoozable``
    (a governance approval: its deadline is the policy's approval timeout).
    """
    parsed = parse(schemas.SnoozeRequest, {"seconds": seconds, "metadata": metadata})
    seconds, metadata = float(parsed.seconds), parsed.metadata or {}
    check_actor(actor)
    check_request_id(request_id)
    while True:
        row = rows.get(notification_id)
        if earlier(row.id, timeline.SNOOZED, actor, request_id) is not None:
            return row
        if row.ack_status != ACK_PENDING or not row.notification.get("require_ack"):
            raise not_awaiting(row, "snoozed")
        if schemas.approval_request(row.notification) is not None:
            # Its deadline is the approval timeout the policy set: no one may stretch it.
            raise Conflict("a governance approval is decided (Approve or Deny) before its timeout, not snoozed",
                           code=codes.APPROVAL_NOT_SNOOZABLE)
        now = runtime.clock()
        if row.deadline is None or row.deadline <= now:
            raise Conflict("the acknowledgement deadline passed", code=codes.ACK_TIMED_OUT, deadline=row.deadline)
        deadline = now + seconds
        with transaction.atomic():
            # Lock the row first: two snoozes that compute the same new deadline would both match
            # a fence on the deadline alone (A-B-A), so the request-id check must run under the
            # lock too. (SQLite's IMMEDIATE transactions serialise writers the same way.)
            Notification.objects.select_for_update().filter(id=row.id).values_list("id").first()
            won = 0
            if earlier(row.id, timeline.SNOOZED, actor, request_id) is None:
                won = transition(Notification.objects.filter(id=row.id), ack_status=(ACK_PENDING, ACK_PENDING),
                                 edge=SNOOZE, where={"deadline": row.deadline, "deadline__gt": now},
                                 set={"deadline": deadline})
            if won:
                snoozed = {"actor": actor, "previous_deadline": row.deadline, "deadline": deadline,
                           "seconds": seconds, "metadata": metadata, "request_id": request_id}
                timeline.insert_events(runtime, [timeline.event(row.id, timeline.SNOOZED, snoozed, now)])
                AckAuditRecord.objects.bulk_create([audit.ack_audit(
                    row.id, old=ACK_PENDING, new=ACK_PENDING, actor=actor, at=now,
                    metadata={"action": "snooze", **{k: v for k, v in snoozed.items() if k != "actor"}})])
                people_audit.record(actor, timeline.SNOOZED, row.id, at=now, title=row.notification.get("title"),
                                    bulk_action_id=bulk_action_id,
                                    detail={"seconds": seconds, "deadline": deadline})
        if won:
            row.refresh_from_db()
            return row
        # Someone else changed the row (a response, the sweep, or another snooze, maybe a retry
        # of this one) between our read and our UPDATE: re-read, and answer from the new state.
