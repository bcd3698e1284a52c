"""Escalation chains: ``escalate`` (a responder jumps to the next level), the
automatic chain that ``expire()`` starts for a notification that timed out
(``escalate_due``), and ``stop_chain``, through which a response stops it. Snooze is in
``snooze.py``; the chain's levels are the frozen policy's ``escalation`` (``policies.escalation``).

Each fired level is a new notification accepted through ``intake.accept`` (principal
``uns-escalation``, channels the level's), so it is delivered, retried and dead-lettered like
any other; the original records ESCALATED with the new id and the level, in the same
transaction. The chain's state lives on the original's row, never in memory:
``escalation_state`` (null, ACTIVE, RESPONDED, EXHAUSTED), ``escalation_step`` (steps fired:
level repetitions in order) and ``escalation_due`` (when the next step is due, indexed). Every
write to them is a conditional UPDATE on the state, so a response committed first makes the next
level's UPDATE match nothing, and a worker down across a deadline fires the level once when it
comes back. The edges are ``core.transitions.ESCALATION_STATE``'s; every write goes through
``transition``.

Timeline events on the original: ESCALATED (a level fired), ESCALATION_FAILED (a level could not
be sent; the chain moves on to the next level at once), ESCALATION_STOPPED (an ACK or DISMISS on
the original or on any of its escalations stopped the chain) and ESCALATION_EXHAUSTED (the last
level's last wait passed with no response: the chain's end).

A chain that stops or ends closes its escalation notifications still awaiting a response, in the
same transaction (``close_copies``): each takes the chain's outcome as its own acknowledgement
(ACKED or DISMISSED by the responder who stopped it, TIMED_OUT by ``uns-timeout-worker`` when it
ran out), with ``{"escalation_closed": <the original's event kind>, ...}`` as its metadata, so
the reason is on its timeline and it leaves the inbox (docs/explanation/escalation.md).
"""
from __future__ import annotations  # ``chains.Level`` in signatures: policies.escalation may still be loading
import logging
from dataclasses import dataclass

from django.db import transaction

from core import codes
from core.actors import check_actor
from core.errors import Conflict, UNSError, database_unreachable
from core.schema import parse
from core import hooks
from core.transitions import (ACK_PENDING, ACKED, ADVANCE, DISMISSED, ESCALATE, ESCALATION_ACTIVE, ESCALATION_EXHAUSTED,
                              ESCALATION_RESPONDED, HOLD, TIMED_OUT, transition)
from policies import escalation as chains

from .. import people_audit
from ..logformat import log_ids
from ..models import AckAuditRecord, Event, Notification
from . import audit, intake, rows, schemas, silences, timeline
from .requests import TIMEOUT_ACTOR, check_request_id, earlier, not_awaiting

log = logging.getLogger("uns.escalation")

ESCALATION_PRINCIPAL = "uns-escalation"
ESCALATION_TITLE_PREFIX = "ESCALATED: "
AUTO_ESCALATION_REASON = "acknowledgement deadline passed"
ESCALATABLE = (ACK_PENDING, TIMED_OUT)
# escalation_state values (null: the chain has not started); their table is
# ``core.transitions.ESCALATION_STATE``.
ACTIVE = ESCALATION_ACTIVE
RESPONDED = ESCALATION_RESPONDED
EXHAUSTED = ESCALATION_EXHAUSTED
# How far up ``escalated_from`` a response looks for chains to stop (an escalation escalated by
# hand is itself the original of a chain), and how far down a stopped chain closes copies.
MAX_ANCESTRY = 8
# ``response_metadata`` (and the ACKED / DISMISSED / TIMED_OUT event's ``metadata``) of an
# escalation notification its chain closed: ``{CLOSED_BY: ESCALATION_STOPPED |
# ESCALATION_EXHAUSTED, "escalated_from": original id, "responded_on": the notification responded
# to (a stop only)}``, as TIMED_OUT carries ``{"escalation_required": true}``.
CLOSED_BY = "escalation_closed"


