"""Settle: the end of a claim's attempt, in one transaction per batch or chunk (DESIGN.md rule 2).

``settle_batch`` writes the CHANNEL_ATTEMPT_RESULT rows the claims observed (even on a lost
lease), applies each held row's outcome with one fenced UPDATE (status through the transition
table), and writes DELIVERY_RESULT or LEASE_LOST, the audits and the dedup-group followers'
settlement. A failing row is settled alone in its own savepoint and reported ``UNSETTLED``.
"""
import logging
from dataclasses import dataclass
from typing import NamedTuple

from django.db import connection, transaction

from core.errors import database_unreachable
from core.transitions import (ACK_PENDING, DELIVERED, FAILED, PENDING, RETRY, Settlement, backoff_seconds,
                              retry_delay_seconds, settle, sql_guard)

from ...models import Event, Notification, NotificationAuditRecord
from .. import audit, dedup_group, rows, series, timeline
from .claim import UNSETTLED, Claim, DispatchReport, json_in, sql_values

log = logging.getLogger("uns.dispatch")


def _lease_lost_event(c: Claim, now: float) -> Event:
    return timeline.event(c.id, timeline.LEASE_LOST, {
        "lease_token": c.lease_token,
        "attempt": c.attempt,
        # The reference fixes this at true (before or after adapter execution): a lost lease
        # never proves that no provider effect happened.
        "provider_effect_may_have_occurred": True,
    }, now)


class _Settled(NamedTuple):
    """The settled row's fields ``audit.delivery_audit`` reads, for a row without a dedup key."""

    id: str
    notification: dict
    dedup_key: None
    dedup_generation: int


@dataclass
class _Plan:
    """What settling one claim writes if its lease still holds."""

    claim: Claim
    decision: Settlement
    outcome: dict
    changes: dict


def _plan(runtime, c: Claim, now: float) -> _Plan:
    eff = c.effective
    succeeded = list(dict.fromkeys([*c.outcome.get("channels_succeeded", []),
                                    *[ch for ch, r in c.results.items() if r.success]]))
    failed = {ch: r for ch, r in c.results.items() if not r.success}
    outcome = {
        "channels_attempted": list(dict.fromkeys([*c.outcome.get("channels_attempted", []), *c.results])),
        "channels_succeeded": succeeded,
        "channels_failed": list(failed),
        "error_message": "; ".join(f"{ch}: {r.error}" for ch, r in failed.items()) or None,
    }
    if c.given_up:
        outcome["failover"] = {"cycle": c.cycle, "given_up": sorted(c.given_up)}
    # Each open slot by its current channel (a given-up channel's failure is its fallback's
    # business now): dead when that channel's failure ends the chain (permanent, or on the
    # cycle's last attempt), untried when a stop came before it was attempted.
    slots = [c.current(p) for p in c.open_slots()]
    answers = [c.results.get(ch) for ch in slots]
    dead = any(r is not None and not r.success and (not r.retryable or c.exhausted()) for r in answers)
    untried = any(r is None for r in answers)
    if untried and not dead:
        # A stop came between channels: what is left is due again, not a failure (it does not
        # spend the budget into the DLQ); it backs off only if something failed.
        decision = Settlement(PENDING, False, any(r is not None and not r.success for r in answers))
    else:
        decision = settle(
            delivery_mode=eff["delivery_mode"],
            all_succeeded=not slots,
            permanent_failure=dead,
            cycle_attempts=c.cycle_attempt,
            max_attempts=int(eff["max_attempts"]),
        )
    changes = {"next_attempt": None, "delivered_at": None, "ack_status": None, "deadline": None}
    if decision.retry:
        b = eff["backoff"]
        backoff = backoff_seconds(
            cycle_attempt=c.cycle_attempt, base=b["base_seconds"], factor=b["factor"], cap=b["cap_seconds"],
            jitter=b["jitter"], unit_random=runtime.random(),
        )
        # The longest wait a failed channel's provider asked for (Retry-After); ``now`` is after
        # every answer, so the next attempt is no earlier than any of them asked.
        asked = [r.retry_after for r in failed.values() if r.retryable and r.retry_after is not None]
        changes["next_attempt"] = now + retry_delay_seconds(
            backoff=backoff, retry_after=max(asked, default=None), retry_after_max=runtime.retry_after_max_seconds)
    if decision.status == DELIVERED:
        changes["delivered_at"] = now
        if eff["require_ack"]:
            changes["ack_status"] = ACK_PENDING  # the edge None -> PENDING, guarded in _settle_rows
            changes["deadline"] = now + 60.0 * float(eff["ack_timeout_minutes"])
    return _Plan(c, decision, outcome, changes)


