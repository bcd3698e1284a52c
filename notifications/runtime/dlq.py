"""Dead-letter operations: ``replay`` and ``resolve_failure`` (reference 1.1, FAILED_DLQ exits)."""
from django.db import transaction

from core import codes
from core.actors import check_actor
from core.errors import Conflict, LineageUnknown, ReplayBlocked
from core.transitions import DEDUPLICATED, DELIVERED, FAILED, PENDING, RESOLVE, transition

from .. import people_audit
from ..models import Dedup, Event, Notification
from . import counts, dedup, rows, timeline

BLOCKING_SUCCESSOR_STATUSES = (PENDING, DELIVERED, DEDUPLICATED)
# Links of a ``dedup_successor_id`` chain followed before lineage counts as unknown. Each handoff
# needs a FAILED leader with a pending follower, so real chains are short; the bound keeps the
# DLQ listing at a fixed number of queries whatever the data says.
MAX_LINEAGE_LINKS = 32


def _blocker(code: str, successor_id: str, status: str | None) -> dict:
    return {"code": code, "successor_id": successor_id, "successor_status": status}


def replay_blockers(rows: list[Notification], now: float) -> dict[str, dict]:
    """``{id: blocker}`` for the rows whose replay would conflict; the one definition of the
    replay-blocker rule (``replay`` and ``GET /api/v1/dlq`` both call it).

    ``now``: epoch seconds. A blocker is ``{"code", "successor_id", "successor_status"}``:

    1. Lineage: the ``dedup_successor_id`` chain is followed link by link (cycle-safe, at most
       ``MAX_LINEAGE_LINKS``) through FAILED successors. The first PENDING, DELIVERED or
       DEDUPLICATED successor carries the obligation: ``replay_blocked``. A link naming a row
       that is gone, or a chain longer than the bound: ``replay_lineage_unknown`` (its
       ``successor_id`` is the missing or last followed link). A chain that ends in FAILED rows
       (or loops back on itself) does not block.
    2. Window: another live owner of the row's dedup window (``dedup.decide``: PENDING, or
       DELIVERED inside its window) blocks: ``replay_blocked``. ``replay`` repeats this under
       the window lock.

    Queries: one for the windows, then one per chain level for all rows at once (the first also
    reads the window owners), so at most ``2 + MAX_LINEAGE_LINKS`` for any number of rows and
    3 when no chain is longer than two links. Spec: architecture, dedup paragraph.
    """
    dedup_keys = {r.dedup_key for r in rows if r.dedup_key}
    windows = {w.key: w for w in Dedup.objects.filter(key__in=dedup_keys)} if dedup_keys else {}
    known: dict[str, tuple[str, str | None]] = {}  # id -> (status, dedup_successor_id)
    # Per row: the link to look up next and the ids already walked (cycle safety).
    walks = {r.id: (r.dedup_successor_id, {r.id}) for r in rows if r.dedup_successor_id}
    wanted = {nid for nid, _ in walks.values()} | {w.owner_id for w in windows.values() if w.owner_id}
    blockers: dict[str, dict] = {}
    for _level in range(MAX_LINEAGE_LINKS):
        wanted -= known.keys()
        if wanted:
            for nid, status, successor in Notification.objects.filter(id__in=wanted).values_list(
                    "id", "status", "dedup_successor_id"):
                known[nid] = (status, successor)
        missing, wanted = wanted - known.keys(), set()
        for rid, (link, seen) in list(walks.items()):
            if link in missing or link not in known:
                blockers[rid] = _blocker(LineageUnknown.code, link, None)
                del walks[rid]
                continue
            status, successor = known[link]
            if status in BLOCKING_SUCCESSOR_STATUSES:
                blockers[rid] = _blocker(ReplayBlocked.code, link, status)
                del walks[rid]
            elif not successor or successor in seen:
                del walks[rid]  # the lineage ends in failures: nothing carries the obligation
            else:
                seen.add(link)
                walks[rid] = (successor, seen)
                wanted.add(successor)
        if not walks:
            break
    for rid, (link, _seen) in walks.items():  # still walking after the bound
        blockers[rid] = _blocker(LineageUnknown.code, link, None)
    for r in rows:
        window = windows.get(r.dedup_key)
        if r.id in blockers or window is None or not window.owner_id or window.owner_id == r.id:
            continue
        decision = window_decision(window, known.get(window.owner_id, (None,))[0], now)
        if decision.live_owner:
            blockers[r.id] = _blocker(ReplayBlocked.code, decision.owner_id, decision.owner_status)
    return blockers


