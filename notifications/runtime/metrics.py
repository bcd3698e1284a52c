"""Prometheus metrics of the runtime (``prometheus_client``): the counters, which count committed
events only (``record_committed``, a subscriber of the ``committed`` hook in ``core.hooks``), the
attempt-duration histogram (``observe_attempt``), and the gauges read at scrape time
(``StateCollector``, ``WorkerCollector``). ``notifications.metrics_http`` serves them.

The metrics and their labels: docs/reference/metrics.md (generated from here). Why they are counted this way:
docs/explanation/metrics.md.
"""
import logging
import threading
import time
import weakref

from django.contrib.auth.models import Group
from prometheus_client import Counter, Histogram, disable_created_metrics
from prometheus_client.core import GaugeMetricFamily

from core.capabilities import GROUP_CAPABILITIES
from core.transitions import ACK_PENDING

from ..models import Event, Notification
from . import counts, timeline
from .dedup import DEDUPLICATED, FOLLOWER, LEADER
from .dlq import dead_letter_depth, oldest_dead_letter_failed_at

log = logging.getLogger("uns.metrics")

# No ``*_created`` series next to every counter and histogram: they double the series and the
# start time is ``process_start_time_seconds`` anyway.
disable_created_metrics()

ACCEPTED = Counter("uns_notifications_accepted", "Notifications accepted (new rows; a repeat of a stored "
                   "request is not counted).", ["principal_class", "dedup_role"])
CHANNEL_DELIVERIES = Counter("uns_channel_deliveries", "Provider observations of channel attempts "
                             "(CHANNEL_ATTEMPT_RESULT), by channel name and outcome.", ["channel", "outcome"])
DELIVERY_RESULTS = Counter("uns_delivery_results", "Settled dispatch attempts (DELIVERY_RESULT) by the status "
                           "they settled to (PENDING is a retry).", ["status"])
RETRIES = Counter("uns_retries", "Dispatch attempts settled back to PENDING for another attempt.")
DEAD_LETTERED = Counter("uns_dead_lettered", "Notifications dead-lettered (DELIVERY_RESULT with dead_letter).")
LEASE_LOST = Counter("uns_lease_lost", "Claims whose lease was lost before their settle (LEASE_LOST events).")
TIMED_OUT = Counter("uns_ack_timed_out", "Acknowledgement deadlines swept by the timeout worker (TIMED_OUT).")
LIVE_PUSH_FAILURES = Counter("uns_live_push_failures", "Live pushes of committed events the channel layer "
                             "refused (subscribers catch up from the timeline).")
ATTEMPT_SECONDS = Histogram("uns_channel_attempt_seconds", "Duration of one channel attempt (the adapter "
                            "call), in seconds.", ["channel"],
                            buckets=(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0))
GROUP_COMMIT = Histogram("uns_group_commit_batch_size", "Requests written per transaction by the group commit, "
                         "by work (accept, ack); 1: a request that found the writer idle and wrote alone.",
                         ["work"], buckets=(1, 2, 4, 8, 16, 32))

# principal -> (class, expires at, time.monotonic): one indexed query per principal per TTL.
_CLASS_TTL_SECONDS = 300.0
_CLASS_CACHE_MAX = 4096
_classes: dict[str, tuple[str, float]] = {}
_classes_guard = threading.Lock()


def principal_class(principal: str | None, *, clock=time.monotonic) -> str:
    """The bounded label for ``principal``, never its name: its seeded groups
    (``access.GROUP_CAPABILITIES``) sorted and joined by ``+`` (``producer``), ``other`` for a user
    only in other groups, ``none`` for no group or no user. Cached per process for 5 minutes."""
    if not principal:
        return "none"
    now = clock()
    with _classes_guard:
        hit = _classes.get(principal)
    if hit is not None and hit[1] > now:
        return hit[0]
    names = set(Group.objects.filter(user__username=principal).values_list("name", flat=True))
    seeded = sorted(names & set(GROUP_CAPABILITIES))
    value = "+".join(seeded) if seeded else ("other" if names else "none")
    with _classes_guard:
        if len(_classes) >= _CLASS_CACHE_MAX:
            _classes.clear()
        _classes[principal] = (value, now + _CLASS_TTL_SECONDS)
    return value


