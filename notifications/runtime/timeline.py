"""The ``uns_events`` timeline (and callback outbox): the event kinds, the ``event`` row builder
and ``insert_events``, through which every event a transition writes in its own transaction is
inserted and, once committed, published live. The audit rows live in ``audit``."""
import logging

from django.db import transaction

from core import hooks
from core.keys import new_event_id

from ..models import Event
from . import rows

# Event kinds of the support reference, section 3.
ACCEPTED = "ACCEPTED"
DEDUP_LINKED = "DEDUP_LINKED"
ATTEMPT_STARTED = "ATTEMPT_STARTED"
CHANNEL_ATTEMPT_STARTED = "CHANNEL_ATTEMPT_STARTED"
CHANNEL_ATTEMPT_RESULT = "CHANNEL_ATTEMPT_RESULT"
LEASE_LOST = "LEASE_LOST"
DELIVERY_RESULT = "DELIVERY_RESULT"
OBLIGATION_HANDED_OFF = "OBLIGATION_HANDED_OFF"
DEDUP_SATISFIED = "DEDUP_SATISFIED"
DEDUP_OWNER_PROMOTED = "DEDUP_OWNER_PROMOTED"
DEDUP_RELINKED = "DEDUP_RELINKED"
ACKED = "ACKED"
DISMISSED = "DISMISSED"
TIMED_OUT = "TIMED_OUT"
REPLAY_REQUESTED = "REPLAY_REQUESTED"
FAILURE_RESOLVED = "FAILURE_RESOLVED"
# A retention receipt (maintenance.maintain): its notification_id is its own id, never pruned.
RETENTION_APPLIED = "RETENTION_APPLIED"
# Response verbs beyond the reference's catalog: snooze and escalation.
SNOOZED = "SNOOZED"
ESCALATED = "ESCALATED"
ESCALATION_FAILED = "ESCALATION_FAILED"
# Governance: an approval notification's response settled its decision
# (payload: decision_id, state approved | denied | expired, decided_by, approved_by, action, agent_id).
APPROVAL_SETTLED = "APPROVAL_SETTLED"
# Beyond the catalog: the callback outbox gave up on a response event's callback
# (``callbacks.deliver_callbacks``), and a channel's delivery failed over to a policy fallback
# channel (``dispatch``).
CALLBACK_FAILED = "CALLBACK_FAILED"
CHANNEL_FAILED_OVER = "CHANNEL_FAILED_OVER"
# Escalation chains (``escalation``): a response stopped the chain; its last level's
# wait passed with no response (the chain's end).
ESCALATION_STOPPED = "ESCALATION_STOPPED"
ESCALATION_EXHAUSTED = "ESCALATION_EXHAUSTED"
# On-call (issue 22): a people target (``schedule:``, ``team:``, ``user:``) was resolved at send
# time to the people it pages and their verified contact methods (``dispatch.people``); each
# contact method's answer follows as a CHANNEL_ATTEMPT_RESULT whose metadata names the person.
ONCALL_RESOLVED = "ONCALL_RESOLVED"

CALLBACK_KINDS = frozenset({ACKED, DISMISSED, TIMED_OUT, APPROVAL_SETTLED})

log = logging.getLogger("uns.events")


def insert_events(runtime, events: list[Event], *, principal: str | None = None) -> list[Event]:
    """Insert ``uns_events`` rows and, once the enclosing transaction commits (at once in
    autocommit), hand them to ``runtime.publish`` (the live push; see ``notifications.live``)
    and to the ``committed`` hooks (``hooks``: the Prometheus counters; ``principal``: the
    intake's, for the ACCEPTED counter's principal class). Every runtime event insert goes
    through here, so no committed event skips the live stream or the metrics and no
    rolled-back one reaches them.

    Publishing is best effort (at most once): the rows are the durable timeline and a
    subscriber catches up from them. A failing publisher or metric is logged and never fails
    the write.
    """
    if not events:
        return events
    rows.insert(Event, events)  # bulk_create's rows, without compiling a query per transition
    publish = getattr(runtime, "publish", None)
    transaction.on_commit(lambda: _committed(publish, events, principal))
    return events


def _committed(publish, events: list[Event], principal: str | None) -> None:
    if publish is not None:
        _publish(publish, events)
    hooks.committed(events, principal)


def _publish(publish, events: list[Event]) -> None:
    try:
        publish(events)
    except Exception:  # the live push must never undo or fail a committed transition
        log.exception("publishing %d committed event(s) failed", len(events))


def event(notification_id: str, kind: str, payload: dict, at: float) -> Event:
    """An unsaved ``uns_events`` row. ACKED / DISMISSED / TIMED_OUT / APPROVAL_SETTLED (CALLBACK_KINDS) always join the callback
    outbox (``callback_pending``), whatever the writing process's configuration: the worker
    that drains it resolves the destination (``callbacks``). ``callback_until`` starts at ``at``."""
    return Event(
        id=new_event_id(),
        notification_id=notification_id,
        kind=kind,
        at=at,
        payload=payload,
        callback_pending=kind in CALLBACK_KINDS,
        callback_until=at,
        callback_token=None,
        callback_attempts=0,
        callback_error=None,
    )
