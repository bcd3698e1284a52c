"""Dead-letter operations: ``replay`` and ``resolve_failure`` (reference 1.1, FAILED_DLQ exits)."""
from django.db import transaction

from ..models import Dedup, Event, Notification
from . import records
from .errors import Conflict, InvalidRequest
from .responses import get
from .transitions import DEDUPLICATED, DELIVERED, FAILED, PENDING, check_status

BLOCKING_SUCCESSOR_STATUSES = (PENDING, DELIVERED, DEDUPLICATED)


def replay_blockers(rows: list[Notification], now: float) -> dict[str, dict]:
    """``{id: blocker}`` for the rows whose replay would conflict, in at most 3 queries for any
    number of rows. The same two checks ``replay`` makes (it repeats the second under the window
    lock): a recorded ``dedup_successor_id`` that is pending or satisfied blocks replay (its
    obligation lives on there), and one whose row is gone means lineage cannot be established;
    then another live owner of the row's dedup window (PENDING, or DELIVERED inside its window).
    A blocker is ``{"code", "successor_id", "successor_status"}``.
    """
    successor_ids = {r.dedup_successor_id for r in rows if r.dedup_successor_id}
    dedup_keys = {r.dedup_key for r in rows if r.dedup_key}
    windows = {w.key: w for w in Dedup.objects.filter(key__in=dedup_keys)} if dedup_keys else {}
    owner_ids = {w.owner_id for w in windows.values() if w.owner_id}
    wanted = successor_ids | owner_ids
    statuses = dict(Notification.objects.filter(id__in=wanted).values_list("id", "status")) if wanted else {}
    blockers = {}
    for r in rows:
        if r.dedup_successor_id:
            status = statuses.get(r.dedup_successor_id)
            if status is None:
                blockers[r.id] = {"code": "replay_lineage_unknown", "successor_id": r.dedup_successor_id,
                                  "successor_status": None}
                continue
            if status in BLOCKING_SUCCESSOR_STATUSES:
                blockers[r.id] = {"code": "replay_blocked", "successor_id": r.dedup_successor_id,
                                  "successor_status": status}
                continue
        window = windows.get(r.dedup_key)
        if window and window.owner_id and window.owner_id != r.id:
            status = statuses.get(window.owner_id)
            if status == PENDING or (status == DELIVERED and now < window.until):
                blockers[r.id] = {"code": "replay_blocked", "successor_id": window.owner_id,
                                  "successor_status": status}
    return blockers


def replay_blocker(row: Notification, now: float) -> dict | None:
    """Why replaying ``row`` would duplicate or lose lineage (see ``replay_blockers``), or None."""
    return replay_blockers([row], now).get(row.id)


def _check_actor(actor) -> None:
    # The operator's identity is the audit trail of a DLQ decision: never record it as empty.
    if not isinstance(actor, str) or not actor:
        raise InvalidRequest("an actor is required", code="actor_required")


def replay(runtime, notification_id: str, actor: str) -> Notification:
    """Start a new delivery cycle for a dead-lettered notification.

    FAILED + dead_letter -> PENDING with ``cycle + 1``, ``cycle_attempts = 0`` and cumulative
    ``attempts`` kept; REPLAY_REQUESTED (actor, cycle, cumulative_attempts). A replayed
    notification with a dedup key becomes its window's owner again, so new duplicates follow it.

    Raises ``NotFound``; ``Conflict`` ``not_dead_lettered`` (not FAILED with dead_letter),
    ``replay_blocked`` (successor pending or satisfied, or a live owner in its window) or
    ``replay_lineage_unknown`` (successor row missing); ``InvalidRequest`` ``actor_required``.
    """
    _check_actor(actor)
    row = get(notification_id)
    if not (row.status == FAILED and row.dead_letter):
        raise Conflict("only dead-lettered notifications can be replayed", code="not_dead_lettered",
                       status=row.status, dead_letter=row.dead_letter)
    now = runtime.clock()
    blocker = replay_blocker(row, now)
    if blocker:
        raise Conflict(f"replay is blocked: successor {blocker['successor_id']} carries this obligation "
                       f"({blocker['successor_status'] or 'missing'})", **blocker)
    check_status(FAILED, PENDING)
    with transaction.atomic():
        window_changes = {}
        if row.dedup_key:
            Dedup.objects.bulk_create([Dedup(key=row.dedup_key, until=0.0, owner_id=None, generation=0)],
                                      ignore_conflicts=True)
            window = Dedup.objects.select_for_update().get(key=row.dedup_key)
            if window.owner_id and window.owner_id != row.id:
                owner = Notification.objects.filter(id=window.owner_id).values("status").first()
                if owner and (owner["status"] == PENDING or (owner["status"] == DELIVERED and now < window.until)):
                    raise Conflict("replay is blocked: another live obligation owns this dedup window",
                                   code="replay_blocked", successor_id=window.owner_id,
                                   successor_status=owner["status"])
            generation = window.generation + (0 if window.owner_id == row.id else 1)
            Dedup.objects.filter(key=row.dedup_key).update(owner_id=row.id, generation=generation)
            window_changes["dedup_generation"] = generation
        won = Notification.objects.filter(id=row.id, status=FAILED, dead_letter=True, cycle=row.cycle).update(
            status=PENDING, dead_letter=False, cycle=row.cycle + 1, cycle_attempts=0, next_attempt=now,
            lease_until=0.0, lease_token=None, **window_changes,
        )
        if not won:
            raise Conflict("the notification changed while replaying; re-read it", code="concurrent_change")
        records.insert_events(runtime, [records.event(row.id, records.REPLAY_REQUESTED, {
            "actor": actor, "cycle": row.cycle + 1, "cumulative_attempts": row.attempts,
        }, now)])
    row.refresh_from_db()
    return row


def resolve_failure(runtime, notification_id: str, actor: str) -> Notification:
    """Take a dead-lettered notification out of the DLQ without replaying: dead_letter=false,
    FAILURE_RESOLVED (actor). Repeating it on an already-resolved row returns the row.

    Raises ``NotFound``, ``Conflict`` ``not_dead_lettered`` or ``InvalidRequest``
    ``actor_required``.
    """
    _check_actor(actor)
    row = get(notification_id)
    if row.status == FAILED and not row.dead_letter and Event.objects.filter(
            notification_id=row.id, kind=records.FAILURE_RESOLVED).exists():
        return row
    if not (row.status == FAILED and row.dead_letter):
        raise Conflict("only dead-lettered notifications can be resolved", code="not_dead_lettered",
                       status=row.status, dead_letter=row.dead_letter)
    now = runtime.clock()
    with transaction.atomic():
        won = Notification.objects.filter(id=row.id, status=FAILED, dead_letter=True).update(dead_letter=False)
        if won:
            records.insert_events(runtime, [records.event(row.id, records.FAILURE_RESOLVED, {"actor": actor}, now)])
    if not won:
        return resolve_failure(runtime, notification_id, actor)
    row.refresh_from_db()
    return row
