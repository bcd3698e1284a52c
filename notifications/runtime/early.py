"""A response that comes before the delivery is not lost: ``remember`` keeps an acknowledge or a
resolve (dismiss) that reached a notification not yet delivered (the PagerDuty and Alertmanager
intakes: a flapping alert resolves before its page went out), and ``honour`` settles it.

A resolve withholds the page at once when nothing is in flight (``withhold``: FAILED, not
dead-lettered, DELIVERY_WITHHELD; no escalation can follow, as nothing awaits a response). An
acknowledge (or a resolve that found the page in flight) waits in ``uns_early_responses`` until
the delivery, and ``honour`` (every timeout pass) then settles the acknowledgement through
``responses.acknowledge``: ACKED or DISMISSED by the original actor, stopping any chain.
"""
from django.db import transaction

from core import codes
from core.actors import check_actor
from core.errors import Conflict
from core.transitions import ACK_PENDING, ACKED, DISMISSED, PENDING

from ..models import EarlyResponse, Notification
from . import responses, rows, timeline
from .withhold import RESOLVED_BEFORE_DELIVERY, withhold


def remember(runtime, notification_id: str, actor: str, *, dismiss: bool, metadata: dict | None = None) -> dict:
    """Remember ``actor``'s acknowledge (``dismiss`` false) or resolve (true) of a notification
    that requires a response and is not delivered yet (status PENDING, no ack state). One
    transaction: the ``uns_early_responses`` row (a resolve replaces an earlier acknowledge; a
    repeat changes nothing) and RESPONSE_BEFORE_DELIVERY; for a resolve, the page is withheld in
    the same transaction when no worker holds a live lease on it.

    Returns ``{"notification_id", "response": "ACKED" | "DISMISSED", "withheld": bool}``.
    Raises ``NotFound``; ``Conflict`` ``ack_not_required`` or ``not_awaiting_ack`` (already
    delivered, failed or deduplicated: answer it with ``acknowledge`` instead)."""
    check_actor(actor)
    metadata = dict(metadata or {})
    wanted = DISMISSED if dismiss else ACKED
    row = rows.get(notification_id)
    if not row.notification.get("require_ack"):
        raise Conflict("this notification does not require acknowledgement", code=codes.ACK_NOT_REQUIRED)
    if row.status != PENDING or row.ack_status is not None:
        raise Conflict("this notification is not waiting for its delivery", code=codes.NOT_AWAITING_ACK,
                       status=row.status, ack_status=row.ack_status)
    now = runtime.clock()
    with transaction.atomic():
        existing = EarlyResponse.objects.select_for_update().filter(notification_id=row.id).first()
        if existing is None or (existing.response == ACKED and wanted == DISMISSED):
            EarlyResponse.objects.update_or_create(notification_id=row.id, defaults={
                "response": wanted, "actor": actor, "at": now, "metadata": metadata, "honoured_at": None})
            timeline.insert_events(runtime, [timeline.event(row.id, timeline.RESPONSE_BEFORE_DELIVERY, {
                "response": wanted, "actor": actor, "metadata": metadata}, now)])
        else:
            wanted = existing.response
        withheld = wanted == DISMISSED and _withhold_resolved(runtime, row.id, actor, now)
    return {"notification_id": row.id, "response": wanted, "withheld": withheld}


def _withhold_resolved(runtime, notification_id: str, actor: str, now: float) -> bool:
    done = withhold(runtime, notification_id, RESOLVED_BEFORE_DELIVERY,
                    f"resolved by its source ({actor}) before it was delivered: not sent", now,
                    detail={"actor": actor})
    if done:
        EarlyResponse.objects.filter(notification_id=notification_id).update(honoured_at=now)
    return done


def honour(runtime, limit: int = 100) -> list[str]:
    """Settle the remembered responses whose notification moved on (one query when none waits):
    delivered and awaiting a response: ``responses.acknowledge`` by the remembered actor (ACKED /
    DISMISSED, the chain stopped), metadata ``{"before_delivery": true, "responded_at": t}``; a
    resolve whose page is no longer in flight: withheld; settled, failed, deduplicated or gone:
    nothing left to do. Each is marked honoured; one still waiting for its delivery is left.
    Returns the notification ids honoured by this call."""
    now = runtime.clock()
    waiting = list(EarlyResponse.objects.filter(honoured_at__isnull=True).order_by("at")[:limit])
    done = []
    for early in waiting:
        row = Notification.objects.filter(id=early.notification_id).only("id", "status", "ack_status").first()
        if row is not None and row.ack_status == ACK_PENDING:
            try:
                responses.acknowledge(runtime, row.id, early.actor, dismiss=early.response == DISMISSED, metadata={
                    **early.metadata, "before_delivery": True, "responded_at": early.at})
            except Conflict:
                pass  # someone else answered first: theirs stands
        elif row is not None and row.status == PENDING and row.ack_status is None:
            if early.response != DISMISSED:
                continue  # an acknowledge waits for the delivery
            with transaction.atomic():
                if not _withhold_resolved(runtime, row.id, early.actor, now):
                    continue  # in flight: settled once its attempt ends
            done.append(row.id)
            continue
        EarlyResponse.objects.filter(notification_id=early.notification_id, honoured_at__isnull=True).update(
            honoured_at=now)
        done.append(early.notification_id)
    return done
