"""``withhold``: settle a notification that is not yet delivered as FAILED (not dead-lettered)
without sending it: its source resolved it first (``early``), or a silence held it until it was
stale (``dispatch.claim``, ADR 0007). One rule for both, so the timeline, the audit and the
dedup group's handoff are the same whichever way a page is withheld.
"""
from django.db.models import F

from core.transitions import FAILED, PENDING, transition

from ..models import Notification, NotificationAuditRecord
from . import audit, dedup_group, timeline

RESOLVED_BEFORE_DELIVERY = "resolved_before_delivery"
SILENCE_ENDED_STALE = "silence_ended_stale"


def withhold(runtime, notification_id: str, reason: str, message: str, now: float, *,
             lease_token: str | None = None, detail: dict | None = None) -> bool:
    """In the caller's transaction: status PENDING -> FAILED (``dead_letter`` false, lease
    cleared, ``outcome.error_message`` = ``message``), fenced by the row's lease: either the
    caller's own ``lease_token`` (a claim that has not attempted: its attempt is given back) or
    no live lease (``lease_until <= now``: nothing in flight). Then DELIVERY_WITHHELD (reason,
    status, dead_letter, outcome, plus ``detail``), a FAILED ``notification_audit_records`` row
    and the dedup group's handoff (``dedup_group.on_failed``: a follower takes the obligation
    over, so a later duplicate is judged on its own). Returns whether the row was withheld (False:
    delivered, claimed or settled meanwhile; nothing written)."""
    row = Notification.objects.filter(id=notification_id).only(
        "id", "notification", "outcome", "dedup_key", "dedup_generation").first()
    if row is None:
        return False
    outcome = {**(row.outcome or {}), "error_message": message}
    fence = {"lease_token": lease_token} if lease_token is not None else {"lease_until__lte": now}
    changes = {"dead_letter": False, "lease_token": None, "lease_until": 0.0, "outcome": outcome}
    if lease_token is not None:
        changes.update(attempts=F("attempts") - 1, cycle_attempts=F("cycle_attempts") - 1)
    if not transition(Notification.objects.filter(id=notification_id), status=(PENDING, FAILED),
                      where=fence, set=changes):
        return False
    events = [timeline.event(notification_id, timeline.DELIVERY_WITHHELD, {
        "reason": reason, "status": FAILED, "dead_letter": False, "outcome": outcome, **(detail or {})}, now)]
    if row.dedup_key:
        events.extend(dedup_group.on_failed(row, now))
    timeline.insert_events(runtime, events)
    NotificationAuditRecord.objects.bulk_create([audit.delivery_audit(row, status=FAILED, outcome=outcome, at=now)])
    return True