@dataclass(frozen=True)
class EscalationResult:
    """``notification``: the original row; ``escalation``: the notification sent to the level's
    channels; ``number``: 1 for the first escalation of the original; ``level``: the chain level
    (1-based) it was sent for; ``channels``: that level's channels (``target``: the first);
    ``created``: False for a repeat."""

    notification: Notification
    escalation: Notification
    target: str
    number: int
    created: bool
    level: int = 1
    channels: tuple[str, ...] = ()


def chain(row: Notification) -> list[chains.Level]:
    """The escalation chain frozen in the notification's effective policy (``[]``: none)."""
    effective = row.notification["metadata"]["uns_resolution"]["effective"]
    return chains.levels(effective.get("escalation"))


def active_level(row: Notification, levels: list[chains.Level] | None = None) -> int:
    """The level (1-based) of the last step the chain fired, 0 before any."""
    levels = chain(row) if levels is None else levels
    fired = chains.steps(levels)[:row.escalation_step]
    return fired[-1][0].number if fired else 0


def escalation_request(row: Notification, *, channels, number: int, actor: str, reason: str,
                       level: int = 1) -> dict:
    """The SendNotificationRequest of escalation ``number`` of ``row`` (to ``channels``, for
    chain ``level``)."""
    n = row.notification
    title = (ESCALATION_TITLE_PREFIX + n["title"])[:schemas.MAX_TITLE]
    return {
        "source": n["source"],
        "title": title,
        "body": n.get("body") or "",
        "severity": n.get("severity") or "info",
        "intent": n.get("intent"),
        "agent_id": n.get("agent_id"),
        "autonomy_mode": n.get("autonomy_mode"),
        "channels": list(channels),
        "require_ack": True,
        "idempotency_key": f"escalation:{row.id}:{number}",
        "metadata": {
            "escalated_from": row.id,
            "escalation_number": number,
            "escalation_level": level,
            "escalation_reason": reason,
            "escalated_by": actor,
        },
    }


def _send_level(runtime, row: Notification, level: chains.Level, repetition: int, actor: str, reason: str,
                now: float, request_id: str | None) -> EscalationResult:
    """Accept the escalation for ``level`` and write ESCALATED, inside the caller's transaction,
    which has already fenced ``row`` (its conditional UPDATE or lock holds the row until commit).
    Raises ``Conflict`` ``escalation_target_unavailable`` when intake refuses it."""
    number = Event.objects.filter(notification_id=row.id, kind=timeline.ESCALATED).count() + 1
    request = escalation_request(row, channels=level.channels, number=number, actor=actor, reason=reason,
                                 level=level.number)
    try:
        accepted = intake.accept(runtime, ESCALATION_PRINCIPAL, request)
    except UNSError as exc:
        raise Conflict(f"the escalation to {list(level.channels)!r} was refused: {exc.detail}",
                       code=codes.ESCALATION_TARGET_UNAVAILABLE, target=level.channels[0],
                       channels=list(level.channels), level=level.number, cause=exc.code) from exc
    timeline.insert_events(runtime, [timeline.event(row.id, timeline.ESCALATED, {
        "actor": actor,
        "reason": reason,
        "target": level.channels[0],
        "channels": list(level.channels),
        "level": level.number,
        "repetition": repetition,
        "escalation_id": accepted.notification.id,
        "escalation_number": number,
        "request_id": request_id,
    }, now)])
    return EscalationResult(row, accepted.notification, level.channels[0], number, True, level.number,
                            level.channels)


def _repeat_result(row: Notification, repeat: Event) -> EscalationResult:
    p = repeat.payload
    return EscalationResult(row, Notification.objects.get(id=p["escalation_id"]), p["target"],
                            p["escalation_number"], False, p.get("level", 1), tuple(p.get("channels") or (p["target"],)))