def _delivered(c: Claim, p: _Plan, now: float) -> series.Delivered:
    """The time-series facts of a DELIVERED settle: seconds from acceptance (``created_at``) to
    now for a first-cycle delivery (a replayed cycle's would count the time it spent dead), and
    whether it set ack_status PENDING."""
    created = c.notification.get("created_at")
    latency = now - float(created) if c.cycle == 1 and isinstance(created, (int, float)) else None
    return series.Delivered(latency, p.changes["ack_status"] == ACK_PENDING)


# Columns of the settle's VALUES list, with their PostgreSQL types. A NULL in the last four
# leaves the column as it is (they are only ever set by a settle, never cleared). A settle to
# FAILED also sets ``failed_at`` to its time, the ``created_at`` of the FAILED audit row it writes.
_SETTLE_CASTS = ("text", "text", "text", "jsonb", "boolean", "double precision", "double precision", "text",
                 "double precision")

_SETTLE_SQL = """
UPDATE uns_notifications AS n
   SET status = v.column3, outcome = v.column4, dead_letter = v.column5,
       lease_token = NULL, lease_until = 0.0,
       next_attempt = COALESCE(v.column6, n.next_attempt),
       delivered_at = COALESCE(v.column7, n.delivered_at),
       ack_status = COALESCE(v.column8, n.ack_status),
       deadline = COALESCE(v.column9, n.deadline),
       failed_at = CASE WHEN v.column3 = %s THEN %s ELSE n.failed_at END
  FROM {values} AS v
 WHERE n.id = v.column1 AND {guard} AND {ack_guard} AND n.lease_token = v.column2 AND n.lease_until > %s
RETURNING id, dedup_key, dedup_generation
"""


