"""``dispatch``: leased, fenced delivery (DESIGN.md write-path rule 2; reference 1.1).

1. Claim: one transaction takes a batch of due PENDING leaders (``FOR UPDATE SKIP LOCKED`` on
   PostgreSQL), gives each a fresh ``lease_token`` and ``lease_until = now + lease`` and writes
   ATTEMPT_STARTED. It commits before any adapter I/O.
2. Attempt, outside any transaction: per channel, a conditional check that the lease is still
   held writes CHANNEL_ATTEMPT_STARTED in the same transaction; then the adapter runs; then
   CHANNEL_ATTEMPT_RESULT is appended whatever happened to the lease.
3. Settle: one transaction per batch; each row's UPDATE names its ``lease_token`` and an
   unexpired lease. Zero rows means the lease was lost: LEASE_LOST, and nothing else changes.

Stopping (``dispatch(..., stop=...)``, used by the worker loops): once the stop is requested no
row and no channel starts; channel attempts under way may finish until the stop's grace ends.
Everything that finished is settled as above. A claim whose channels were never attempted is
released at once (``release_unattempted``): the claim is undone, so another worker takes the row
immediately with the same attempt number and no recovery flag. A claim whose adapter call is
still running when the grace ends keeps its lease (it is recovered after expiry, flagged
``recovery_may_repeat_provider_effect``) and is reported ``IN_FLIGHT``.
"""
import logging
import threading
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass, field

from django.db import close_old_connections, transaction
from django.db.models import F

from ..adapters.base import AttemptContext, ChannelTarget, DeliveryResult
from ..models import Channel, Event, Notification, NotificationAuditRecord
from . import followers, records
from .identity import new_id
from .transitions import ACK_PENDING, DELIVERED, FAILED, PENDING, Settlement, backoff_seconds, check_status, settle

log = logging.getLogger("uns.dispatch")

# Report statuses of a stopped pass (besides the settled status and LEASE_LOST).
RELEASED = "RELEASED"  # claimed, never attempted, lease released (claim undone)
IN_FLIGHT = "IN_FLIGHT"  # adapter call still running when the stop's grace ended; lease kept

_STOP_POLL_SECONDS = 0.25  # how often a pass waiting on its adapter calls looks for a stop


@dataclass
class Claim:
    """A row this worker holds a lease on, and what its attempt observed."""

    id: str
    lease_token: str
    attempt: int
    cycle: int
    cycle_attempt: int
    notification: dict
    outcome: dict
    results: dict = field(default_factory=dict)  # channel -> DeliveryResult
    lease_lost: bool = False
    channel_started: bool = False
    # The token the row held before this claim (None unless it recovers an expired lease):
    # releasing an unattempted claim puts it back, so the recovery flag is not lost.
    prior_lease_token: str | None = None
    stopped: bool = False  # a stop kept a channel of this claim from starting
    # Held from the stop check until CHANNEL_ATTEMPT_STARTED commits, so a claim is never
    # released while its first channel attempt is being recorded.
    gate: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    @property
    def effective(self) -> dict:
        return self.notification["metadata"]["uns_resolution"]["effective"]

    def context(self) -> AttemptContext:
        return AttemptContext(self.id, self.attempt, self.cycle, self.cycle_attempt, self.lease_token)


@dataclass(frozen=True)
class DispatchReport:
    """The result of one claimed row: ``status`` after settle, or ``"LEASE_LOST"``."""

    id: str
    status: str
    dead_letter: bool = False
    attempt: int = 0