def _lock_escalatable(notification_id: str) -> bool:
    """Lock the row (SELECT ... FOR UPDATE; SQLite's IMMEDIATE transaction already serialises
    writers) if its ack state is PENDING or TIMED_OUT. Inside the caller's transaction."""
    return (Notification.objects.select_for_update().filter(id=notification_id, ack_status__in=ESCALATABLE)
            .values_list("id", flat=True).first()) is not None


def _stopped(row: Notification) -> Conflict:
    return Conflict("a response already stopped this notification's escalation chain",
                    code=codes.ESCALATION_STOPPED, escalation_state=row.escalation_state)


def escalate(runtime, notification_id: str, actor: str, reason: str = "", *,
             request_id: str | None = None) -> EscalationResult:
    """Escalate a notification awaiting a response (ack_status PENDING) or timed out (TIMED_OUT)
    by hand: jump to the next level of the escalation chain frozen in its effective policy (the
    first level before the chain started; the last level again when the chain is at its last
    level or ended).

    One transaction: the row is locked while its ack state allows escalating (escalation is no
    transition of either state machine; the lock numbers concurrent escalations one after the
    other), the escalation is accepted through ``intake.accept`` (principal ``uns-escalation``,
    the level's channels, title prefixed ``ESCALATED: ``, ``require_ack``, metadata
    ``escalated_from`` / ``escalation_number`` / ``escalation_level`` / ``escalation_reason`` /
    ``escalated_by``, idempotency key derived from the original id and escalation number), the
    original gets ESCALATED (actor, reason, target, channels, level, repetition, escalation_id,
    escalation_number, request_id) and its chain goes on from that level: ``escalation_state``
    ACTIVE, the next step due after the level's ``wait_seconds``. ``request_id`` makes retries
    idempotent (same actor and id: the earlier escalation, ``created`` False). Every call without
    one escalates again (number + 1).

    ``reason`` is parsed as ``schemas.EscalateRequest`` (the body HTTP parses; None is ``""``).

    Raises ``NotFound``; ``InvalidRequest`` (reason not a string of at most
    ``schemas.MAX_REASON_LENGTH`` characters; ``parse_error`` for one UNS cannot store); ``Conflict``
    ``no_escalation_target`` (the policy names no chain), ``escalation_stopped`` (a response
    stopped the chain), ``escalation_target_unavailable`` (the level's channels refused the
    escalation: not configured, disabled or not allowed by policy; ``cause`` names why; nothing
    written), ``ack_not_required``, ``not_awaiting_ack`` or ``ack_conflict`` (already
    ACKED/DISMISSED).
    """
    reason = parse(schemas.EscalateRequest, {"reason": reason}).reason or ""
    check_actor(actor)
    check_request_id(request_id)
    row = rows.get(notification_id)
    repeat = earlier(row.id, timeline.ESCALATED, actor, request_id)
    if repeat is not None:
        return _repeat_result(row, repeat)
    if row.ack_status not in ESCALATABLE or not row.notification.get("require_ack"):
        raise not_awaiting(row, "escalated")
    levels = chain(row)
    if not levels:
        raise Conflict("the notification's policy names no escalation target", code=codes.NO_ESCALATION_TARGET)
    if row.escalation_state == RESPONDED:
        raise _stopped(row)
    now = runtime.clock()
    with transaction.atomic():
        fenced = _lock_escalatable(row.id)
        if fenced:
            row.refresh_from_db()
            # Under the fence: a concurrent retry with the same request_id may have just won.
            repeat = earlier(row.id, timeline.ESCALATED, actor, request_id)
            if repeat is not None:
                return _repeat_result(row, repeat)
            if row.escalation_state == RESPONDED:
                raise _stopped(row)
            level = levels[min(active_level(row, levels), len(levels) - 1)]
            result = _send_level(runtime, row, level, 1, actor, reason, now, request_id)
            # The prior state was read under the lock: None, ACTIVE or EXHAUSTED (never RESPONDED).
            transition(Notification.objects.filter(id=row.id), escalation_state=(row.escalation_state, ACTIVE),
                       edge=ESCALATE, set={"escalation_step": chains.first_step_of(levels, level.number) + 1,
                                           "escalation_due": now + level.wait_seconds})
            people_audit.record(actor, timeline.ESCALATED, row.id, at=now, title=row.notification.get("title"),
                                detail={"reason": reason, "level": result.level, "number": result.number,
                                        "escalation_id": result.escalation.id})
    if not fenced:  # settled (ACKED / DISMISSED) between our read and our UPDATE
        raise not_awaiting(rows.get(notification_id), "escalated")
    return result