def window_decision(window: Dedup, owner_status: str | None, now: float) -> dedup.DedupDecision:
    """``dedup.decide`` for a ``uns_dedup`` row whose owner has ``owner_status``."""
    return dedup.decide(owner_id=window.owner_id, owner_status=owner_status, generation=window.generation,
                        until=window.until, now=now)


def replay_blocker(row: Notification, now: float) -> dict | None:
    """Why replaying ``row`` would duplicate or lose lineage (see ``replay_blockers``), or None."""
    return replay_blockers([row], now).get(row.id)


def replay(runtime, notification_id: str, actor: str, *, bulk_action_id: str | None = None) -> Notification:
    """Start a new delivery cycle for a dead-lettered notification.

    FAILED + dead_letter -> PENDING with ``cycle + 1``, ``cycle_attempts = 0`` and cumulative
    ``attempts`` kept; REPLAY_REQUESTED (actor, cycle, cumulative_attempts). A replayed
    notification with a dedup key becomes its window's owner again, so new duplicates follow it.
    ``bulk_action_id``: the bulk action (``runtime.bulk``) this replay is part of, recorded in
    the event's payload (absent otherwise).

    Raises ``NotFound``; ``Conflict`` ``not_dead_lettered`` (not FAILED with dead_letter),
    ``ReplayBlocked`` ``replay_blocked`` (a successor anywhere in its lineage pending or
    satisfied, or a live owner in its window) or ``LineageUnknown`` ``replay_lineage_unknown`` (a
    link of the lineage missing; see ``replay_blockers``); ``InvalidRequest`` ``actor_required``.
    """
    check_actor(actor)
    row = rows.get(notification_id)
    if not (row.status == FAILED and row.dead_letter):
        raise Conflict("only dead-lettered notifications can be replayed", code=codes.NOT_DEAD_LETTERED,
                       status=row.status, dead_letter=row.dead_letter)
    now = runtime.clock()
    blocker = replay_blocker(row, now)
    if blocker:
        error = LineageUnknown if blocker["code"] == LineageUnknown.code else ReplayBlocked
        detail = (f"replay is blocked: successor {blocker['successor_id']} carries this obligation "
                  f"({blocker['successor_status']})") if error is ReplayBlocked else (
                  f"replay lineage cannot be established: successor {blocker['successor_id']} is missing "
                  f"or the chain is longer than {MAX_LINEAGE_LINKS} links")
        raise error(detail, successor_id=blocker["successor_id"], successor_status=blocker["successor_status"])
    with transaction.atomic():
        window_changes = {}
        if row.dedup_key:
            Dedup.objects.bulk_create([Dedup(key=row.dedup_key, until=0.0, owner_id=None, generation=0)],
                                      ignore_conflicts=True)
            window = Dedup.objects.select_for_update().get(key=row.dedup_key)
            if window.owner_id == row.id:
                generation = window.generation  # still the owner: the same generation
            else:
                owner_status = Notification.objects.filter(id=window.owner_id).values_list(
                    "status", flat=True).first() if window.owner_id else None
                decision = window_decision(window, owner_status, now)
                if decision.live_owner:
                    raise ReplayBlocked("replay is blocked: another live obligation owns this dedup window",
                                        successor_id=decision.owner_id, successor_status=decision.owner_status)
                generation = decision.generation
            Dedup.objects.filter(key=row.dedup_key).update(owner_id=row.id, generation=generation)
            window_changes["dedup_generation"] = generation
        won = transition(Notification.objects.filter(id=row.id), status=(FAILED, PENDING),
                         where={"dead_letter": True, "cycle": row.cycle},
                         set={"dead_letter": False, "cycle": row.cycle + 1, "cycle_attempts": 0,
                              "next_attempt": now, "lease_until": 0.0, "lease_token": None, **window_changes})
        if not won:
            raise Conflict("the notification changed while replaying; re-read it", code=codes.CONCURRENT_CHANGE)
        timeline.insert_events(runtime, [timeline.event(row.id, timeline.REPLAY_REQUESTED, {
            "actor": actor, "cycle": row.cycle + 1, "cumulative_attempts": row.attempts,
            **({"bulk_action_id": bulk_action_id} if bulk_action_id else {}),
        }, now)])
        people_audit.record(actor, timeline.REPLAY_REQUESTED, row.id, at=now, title=row.notification.get("title"),
                            bulk_action_id=bulk_action_id, detail={"cycle": row.cycle + 1})
    row.refresh_from_db()
    return row