def claim(runtime, limit: int) -> list[Claim]:
    """Claim up to ``limit`` due leaders in one committed transaction."""
    now = runtime.clock()
    claims = []
    with transaction.atomic():
        due = list(
            Notification.objects.select_for_update(skip_locked=True)
            .filter(status=PENDING, dedup_owner_id__isnull=True, next_attempt__lte=now, lease_until__lte=now)
            .order_by("next_attempt")
            .only("id", "lease_token", "attempts", "cycle", "cycle_attempts", "notification", "outcome")[:limit]
        )
        events = []
        for row in due:
            token = new_id()
            won = Notification.objects.filter(
                id=row.id, status=PENDING, lease_until__lte=now, lease_token=row.lease_token
            ).update(
                lease_token=token,
                lease_until=now + runtime.lease_seconds,
                attempts=F("attempts") + 1,
                cycle_attempts=F("cycle_attempts") + 1,
            )
            if not won:
                continue  # another worker (SQLite has no SKIP LOCKED) got there first
            c = Claim(row.id, token, row.attempts + 1, row.cycle, row.cycle_attempts + 1, row.notification, row.outcome,
                      prior_lease_token=row.lease_token)
            claims.append(c)
            events.append(records.event(row.id, records.ATTEMPT_STARTED, {
                "attempt": c.attempt,
                "cycle": c.cycle,
                "cycle_attempt": c.cycle_attempt,
                # A previous lease that ended without a settle may already have reached a provider.
                "recovery_may_repeat_provider_effect": row.lease_token is not None,
            }, now))
        records.insert_events(runtime, events)
    return claims


def _before_attempt(runtime, c: Claim, channel: str) -> bool:
    """Confirm the lease and write CHANNEL_ATTEMPT_STARTED in one transaction; False when lost."""
    now = runtime.clock()
    with transaction.atomic():
        held = Notification.objects.filter(id=c.id, lease_token=c.lease_token, lease_until__gt=now).update(
            lease_token=c.lease_token
        )
        if not held:
            return False
        records.insert_events(runtime, [records.event(c.id, records.CHANNEL_ATTEMPT_STARTED, {
            "channel": channel,
            "lease_token": c.lease_token,
            "attempt": c.attempt,
            "cycle": c.cycle,
            "cycle_attempt": c.cycle_attempt,
            "provider_effect_may_have_occurred": True,
        }, now)])
    c.channel_started = True
    return True


def _channel_result(runtime, c: Claim, channel: str, result: DeliveryResult) -> None:
    """Append CHANNEL_ATTEMPT_RESULT, attributed to the original lease, whatever the lease state."""
    now = runtime.clock()
    records.insert_events(runtime, [records.event(c.id, records.CHANNEL_ATTEMPT_RESULT, {
        "lease_token": c.lease_token,
        "attempt": c.attempt,
        "cycle": c.cycle,
        "cycle_attempt": c.cycle_attempt,
        "channel": channel,
        "success": result.success,
        "message_id": result.message_id,
        "error": result.error,
        "metadata": {**result.metadata, "retryable": result.retryable},
        "provider_observed_at": now,
    }, now)])


def _targets(names) -> dict[str, ChannelTarget]:
    return {
        ch.name: ChannelTarget(ch.name, ch.kind, ch.config or {}, ch.secret)
        for ch in Channel.objects.filter(name__in=list(names), enabled=True)
    }


def attempt(runtime, c: Claim, targets: dict[str, ChannelTarget], stop=None) -> None:
    """Run the adapters for every channel not yet delivered in this obligation, no transaction open.

    ``stop``: optional stop signal (``is_set()``); once set, no further channel starts and
    ``c.stopped`` is set instead.
    """
    done = set(c.outcome.get("channels_succeeded", []))
    for channel in c.effective["channels"]:
        if channel in done:
            continue
        with c.gate:
            if stop is not None and stop.is_set():
                c.stopped = True
                return
            if not _before_attempt(runtime, c, channel):
                c.lease_lost = True
                return
        target = targets.get(channel)
        adapter = runtime.adapters.get(target.kind) if target else None
        if target is None:
            result = DeliveryResult(False, retryable=False, error=f"channel {channel!r} is no longer configured")
        elif adapter is None:
            result = DeliveryResult(False, retryable=False, error=f"no adapter for channel kind {target.kind!r}")
        else:
            try:
                result = adapter.send(c.notification, target, c.context())
            except Exception as exc:  # an adapter bug must not lose the attempt's record
                log.exception("adapter %s raised for %s", target.kind, c.id)
                result = DeliveryResult(False, retryable=True, error=f"adapter raised {type(exc).__name__}: {exc}")
        _channel_result(runtime, c, channel, result)
        c.results[channel] = result