def auto_escalation_applies(row: Notification) -> bool:
    """Whether ``row`` timing out starts its escalation chain: its frozen policy names one and it
    is not itself an escalation (principal ``uns-escalation``: the chain of the original pages
    the next levels, so an escalation that nobody answers does not start a chain of its own; a
    responder may still escalate an escalation by hand). Pure: reads only the row."""
    return row.principal != ESCALATION_PRINCIPAL and bool(chain(row))


def _fence(nid: str, step: int, now: float, new_state: str = ACTIVE, **changes) -> bool:
    """Claim step ``step`` of ``nid``'s chain: one conditional UPDATE (``escalation_state``
    ACTIVE -> ``new_state``, ACTIVE again as the ADVANCE self-edge) that matches only while the
    chain is ACTIVE at that step and due. A response committed first (RESPONDED), another
    worker's claim (step moved) or a manual escalation make it match nothing."""
    return bool(transition(Notification.objects.filter(id=nid), escalation_state=(ACTIVE, new_state), edge=ADVANCE,
                           where={"escalation_step": step, "escalation_due__isnull": False,
                                  "escalation_due__lte": now}, set=changes))


def _advance(runtime, nid: str, now: float) -> tuple[bool, bool]:
    """Perform the chain step of ``nid`` due at ``now``, in the caller's transaction. Returns
    ``(performed, again)``: whether this call performed a step, and whether another may be due
    at once (a level could not be sent, or waits 0 s)."""
    row = Notification.objects.filter(id=nid).first()
    if row is None or row.escalation_state != ACTIVE or row.escalation_due is None or row.escalation_due > now:
        return False, False
    levels = chain(row)
    steps = chains.steps(levels)
    k = row.escalation_step
    if k >= len(steps):  # the last level's last wait passed: the chain's end
        if not _fence(nid, k, now, new_state=EXHAUSTED, escalation_due=None):
            return False, False
        timeline.insert_events(runtime, [timeline.event(nid, timeline.ESCALATION_EXHAUSTED, {
            "actor": TIMEOUT_ACTOR, "levels": len(levels), "steps": k}, now)])
        close_copies(runtime, nid, TIMED_OUT, TIMEOUT_ACTOR, now, {CLOSED_BY: timeline.ESCALATION_EXHAUSTED})
        return True, False
    level, repetition = steps[k]
    if not _fence(nid, k, now, escalation_step=k + 1, escalation_due=now + level.wait_seconds):
        return False, False
    try:
        with transaction.atomic():
            _send_level(runtime, row, level, repetition, TIMEOUT_ACTOR, AUTO_ESCALATION_REASON, now, None)
    except UNSError as exc:
        # A level that cannot be sent is recorded and the chain moves on to the next level now
        # (its other repetitions would be refused alike).
        log.warning("escalation level %d of %s failed: %s (%s)", level.number, row.id, exc.detail, exc.code,
                    extra=log_ids(row.id))
        transition(Notification.objects.filter(id=nid), escalation_state=(ACTIVE, ACTIVE), edge=ADVANCE,
                   set={"escalation_step": chains.first_step_of(levels, level.number + 1), "escalation_due": now})
        timeline.insert_events(runtime, [timeline.event(row.id, timeline.ESCALATION_FAILED, {
            "actor": TIMEOUT_ACTOR, "reason": AUTO_ESCALATION_REASON, "target": level.channels[0],
            "channels": list(level.channels), "level": level.number, "repetition": repetition,
            "code": getattr(exc, "extra", {}).get("cause", exc.code), "detail": exc.detail,
        }, now)])
        return True, True
    return True, level.wait_seconds <= 0