def _settle_rows(runtime, claims: list[Claim], now: float) -> list[DispatchReport]:
    """Settle ``claims`` (caller's transaction or savepoint): their CHANNEL_ATTEMPT_RESULT rows,
    one fenced UPDATE for the held ones, DELIVERY_RESULT / LEASE_LOST, audits and followers."""
    events = [e for c in claims for e in c.result_events]
    plans = [_plan(runtime, c, now) for c in claims if not c.lease_lost]
    won = {}
    if plans:
        held = [(p.claim.id, p.claim.lease_token, p.decision.status, json_in(p.outcome), p.decision.dead_letter,
                 p.changes["next_attempt"], p.changes["delivered_at"], p.changes["ack_status"],
                 p.changes["deadline"]) for p in plans]
        values, params = sql_values(held, _SETTLE_CASTS)
        # Each row's edge PENDING -> its status is checked against the transition table (a
        # retry is the named RETRY self-edge) before the query; the WHERE names PENDING.
        guard, guard_params = sql_guard("status", [(PENDING, p.decision.status) for p in plans], edge=RETRY,
                                        column="n.status")
        # ack_status is written only as the edge "no ack state" -> PENDING (a delivery that needs
        # an ACK); every row a settle may touch is still without one, so the WHERE names that
        # prior state for the whole batch (a row that has one is not settled: lease lost).
        ack_guard, ack_params = sql_guard("ack_status", [(None, ACK_PENDING)], column="n.ack_status")
        with connection.cursor() as cur:
            cur.execute(_SETTLE_SQL.format(values=values, guard=guard, ack_guard=ack_guard),
                        [FAILED, now, *params, *guard_params, *ack_params, now])
            won = {rid: (key, gen) for rid, key, gen in cur.fetchall()}
    by_id = {p.claim.id: p for p in plans}
    reports, audits, delivered = [], [], {}
    for c in claims:
        p = by_id.get(c.id)
        if p is None or c.id not in won:
            events.append(_lease_lost_event(c, now))
            reports.append(DispatchReport(c.id, "LEASE_LOST", attempt=c.attempt))
            continue
        status = p.decision.status
        events.append(timeline.event(c.id, timeline.DELIVERY_RESULT, {
            "status": status,
            "attempt": c.attempt,
            "cycle": c.cycle,
            "cycle_attempt": c.cycle_attempt,
            "dead_letter": p.decision.dead_letter,
            "outcome": p.outcome,
        }, now))
        if status == DELIVERED:
            delivered[c.id] = _delivered(c, p, now)
        dedup_key, generation = won[c.id]
        # What the audit row and the dedup group read of the settled row; a model instance only
        # for a dedup leader (building one fills ~30 field defaults: a tenth of the settle's CPU).
        row = (Notification(id=c.id, notification=c.notification, dedup_key=dedup_key, dedup_generation=generation)
               if dedup_key else _Settled(c.id, c.notification, None, generation))
        audits.append(audit.delivery_audit(row, status=status, outcome=p.outcome, at=now))
        if dedup_key and status == DELIVERED:
            events.extend(dedup_group.on_delivered(row, now))
        elif dedup_key and status == FAILED:
            events.extend(dedup_group.on_failed(row, now))
        reports.append(DispatchReport(c.id, status, p.decision.dead_letter, c.attempt))
    timeline.insert_events(runtime, events, delivered=delivered)
    rows.insert(NotificationAuditRecord, audits)  # bulk_create's rows, without compiling a query
    for c in claims:
        c.result_events = []
    return reports


def settle_batch(runtime, claims: list[Claim]) -> list[DispatchReport]:
    """Settle every attempted claim in one transaction (``docs/explanation/dispatch.md``): the whole batch in
    one savepoint; if that raises, each row in its own savepoint, so a failing row rolls back
    only itself: it is logged, keeps its lease (recovered after expiry) and is reported
    ``UNSETTLED``, and its CHANNEL_ATTEMPT_RESULT rows are still written when they can be. A lost
    database connection (``errors.database_unreachable``) is raised instead: no row is at fault,
    and the worker loop backs off and logs the outage once; the rows keep their leases.
    Returns one ``DispatchReport`` per claim, in order."""
    if not claims:
        return []
    now = runtime.clock()
    with transaction.atomic():
        try:
            with transaction.atomic():
                return _settle_rows(runtime, claims, now)
        except Exception as exc:
            if database_unreachable(exc):
                raise
            log.exception("settling a batch of %d failed; settling its rows one by one", len(claims))
        reports = []
        for c in claims:
            try:
                with transaction.atomic():
                    reports += _settle_rows(runtime, [c], now)
            except Exception as exc:
                if database_unreachable(exc):
                    raise
                log.exception("settling %s failed; it keeps its lease until it expires", c.id, extra=c.log_extra)
                reports.append(DispatchReport(c.id, UNSETTLED, attempt=c.attempt))
                write_results(runtime, [c])
        return reports


def write_results(runtime, claims: list[Claim]) -> None:
    """Insert the CHANNEL_ATTEMPT_RESULT rows ``claims`` observed and have not written yet, in
    a savepoint of the caller's transaction (or its own); a failure is logged, not raised."""
    events = [e for c in claims for e in c.result_events]
    if not events:
        return
    try:
        with transaction.atomic():
            timeline.insert_events(runtime, events)
    except Exception as exc:
        if database_unreachable(exc):  # the outage is logged once by the worker loop
            log.debug("writing %d CHANNEL_ATTEMPT_RESULT row(s) failed: database unreachable", len(events))
        else:
            log.exception("writing %d CHANNEL_ATTEMPT_RESULT row(s) failed", len(events))
        return
    for c in claims:
        c.result_events = []