def _lease_lost_event(c: Claim, now: float) -> Event:
    return records.event(c.id, records.LEASE_LOST, {
        "lease_token": c.lease_token,
        "attempt": c.attempt,
        # The reference fixes this at true (before or after adapter execution): a lost lease
        # never proves that no provider effect happened.
        "provider_effect_may_have_occurred": True,
    }, now)


def _settle_one(runtime, c: Claim, now: float, events: list, audits: list) -> DispatchReport:
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
    all_succeeded = all(ch in succeeded for ch in eff["channels"])
    if c.stopped and not failed and not all_succeeded:
        # A stop came between channels and nothing failed: the rest is due at once, not a
        # failure (it neither backs off nor spends the budget into the DLQ).
        decision = Settlement(PENDING, False, False)
    else:
        decision = settle(
            delivery_mode=eff["delivery_mode"],
            all_succeeded=all_succeeded,
            permanent_failure=any(not r.retryable for r in failed.values()),
            cycle_attempts=c.cycle_attempt,
            max_attempts=int(eff["max_attempts"]),
        )
    check_status(PENDING, decision.status)
    changes = {"status": decision.status, "outcome": outcome, "dead_letter": decision.dead_letter,
               "lease_token": None, "lease_until": 0.0}
    if decision.retry:
        b = eff["backoff"]
        changes["next_attempt"] = now + backoff_seconds(
            cycle_attempt=c.cycle_attempt, base=b["base_seconds"], factor=b["factor"], cap=b["cap_seconds"],
            jitter=b["jitter"], unit_random=runtime.random(),
        )
    if decision.status == DELIVERED:
        changes["delivered_at"] = now
        if eff["require_ack"]:
            changes["ack_status"] = ACK_PENDING
            changes["deadline"] = now + 60.0 * float(eff["ack_timeout_minutes"])
    won = Notification.objects.filter(id=c.id, status=PENDING, lease_token=c.lease_token, lease_until__gt=now).update(
        **changes
    )
    if not won:
        events.append(_lease_lost_event(c, now))
        return DispatchReport(c.id, "LEASE_LOST", attempt=c.attempt)
    events.append(records.event(c.id, records.DELIVERY_RESULT, {
        "status": decision.status,
        "attempt": c.attempt,
        "cycle": c.cycle,
        "cycle_attempt": c.cycle_attempt,
        "dead_letter": decision.dead_letter,
        "outcome": outcome,
    }, now))
    row = Notification.objects.get(id=c.id)
    audits.append(records.delivery_audit(row, status=decision.status, outcome=outcome, at=now))
    if decision.status == DELIVERED:
        events.extend(followers.on_delivered(row, now))
    elif decision.status == FAILED:
        events.extend(followers.on_failed(row, now))
    return DispatchReport(c.id, decision.status, decision.dead_letter, c.attempt)


def settle_batch(runtime, claims: list[Claim]) -> list[DispatchReport]:
    """Settle every attempted claim in one transaction; lost leases only record LEASE_LOST."""
    now = runtime.clock()
    reports, events, audits = [], [], []
    with transaction.atomic():
        for c in claims:
            if c.lease_lost:
                events.append(_lease_lost_event(c, now))
                reports.append(DispatchReport(c.id, "LEASE_LOST", attempt=c.attempt))
            else:
                reports.append(_settle_one(runtime, c, now, events, audits))
        records.insert_events(runtime, events)
        NotificationAuditRecord.objects.bulk_create(audits)
    return reports


def release_unattempted(runtime, claims: list[Claim]) -> list[DispatchReport]:
    """Undo the claims of rows whose channels were never attempted (a stopping worker), in one
    transaction: each UPDATE names the claim's ``lease_token`` and puts back what the claim
    changed (``lease_token`` to the one held before, NULL unless the claim was a recovery;
    ``lease_until`` 0; ``attempts`` and ``cycle_attempts`` minus one), so another worker claims
    the row at once, with the same attempt number and without
    ``recovery_may_repeat_provider_effect``. No event is written: the catalog (reference
    section 3) has no kind for a released claim; the timeline shows the claim's ATTEMPT_STARTED
    with no CHANNEL_ATTEMPT_STARTED, then the next claim's. A claim whose token no longer
    matches (lease expired and taken) is left alone and reported ``LEASE_LOST`` without an event.
    Returns one ``DispatchReport`` per claim (``RELEASED`` or ``LEASE_LOST``)."""
    reports = []
    with transaction.atomic():
        for c in claims:
            undone = Notification.objects.filter(id=c.id, status=PENDING, lease_token=c.lease_token).update(
                lease_token=c.prior_lease_token,
                lease_until=0.0,
                attempts=F("attempts") - 1,
                cycle_attempts=F("cycle_attempts") - 1,
            )
            reports.append(DispatchReport(c.id, RELEASED if undone else "LEASE_LOST", attempt=c.attempt - 1))
    return reports