def _defer_for_silence(runtime, nid: str, notification: dict, window, now: float) -> bool:
    """A silence holding the original at ``now`` defers its chain's due step to the silence's end
    (the HOLD self-edge, fenced on the step still due) with a hold and, the first time, SILENCED
    (scope ``escalation``): no level pages while the silence holds. Returns whether it deferred."""
    silence = silences.silencing(notification, now, window) if window is not None and window.active else None
    if silence is None:
        return False
    with transaction.atomic():
        if transition(Notification.objects.filter(id=nid), escalation_state=(ACTIVE, ACTIVE), edge=HOLD,
                      where={"escalation_due__lte": now}, set={"escalation_due": silence.ends_at}):
            silences.hold(runtime, silence, nid, silences.ESCALATION, now)
    return True


def escalate_due(runtime, limit: int = 500) -> list[str]:
    """Perform the escalation chain steps that are due (``escalation_due <= now``, epoch
    seconds; the first one recorded by ``responses.time_out``), at most ``limit`` notifications,
    oldest due first. Returns the ids of the originals this call advanced.

    Each step is its own transaction, fenced by a conditional UPDATE on the chain's state
    (``escalation_state`` ACTIVE, ``escalation_step`` unchanged, still due: ``_fence``): of two
    workers racing for one row, the second's UPDATE waits for the first's commit and then
    matches nothing, so a step fires exactly once; a response that committed first (RESPONDED)
    makes it match nothing, so no level fires after a response. A step fires a level (ESCALATED,
    the next step due after the level's ``wait_seconds``), records a level that cannot be sent
    (ESCALATION_FAILED; the next level is due at once) or, after the last one, ends the chain
    (ESCALATION_EXHAUSTED). A crash before or during a step (the transaction rolls back) leaves it
    due, and the next pass performs it. An unexpected error on one row (not a refusal) is logged
    and leaves it due; the others proceed.
    """
    now = runtime.clock()
    due = list(Notification.objects.filter(escalation_due__isnull=False, escalation_due__lte=now)
               .order_by("escalation_due", "id").values_list("id", "notification")[:limit])
    window = silences.Window.read(now) if due else None
    done = []
    for nid, notification in due:
        if _defer_for_silence(runtime, nid, notification, window, now):
            continue
        advanced = False
        for _ in range(chains.MAX_LEVELS * chains.MAX_REPEAT + 2):  # every step of the longest chain
            try:
                with transaction.atomic():
                    performed, again = _advance(runtime, nid, now)
            except Exception as exc:
                if database_unreachable(exc):
                    raise  # no row at fault: the worker loop backs off and logs the outage once
                log.exception("escalation of %s could not run; it stays due", nid, extra=log_ids(nid))
                break
            advanced = advanced or performed
            if not again:
                break
        if advanced:
            done.append(nid)
    return done


def _ancestors(row: Notification) -> list[str]:
    """The originals ``row`` escalates, nearest first (``escalated_from``, up to ``MAX_ANCESTRY``).
    Reads nothing for a notification that is no escalation."""
    found, current = [], row
    for _ in range(MAX_ANCESTRY):
        parent = (current.notification.get("metadata") or {}).get("escalated_from")
        if current.principal != ESCALATION_PRINCIPAL or not isinstance(parent, str):
            break
        current = Notification.objects.filter(id=parent).only("id", "principal", "notification").first()
        if current is None:
            break
        found.append(current.id)
    return found


