"""Settlement of a dedup group when its leader settles (reference 1.1, PENDING_FOLLOWER exits).

Called inside the leader's settle transaction, after the leader's conditional UPDATE, so the
leader row is already locked. The uns_dedup row is locked next: intake locks it before reading
the owner's status, so no follower can slip in behind a leader that has just settled.
"""
from core.transitions import DEDUPLICATED, PENDING, PROMOTE, RELINK, transition

from ..models import Dedup, Event, Notification
from . import timeline


def _lock_window(dedup_key: str | None) -> Dedup | None:
    if not dedup_key:
        return None
    return Dedup.objects.select_for_update().filter(key=dedup_key).first()


def _followers(leader_id: str) -> list[Notification]:
    return list(
        Notification.objects.select_for_update()
        .filter(dedup_owner_id=leader_id, status=PENDING)
        .order_by("next_attempt", "id")
    )


def on_delivered(leader: Notification, now: float) -> list[Event]:
    """Leader DELIVERED: every pending follower becomes DEDUPLICATED (DEDUP_SATISFIED); the
    suppression window runs ``dedup_window_seconds`` from delivery. Returns the events to insert."""
    if not leader.dedup_key:
        return []  # only intake with a dedup key links followers: nothing to settle or lock
    window = _lock_window(leader.dedup_key)
    if window is not None and window.owner_id == leader.id:
        seconds = float(leader.notification["metadata"]["uns_resolution"]["effective"]["dedup_window_seconds"])
        Dedup.objects.filter(key=window.key).update(until=now + seconds)
    events = []
    followers = _followers(leader.id)
    if followers:
        transition(Notification.objects.filter(id__in=[f.id for f in followers]), status=(PENDING, DEDUPLICATED),
                   where={"dedup_owner_id": leader.id})
        for f in followers:
            events.append(timeline.event(f.id, timeline.DEDUP_SATISFIED, {
                "previous_owner_id": leader.id, "owner_id": leader.id, "generation": f.dedup_generation,
            }, now))
    return events


def on_failed(leader: Notification, now: float) -> list[Event]:
    """Leader FAILED (exhausted or permanent): hand the obligation off so it is neither lost nor
    duplicated. The first pending follower is promoted to leader (DEDUP_OWNER_PROMOTED), the rest
    are relinked to it (DEDUP_RELINKED), and the old leader records OBLIGATION_HANDED_OFF with
    ``dedup_successor_id``. When the window already has a newer live owner, the followers are
    relinked to that owner instead. Returns the events to insert."""
    if not leader.dedup_key:
        return []
    window = _lock_window(leader.dedup_key)
    followers = _followers(leader.id)
    if not followers:
        return []
    events = []
    generation = window.generation if window is not None else leader.dedup_generation
    successor = None
    if window is not None and window.owner_id and window.owner_id != leader.id:
        successor = Notification.objects.filter(id=window.owner_id, status=PENDING, dedup_owner_id=None).first()
    rest = followers
    if successor is None:
        successor, rest = followers[0], followers[1:]
        transition(Notification.objects.filter(id=successor.id), status=(PENDING, PENDING), edge=PROMOTE,
                   where={"dedup_owner_id": leader.id},
                   set={"dedup_owner_id": None, "dedup_generation": generation, "next_attempt": now})
        if window is not None:
            # Promotion retains the suppression window (``until`` is left as it is).
            Dedup.objects.filter(key=window.key).update(owner_id=successor.id)
        events.append(timeline.event(successor.id, timeline.DEDUP_OWNER_PROMOTED, {
            "previous_owner_id": leader.id, "owner_id": successor.id, "generation": generation,
        }, now))
    if rest:
        transition(Notification.objects.filter(id__in=[f.id for f in rest]), status=(PENDING, PENDING), edge=RELINK,
                   where={"dedup_owner_id": leader.id},
                   set={"dedup_owner_id": successor.id, "dedup_generation": generation})
        for f in rest:
            events.append(timeline.event(f.id, timeline.DEDUP_RELINKED, {
                "previous_owner_id": leader.id, "owner_id": successor.id, "generation": generation,
            }, now))
    Notification.objects.filter(id=leader.id).update(dedup_successor_id=successor.id)
    events.append(timeline.event(leader.id, timeline.OBLIGATION_HANDED_OFF, {
        "successor_id": successor.id, "generation": generation,
    }, now))
    return events