def _attempt_in_thread(runtime, c, targets, stop=None):
    try:
        attempt(runtime, c, targets, stop)
    finally:
        close_old_connections()


def _attempt_until_stopped(runtime, claims: list[Claim], targets, stop) -> tuple[list, list, list, list]:
    """Run the batch's attempts in a pool and wait for them, or, once ``stop`` is set, until
    its grace ends. Returns ``(finished, unattempted, in_flight, errors)``: claims to settle,
    claims to release, claims whose adapter call still runs (left to their lease), and the
    exceptions attempts raised (their claims are in none of the lists: left to their lease)."""
    pool = ThreadPoolExecutor(max_workers=max(1, min(runtime.concurrency, len(claims))))
    futures = {pool.submit(_attempt_in_thread, runtime, c, targets, stop): c for c in claims}
    pending = set(futures)
    try:
        while pending:
            if stop.is_set():
                left = stop.grace_left()
                if left <= 0:
                    break
                _done, pending = wait(pending, timeout=left)
            else:
                _done, pending = wait(pending, timeout=_STOP_POLL_SECONDS)
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
    finished, unattempted, in_flight, errors = [], [], [], []
    for future, c in futures.items():
        if future.done() and not future.cancelled():
            if future.exception() is not None:
                errors.append(future.exception())
            elif c.stopped and not c.channel_started:
                unattempted.append(c)
            else:
                finished.append(c)
        elif c.gate.acquire(blocking=False):
            # Never started, or between channels: no channel may start from now on.
            c.stopped = True
            started = c.channel_started
            c.gate.release()
            (in_flight if started else unattempted).append(c)
        else:
            in_flight.append(c)  # recording CHANNEL_ATTEMPT_STARTED or inside the adapter call
    return finished, unattempted, in_flight, errors


def dispatch(runtime, limit: int | None = None, stop=None) -> list[DispatchReport]:
    """One dispatch pass: claim (committed), attempt (no transaction), settle (one transaction).

    Returns one ``DispatchReport`` per claimed row. With ``runtime.concurrency > 1`` the adapter
    calls of a batch run in a thread pool.

    ``stop``: a stop signal (``notifications.runtime.worker.StopSignal``: ``is_set()``,
    ``grace_left()`` in seconds); see the module doc. With it the attempts always run in a pool
    so that the pass can return when the grace ends; then the reports also carry ``RELEASED``
    and ``IN_FLIGHT`` rows. If an attempt raised (the database went away, say), the rest is
    still settled and released, then the first exception is raised; that claim keeps its lease.
    """
    if stop is not None and stop.is_set():
        return []
    claims = claim(runtime, limit or runtime.batch_size)
    if not claims:
        return []
    targets = _targets({ch for c in claims for ch in c.effective["channels"]})
    if stop is not None:
        finished, unattempted, in_flight, errors = _attempt_until_stopped(runtime, claims, targets, stop)
        reports = settle_batch(runtime, finished) if finished else []
        if unattempted:
            reports += release_unattempted(runtime, unattempted)
        reports += [DispatchReport(c.id, IN_FLIGHT, attempt=c.attempt) for c in in_flight]
        if errors:
            raise errors[0]
        return reports
    if runtime.concurrency > 1 and len(claims) > 1:
        with ThreadPoolExecutor(max_workers=min(runtime.concurrency, len(claims))) as pool:
            list(pool.map(lambda c: _attempt_in_thread(runtime, c, targets), claims))
    else:
        for c in claims:
            attempt(runtime, c, targets)
    return settle_batch(runtime, claims)