def _chain_owners(row: Notification) -> list[str]:
    """``row`` (when its frozen policy names a chain: only then can it have one running) and the
    originals it escalates (``_ancestors``)."""
    return ([row.id] if chain(row) else []) + _ancestors(row)


def is_escalation(row: Notification) -> bool:
    """Whether ``row`` is an escalation notification (a copy a chain sent). Pure."""
    return row.principal == ESCALATION_PRINCIPAL


def lock_ancestors(row: Notification) -> None:
    """Lock (SELECT ... FOR UPDATE, topmost first) the originals ``row`` escalates, inside the
    caller's transaction, before the caller writes ``row``: every writer that closes a chain's
    copies then takes the chain's rows in one order (original before its escalations), so two
    responses on two levels of one chain queue on the original instead of deadlocking on each
    other's copy. SQLite's IMMEDIATE transaction already serialises writers."""
    for owner in reversed(_ancestors(row)):
        Notification.objects.select_for_update().filter(id=owner).values_list("id", flat=True).first()


def stop_for_source(runtime, notification_id: str, actor: str, *, dismiss: bool = False, metadata=None) -> bool:
    """Stop the ACTIVE escalation chain of a notification that already timed out (ack_status
    TIMED_OUT, so no response of its own can stop it) because its source resolved it: the
    Alertmanager ``resolved`` alert or the PagerDuty ``acknowledge`` / ``resolve`` event that
    would have acknowledged it (``dismiss``: dismissed) had it still been open. One transaction:
    the row locked while its chain is ACTIVE, then ``stop_chain`` as a response's, with
    ``response`` ACKED (DISMISSED with ``dismiss``), ``responded_on`` the notification itself and
    ``metadata`` (an object, e.g. ``{"via": "alertmanager", ...}``) on ESCALATION_STOPPED; the
    chain's open escalation notifications are closed with it. The notification's own ack state
    stays TIMED_OUT. Returns False (nothing written) when no chain of its was ACTIVE.
    Raises ``InvalidRequest`` for a bad ``actor`` or ``metadata``."""
    metadata = parse(schemas.RespondRequest, {"metadata": metadata}).metadata or {}
    check_actor(actor)
    now = runtime.clock()
    with transaction.atomic():
        row = (Notification.objects.select_for_update()
               .filter(id=notification_id, ack_status=TIMED_OUT, escalation_state=ACTIVE).first())
        if row is None:
            return False
        return bool(stop_chain(runtime, row, actor, DISMISSED if dismiss else ACKED, now, metadata=metadata))


def stop_chain(runtime, row: Notification, actor: str, response: str, now: float, *,
               metadata: dict | None = None) -> list[str]:
    """Stop every ACTIVE escalation chain ``row``'s response ends: its own and, when ``row`` is
    an escalation, its original's (up the ``escalated_from`` line). Inside the caller's
    transaction (``responses.acknowledge``'s, which wrote ACKED / DISMISSED and, for an
    escalation, locked its originals first: ``lock_ancestors``), so the stop commits with the
    response: one conditional UPDATE per chain (``escalation_state`` ACTIVE -> RESPONDED, nothing
    due), ESCALATION_STOPPED on each stopped original (actor, response, responded_on: the
    notification responded to, level: the active level, steps: steps fired; ``metadata`` when
    given: a resolved source's, ``stop_for_source``), and each stopped chain's escalation notifications still awaiting a response closed with ``response`` by
    ``actor`` (``close_copies``). Returns the ids of the originals whose chain it stopped."""
    stopped = []
    for owner in _chain_owners(row):
        if _stop_one(runtime, owner, actor, response, row.id, now, metadata):
            stopped.append(owner)
    for owner in stopped:
        close_copies(runtime, owner, response, actor, now,
                     {CLOSED_BY: timeline.ESCALATION_STOPPED, "responded_on": row.id})
    return stopped


