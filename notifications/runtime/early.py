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
from core.transitions import ACK_PENDING, ACKED, DISMISSED, PENDING  # noqa: F401  (ACKED: the docstrings' response)

from ..models import EarlyResponse, Notification
from . import responses, rows, timeline
from .withhold import RESOLVED_BEFORE_DELIVERY, withhold


def remember(runtime, notification_id: str, actor: str, *, dismiss: bool, resolved: bool,
             metadata: dict | None = None) -> dict:
    """Remember ``actor``'s response to a notification that requires one and is not delivered
    yet (status PENDING, no ack state): ``dismiss`` is what it settles to once delivered
    (DISMISSED, else ACKED), ``resolved`` whether its source resolved it (PagerDuty ``resolve``,
    an Alertmanager resolved alert: then no page goes out while it is unsent). One transaction:
    the ``uns_early_responses`` row (a resolve replaces an earlier acknowledge; a repeat changes
    nothing) and RESPONSE_BEFORE_DELIVERY (response, resolved, actor, metadata); for a resolve,
    the page is withheld in the same transaction when no worker holds a live lease on it.

    A resolve also resolves the row's pending dedup followers first (the same alert), so the
    leader's handoff promotes nobody.

    Returns ``{"notification_id", "response": "ACKED" | "DISMISSED", "resolved", "withheld",
    "followers_withheld": [ids]}``.
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
    followers = []
    with transaction.atomic():
        if resolved:
            # Its pending followers are the same alert (same principal, source and dedup key):
            # resolved with it, first, so withholding the leader hands the obligation to nobody
            # (a promoted follower would be due at once, racing the resolve of its own row).
            for follower in (Notification.objects.filter(dedup_owner_id=row.id, status=PENDING)
                             .order_by("id").values_list("id", flat=True)):
                _record(runtime, follower, wanted, resolved, actor, metadata, now)
                if _withhold_resolved(runtime, follower, actor, now):
                    followers.append(follower)
        wanted, resolved = _record(runtime, row.id, wanted, resolved, actor, metadata, now)
        withheld = resolved and _withhold_resolved(runtime, row.id, actor, now)
    return {"notification_id": row.id, "response": wanted, "resolved": resolved, "withheld": withheld,
            "followers_withheld": followers}


def _record(runtime, notification_id: str, wanted: str, resolved: bool, actor: str, metadata: dict,
            now: float) -> tuple[str, bool]:
    """Keep the response (caller's transaction): a new one, or a resolve over an earlier
    acknowledge, writes the row and RESPONSE_BEFORE_DELIVERY; a repeat changes nothing. Returns
    the response and resolved flag now remembered."""
    existing = EarlyResponse.objects.select_for_update().filter(notification_id=notification_id).first()
    if existing is not None and not (resolved and not existing.resolved):
        return existing.response, existing.resolved
    EarlyResponse.objects.update_or_create(notification_id=notification_id, defaults={
        "response": wanted, "resolved": resolved, "actor": actor, "at": now, "metadata": metadata,
        "honoured_at": None})
    timeline.insert_events(runtime, [timeline.event(notification_id, timeline.RESPONSE_BEFORE_DELIVERY, {
        "response": wanted, "resolved": resolved, "actor": actor, "metadata": metadata}, now)])
    return wanted, resolved


def _withhold_resolved(runtime, notification_id: str, actor: str, now: float) -> bool:
    done = withhold(runtime, notification_id, RESOLVED_BEFORE_DELIVERY,
                    f"resolved by its source ({actor}) before it was delivered: not sent", now,
                    detail={"actor": actor})
    if done:
        EarlyResponse.objects.filter(notification_id=notification_id).update(honoured_at=now)
    return done


def resolved_unsent(notification_ids: list[str]) -> dict[str, str]:
    """Of ``notification_ids`` (rows a dispatch pass just claimed), those whose source resolved
    them while a page was in flight and not honoured yet: ``{id: actor}``. One query (a primary
    key lookup) per claim batch; dispatch withholds these instead of sending them again."""
    if not notification_ids:
        return {}
    return dict(EarlyResponse.objects.filter(notification_id__in=notification_ids, resolved=True,
                                             honoured_at__isnull=True).values_list("notification_id", "actor"))


def mark_honoured(notification_id: str, now: float) -> None:
    """Record that the remembered response of ``notification_id`` was honoured (caller's transaction)."""
    EarlyResponse.objects.filter(notification_id=notification_id, honoured_at__isnull=True).update(honoured_at=now)


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
            if not early.resolved:
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