def resolve_failure(runtime, notification_id: str, actor: str, *, bulk_action_id: str | None = None) -> Notification:
    """Take a dead-lettered notification out of the DLQ without replaying: dead_letter=false,
    FAILURE_RESOLVED (actor; ``bulk_action_id`` when part of a bulk action). Repeating it on an
    already-resolved row returns the row.

    Raises ``NotFound``, ``Conflict`` ``not_dead_lettered`` or ``InvalidRequest``
    ``actor_required``.
    """
    check_actor(actor)
    row = rows.get(notification_id)
    if row.status == FAILED and not row.dead_letter and Event.objects.filter(
            notification_id=row.id, kind=timeline.FAILURE_RESOLVED).exists():
        return row
    if not (row.status == FAILED and row.dead_letter):
        raise Conflict("only dead-lettered notifications can be resolved", code=codes.NOT_DEAD_LETTERED,
                       status=row.status, dead_letter=row.dead_letter)
    now = runtime.clock()
    with transaction.atomic():
        won = transition(Notification.objects.filter(id=row.id), status=(FAILED, FAILED), edge=RESOLVE,
                         where={"dead_letter": True}, set={"dead_letter": False})
        if won:
            payload = {"actor": actor, **({"bulk_action_id": bulk_action_id} if bulk_action_id else {})}
            timeline.insert_events(runtime, [timeline.event(row.id, timeline.FAILURE_RESOLVED, payload, now)])
            people_audit.record(actor, timeline.FAILURE_RESOLVED, row.id, at=now,
                                title=row.notification.get("title"), bulk_action_id=bulk_action_id)
    if not won:
        return resolve_failure(runtime, notification_id, actor, bulk_action_id=bulk_action_id)
    row.refresh_from_db()
    return row


def dead_lettered():
    """Queryset of the dead-lettered notifications: status FAILED with ``dead_letter`` true
    (support reference 1.1, FAILED_DLQ; a resolved one has ``dead_letter`` false and leaves the
    DLQ). The one definition of the DLQ: its list (``lists.dead_letter_rows``), its depth and
    the overview's counts are all read from it."""
    return Notification.objects.filter(status=FAILED, dead_letter=True)


def dead_letter_depth() -> int:
    """How many notifications are dead-lettered (the DLQ's depth): on PostgreSQL the maintained
    per-group counts summed (``counts.total``, exact for what has committed), on SQLite a count
    of the partial index ``ix_uns_dlq_accepted``."""
    if counts.maintained():
        return counts.total(counts.DLQ_KINDS["source"])
    return dead_lettered().count()


def failed_split(failed: int, depth: int) -> dict:
    """The FAILED count ``failed`` (``counts.by_state``) split by the DLQ's definition, given its
    ``depth`` (``dead_letter_depth``): ``{"dead_lettered": depth, "not_dead_lettered": the rest}``,
    the rest being resolved dead letters and BEST_EFFORT failures (FAILED with ``dead_letter``
    false). The two counts are read apart, so the rest is clamped at 0. Pure."""
    return {"dead_lettered": depth, "not_dead_lettered": max(0, failed - depth)}


def oldest_dead_letter_failed_at() -> float | None:
    """The earliest ``failed_at`` (epoch seconds) among the dead letters, or None when there are
    none: the first entry of ``ix_uns_dlq_failed``, one index probe whatever the DLQ's depth."""
    return (dead_lettered().filter(failed_at__isnull=False)
            .order_by("failed_at", "id").values_list("failed_at", flat=True).first())