def _stop_one(runtime, owner: str, actor: str, response: str, responded_on: str, now: float,
              metadata: dict | None = None) -> bool:
    """``owner``'s chain ACTIVE -> RESPONDED with its ESCALATION_STOPPED; False when it was not ACTIVE."""
    if not transition(Notification.objects.filter(id=owner), escalation_state=(ACTIVE, RESPONDED),
                      set={"escalation_due": None}):
        return False
    original = Notification.objects.get(id=owner)
    payload = {"actor": actor, "response": response, "responded_on": responded_on,
               "level": active_level(original), "steps": original.escalation_step}
    if metadata is not None:
        payload["metadata"] = metadata
    timeline.insert_events(runtime, [timeline.event(owner, timeline.ESCALATION_STOPPED, payload, now)])
    return True


def close_copies(runtime, owner: str, ack_status: str, actor: str, now: float, reason: dict, *,
                 depth: int = 0) -> list[str]:
    """Close the escalation notifications of ``owner``'s chain that still await a response (the
    ones its ESCALATED events name, ack_status PENDING), inside the caller's transaction (the one
    that stopped or ended the chain, holding ``owner``'s row): each is one conditional UPDATE
    (ack_status PENDING -> ``ack_status``: ACKED or DISMISSED for a stop, TIMED_OUT for an
    exhausted chain; ``actor``, ``responded_at`` = ``now``, ``response_metadata``) with its event
    of that kind (``{"actor", "metadata"}``, a callback outbox row as for any response), its
    ``ack_audit_records`` row and the ``response_settled`` hooks, exactly what a response writes.
    The metadata is ``reason`` (``{CLOSED_BY: the chain's event kind, ...}``) plus
    ``escalated_from`` (``owner``). A copy settled meanwhile (answered, timed out) is left as it
    is. On a stop, an escalation that is itself the original of an ACTIVE chain (escalated by
    hand) has that chain stopped and its copies closed too (up to ``MAX_ANCESTRY`` deep).
    Returns the ids closed, in escalation order."""
    metadata = {**reason, "escalated_from": owner}
    closed = []
    fired = Event.objects.filter(notification_id=owner, kind=timeline.ESCALATED).order_by("at", "id")
    for copy_id in escalation_ids(list(fired)):
        won = rows.update(Notification, copy_id, {"actor": actor, "responded_at": now, "response_metadata": metadata},
                          states={"ack_status": (ACK_PENDING, ack_status)})
        if won is not None:
            timeline.insert_events(runtime, [timeline.event(copy_id, ack_status,
                                                            {"actor": actor, "metadata": metadata}, now)])
            rows.insert(AckAuditRecord, [audit.ack_audit(copy_id, old=ACK_PENDING, new=ack_status, actor=actor,
                                                         at=now, metadata=metadata)])
            hooks.response_settled(runtime, won, ack_status, actor, now)
            closed.append(copy_id)
        if ack_status != TIMED_OUT and depth < MAX_ANCESTRY and _stop_one(
                runtime, copy_id, actor, ack_status, reason.get("responded_on", copy_id), now):
            closed += close_copies(runtime, copy_id, ack_status, actor, now, reason, depth=depth + 1)
    return closed


