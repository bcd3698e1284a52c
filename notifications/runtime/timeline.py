"""The ``uns_events`` timeline (and callback outbox): the event kinds, the ``event`` row builder
and ``insert_events``, through which every event a transition writes in its own transaction is
inserted and, once committed, published live. The audit rows live in ``audit``."""
import logging

from django.db import transaction

from core import hooks
from core.keys import new_event_id

from ..models import Event
from . import rows, series

from .kinds import (  # noqa: F401  # the kinds, re-exported as timeline.<KIND>
    ACCEPTED, DEDUP_LINKED, ATTEMPT_STARTED, CHANNEL_ATTEMPT_STARTED, CHANNEL_ATTEMPT_RESULT,
    LEASE_LOST, DELIVERY_RESULT, OBLIGATION_HANDED_OFF, DEDUP_SATISFIED, DEDUP_OWNER_PROMOTED,
    DEDUP_RELINKED, ACKED, DISMISSED, TIMED_OUT, REPLAY_REQUESTED, FAILURE_RESOLVED, RETENTION_APPLIED,
    SNOOZED, ESCALATED, ESCALATION_FAILED, APPROVAL_SETTLED, CALLBACK_FAILED, CHANNEL_FAILED_OVER,
    ESCALATION_STOPPED, ESCALATION_EXHAUSTED, SILENCED, DELIVERY_WITHHELD, RESPONSE_BEFORE_DELIVERY,
    ONCALL_RESOLVED,
)

CALLBACK_KINDS = frozenset({ACKED, DISMISSED, TIMED_OUT, APPROVAL_SETTLED})

log = logging.getLogger("uns.events")


def insert_events(runtime, events: list[Event], *, principal: str | None = None,
                  delivered: dict | None = None) -> list[Event]:
    """Insert ``uns_events`` rows, add them to the time-series rollups in the same transaction
    (``series.record``; ``delivered``: notification id -> ``series.Delivered`` for the
    DELIVERED results among them, from the settle) and, once the enclosing transaction commits (at once in
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
    series.record(events, delivered)
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
    # Positional, in the model's column order (``EVENT_COLUMNS``, held by a test): Django's fast
    # path for building an instance, half the CPU of keyword arguments (a delivery builds four).
    return Event(new_event_id(), notification_id, kind, at, payload, kind in CALLBACK_KINDS, at, None, 0, None)


EVENT_COLUMNS = ("id", "notification_id", "kind", "at", "payload", "callback_pending", "callback_until",
                 "callback_token", "callback_attempts", "callback_error")