def record_committed(events, *, principal: str | None = None) -> None:
    """Count committed ``events`` (one ``insert_events`` batch; ``principal``: the intake's
    principal, for ACCEPTED). Called after commit only; never raises into the caller's path
    (``hooks`` logs a failure)."""
    linked = {e.notification_id: (e.payload or {}).get("owner_status")
              for e in events if e.kind == timeline.DEDUP_LINKED}
    for e in events:
        kind, payload = e.kind, e.payload or {}
        if kind == timeline.ACCEPTED:
            if e.notification_id not in linked:
                role = LEADER
            else:
                role = DEDUPLICATED if linked[e.notification_id] == "DELIVERED" else FOLLOWER
            ACCEPTED.labels(principal_class(principal), role).inc()
        elif kind == timeline.CHANNEL_ATTEMPT_RESULT:
            CHANNEL_DELIVERIES.labels(str(payload.get("channel")), "success" if payload.get("success") else "failure").inc()
        elif kind == timeline.DELIVERY_RESULT:
            status = str(payload.get("status"))
            DELIVERY_RESULTS.labels(status).inc()
            if status == "PENDING":
                RETRIES.inc()
            if payload.get("dead_letter"):
                DEAD_LETTERED.inc()
        elif kind == timeline.LEASE_LOST:
            LEASE_LOST.inc()
        elif kind == timeline.TIMED_OUT:
            TIMED_OUT.inc()


def observe_group_commit(work: str, size: int) -> None:
    """One transaction of the group commit (``group_commit.GroupCommit``) of ``work`` holding
    ``size`` requests."""
    GROUP_COMMIT.labels(work).observe(size)


def observe_attempt(channel: str, seconds: float) -> None:
    """One channel attempt of ``seconds`` (clamped at 0: the runtime's clock is wall time)."""
    ATTEMPT_SECONDS.labels(channel).observe(max(0.0, seconds))


# The gauges read at scrape time (``StateCollector``, ``WorkerCollector``), declared once: name ->
# (type, labels, help). The collectors build their families from here (``_gauge``) and the
# metrics reference page is generated from it.
SCRAPE_GAUGES: dict[str, tuple[str, tuple[str, ...], str]] = {
    "uns_metrics_database_up": ("gauge", (), "1 when the scrape-time database queries succeeded."),
    "uns_notifications": ("gauge", ("status",), "Notifications by status."),
    "uns_notifications_by_ack_status": ("gauge", ("ack_status",), "Notifications by ack_status (NONE: no ack "
                                        "state)."),
    "uns_dead_letters": ("gauge", (), "Dead-lettered notifications (the DLQ's depth)."),
    "uns_dead_letter_oldest_age_seconds": ("gauge", (), "Seconds since the oldest dead letter failed (0 when "
                                           "the DLQ is empty)."),
    "uns_ack_pending": ("gauge", (), "Acknowledgements pending."),
    "uns_ack_oldest_deadline_timestamp_seconds": ("gauge", (), "The soonest deadline of a pending "
                                                  "acknowledgement (epoch seconds)."),
    "uns_callback_outbox": ("gauge", (), "Events awaiting delivery of their callback."),
    "uns_worker_loop_last_pass_age_seconds": ("gauge", ("loop",), "Seconds since the worker loop last "
                                              "finished a pass."),
}


def _gauge(name: str, value: float | None = None) -> GaugeMetricFamily:
    """The family of the declared gauge ``name`` (``SCRAPE_GAUGES``), with ``value`` when it has no labels."""
    _, labels, help_text = SCRAPE_GAUGES[name]
    if labels:
        return GaugeMetricFamily(name, help_text, labels=list(labels))
    return GaugeMetricFamily(name, help_text, value=value)