def chain_view(row: Notification, events: list[Event], escalations: dict[str, Notification]) -> dict | None:
    """What the console shows of ``row``'s escalation chain, from its row, its timeline
    ``events`` (in order) and its escalation notifications (``escalations``: by id, those the
    ESCALATED events name; ``escalation_ids(events)``). None when the policy names no chain.
    Pure: no query.

    ``{"levels": [{"level", "channels", "wait_seconds", "repeat"}], "state": null | ACTIVE |
    RESPONDED | EXHAUSTED, "active_level": 0 before any, "steps_fired", "next_due" (epoch s or
    null), "next": {"level", "repetition"} | {"exhausted": true} | null, "fired": [{"number",
    "level", "repetition", "channels", "at", "actor", "reason", "escalation_id", "status",
    "ack_status", "responded_by", "responded_at", "closed_by_chain"}], "failed": [{"level", "repetition",
    "channels", "at", "code", "detail"}], "stopped": {"actor", "response", "responded_on",
    "level", "at"} | null, "exhausted_at": epoch s | null, "can_escalate": bool, "starts_on_timeout": bool
    (``auto_escalation_applies``: false for an escalation, whose chain only Escalate starts)}``.
    """
    levels = chain(row)
    if not levels:
        return None
    steps = chains.steps(levels)
    fired, failed, stopped, exhausted_at = [], [], None, None
    for ev in events:
        p = ev.payload or {}
        if ev.kind == timeline.ESCALATED:
            esc = escalations.get(p.get("escalation_id"))
            settled = esc is not None and esc.ack_status in ("ACKED", "DISMISSED")
            fired.append({
                "number": p.get("escalation_number"), "level": p.get("level", 1),
                "repetition": p.get("repetition", 1), "channels": p.get("channels") or [p.get("target")],
                "at": ev.at, "actor": p.get("actor"), "reason": p.get("reason"),
                "escalation_id": p.get("escalation_id"),
                "status": esc.status if esc is not None else None,
                "ack_status": esc.ack_status if esc is not None else None,
                "responded_by": esc.actor if settled else None,
                "responded_at": esc.responded_at if settled else None,
                "closed_by_chain": esc is not None and closed_by_chain(esc) is not None,
            })
        elif ev.kind == timeline.ESCALATION_FAILED:
            failed.append({"level": p.get("level", 1), "repetition": p.get("repetition", 1),
                           "channels": p.get("channels") or [p.get("target")], "at": ev.at,
                           "code": p.get("code"), "detail": p.get("detail")})
        elif ev.kind == timeline.ESCALATION_STOPPED:
            stopped = {"actor": p.get("actor"), "response": p.get("response"), "responded_on": p.get("responded_on"),
                       "level": p.get("level"), "at": ev.at}
        elif ev.kind == timeline.ESCALATION_EXHAUSTED:
            exhausted_at = ev.at
    nxt = None
    if row.escalation_state == ACTIVE:
        k = row.escalation_step
        nxt = {"exhausted": True} if k >= len(steps) else {"level": steps[k][0].number, "repetition": steps[k][1]}
    return {
        "levels": [lv.as_dict() for lv in levels],
        "state": row.escalation_state,
        "active_level": active_level(row, levels),
        "steps_fired": row.escalation_step,
        "next_due": row.escalation_due,
        "next": nxt,
        "fired": fired,
        "failed": failed,
        "stopped": stopped,
        "exhausted_at": exhausted_at,
        "can_escalate": can_escalate(row),
        "starts_on_timeout": auto_escalation_applies(row),
    }


def can_escalate(row: Notification) -> bool:
    """Whether ``escalate`` would take ``row`` now, as far as the row tells (the rule the console
    offers its Escalate button by): it requires a response, awaits one or timed out, its policy
    names a chain and no response stopped it. Pure."""
    return (bool(row.notification.get("require_ack")) and row.ack_status in ESCALATABLE
            and row.escalation_state != RESPONDED and bool(chain(row)))


def closed_by_chain(row: Notification) -> str | None:
    """The chain event kind (ESCALATION_STOPPED, ESCALATION_EXHAUSTED) that closed escalation
    notification ``row`` (``close_copies``), or None when a response of its own or its own
    deadline settled it, or it is still open. Pure."""
    closed = (row.response_metadata or {}).get(CLOSED_BY) if isinstance(row.response_metadata, dict) else None
    return closed if is_escalation(row) and isinstance(closed, str) else None


def escalation_ids(events: list[Event]) -> list[str]:
    """The escalation notification ids the ESCALATED events of a timeline name."""
    return [ev.payload["escalation_id"] for ev in events
            if ev.kind == timeline.ESCALATED and isinstance((ev.payload or {}).get("escalation_id"), str)]