# --- scrape-time gauges ---------------------------------------------------------------------

class StateCollector:
    """Gauges read from the database at each scrape (a ``prometheus_client`` custom collector):

    - ``uns_notifications{status}``, ``uns_notifications_by_ack_status{ack_status}`` (``NONE``:
      no ack state): ``counts.by_state()`` (maintained counts on PostgreSQL, one query);
    - ``uns_dead_letters``: depth of the DLQ (status FAILED, dead_letter true; partial index);
    - ``uns_dead_letter_oldest_age_seconds``: seconds since the oldest dead letter failed (0
      with an empty DLQ; ``dlq.oldest_dead_letter_failed_at``, one index probe);
    - ``uns_ack_pending``: acknowledgements pending (``by_state``);
    - ``uns_ack_oldest_deadline_timestamp_seconds``: the soonest pending deadline, epoch
      seconds (absent with none pending; ``ix_uns_response``, one row);
    - ``uns_callback_outbox``: events awaiting their callback (``ix_uns_callbacks``);
    - ``uns_metrics_database_up``: 1, or 0 when these queries failed (the others are then absent).

    ``clock``: epoch seconds (``time.time``), the runtime's timestamps being epoch seconds."""

    def __init__(self, clock=time.time):
        self.clock = clock

    def describe(self):
        return []  # no queries at registration

    def collect(self):
        up = _gauge("uns_metrics_database_up")
        try:
            by_status, by_ack = counts.by_state()
            depth = dead_letter_depth()
            oldest = oldest_dead_letter_failed_at() if depth else None
            deadline = (Notification.objects.filter(ack_status=ACK_PENDING, deadline__isnull=False)
                        .order_by("deadline").values_list("deadline", flat=True).first())
            outbox = Event.objects.filter(callback_pending=True).count()
        except Exception:
            log.warning("metrics: database gauges unavailable", exc_info=True)
            up.add_metric([], 0)
            yield up
            return
        now = self.clock()
        up.add_metric([], 1)
        yield up
        g = _gauge("uns_notifications")
        for status, n in sorted(by_status.items()):
            g.add_metric([status], n)
        yield g
        g = _gauge("uns_notifications_by_ack_status")
        for status, n in sorted(by_ack.items()):
            g.add_metric([status], n)
        yield g
        yield _gauge("uns_dead_letters", depth)
        yield _gauge("uns_dead_letter_oldest_age_seconds", 0.0 if oldest is None else max(0.0, now - oldest))
        yield _gauge("uns_ack_pending", by_ack.get(ACK_PENDING, 0))
        if deadline is not None:
            yield _gauge("uns_ack_oldest_deadline_timestamp_seconds", deadline)
        yield _gauge("uns_callback_outbox", outbox)


_workers: "weakref.WeakSet" = weakref.WeakSet()


def track_worker(worker) -> None:
    """Report ``worker``'s loops (``Worker.loop_ages``) in this process's metrics."""
    _workers.add(worker)


def untrack_worker(worker) -> None:
    _workers.discard(worker)


class WorkerCollector:
    """``uns_worker_loop_last_pass_age_seconds{loop}``: seconds since each loop of the tracked
    workers last finished a pass (since the worker started when it has not yet); the largest
    when several workers run a loop. Absent when this process runs no worker. No queries."""

    def describe(self):
        return []

    def collect(self):
        ages: dict[str, float] = {}
        for worker in list(_workers):
            for loop, age in worker.loop_ages().items():
                ages[loop] = max(age, ages.get(loop, 0.0))
        if not ages:
            return
        g = _gauge("uns_worker_loop_last_pass_age_seconds")
        for loop, age in sorted(ages.items()):
            g.add_metric([loop], age)
        yield g
