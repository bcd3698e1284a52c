"""``manage.py uns_maintain``: retention (``notifications.runtime.maintenance``). A dry run unless
``--apply``; never runs by itself and never vacuums the database.

    uns_maintain [--older-than DAYS|ISO-DATE] [--apply] [--archive DIR] [--batch-size N]
                 [--max-rows N] [--operator NAME] [--no-progress]

SIGINT/SIGTERM stop the run after the batch under way commits (exit 3); run again to resume.
"""
import getpass
import signal
import threading
from contextlib import contextmanager
from datetime import datetime, timezone

from django.core.management.base import CommandError

from notifications.management.base import OperationalCommand
from core.errors import UNSError
from notifications.apps import runtime
from notifications.runtime import maintenance

# Exit status of a run stopped by SIGINT/SIGTERM (what its committed batches did stays done).
EXIT_INTERRUPTED = 3
LABELS = {
    maintenance.NOTIFICATIONS: "notifications",
    maintenance.EVENTS: "events",
    maintenance.DELIVERY_AUDIT: "delivery audit records",
    maintenance.ACK_AUDIT: "ack audit records",
    maintenance.INBOX: "console inbox entries",
    maintenance.WINDOWS: "expired dedup windows",
}


class Command(OperationalCommand):
    help = (
        "Retention: prune terminal notifications (DELIVERED, DEDUPLICATED, FAILED without dead letter; "
        "acknowledgement settled or not required) older than --older-than, with their events, audit records "
        "and console inbox entries, and expired uns_dedup windows. A dry run (counts only) unless --apply. "
        "Dead letters, pending work, pending acknowledgements, undelivered callbacks and rows kept rows "
        "reference (replay lineage) are never pruned. --archive DIR writes each batch as verified gzipped "
        "JSON Lines first. Each batch is its own transaction with its own RETENTION_APPLIED receipt."
    )

    def add_arguments(self, parser):
        parser.add_argument("--apply", action="store_true", help="delete (default: a dry run that only counts)")
        parser.add_argument("--older-than", default=str(maintenance.DEFAULT_OLDER_THAN_DAYS),
                            help="days (e.g. 90) or an ISO 8601 date (e.g. 2026-09-01, UTC unless an offset is "
                                 f"given) (default: {maintenance.DEFAULT_OLDER_THAN_DAYS})")
        parser.add_argument("--batch-size", type=int, default=maintenance.DEFAULT_BATCH_SIZE,
                            help=f"rows per transaction, 1..{maintenance.MAX_BATCH_SIZE} "
                                 f"(default: {maintenance.DEFAULT_BATCH_SIZE})")
        parser.add_argument("--max-rows", type=int, default=None,
                            help="stop after deleting this many notifications plus dedup windows (run again to go on)")
        parser.add_argument("--archive", metavar="DIR", default=None,
                            help="archive each batch here (gzipped JSON Lines + manifest.json with SHA-256s), "
                                 "verified before it is deleted")
        parser.add_argument("--operator", default=None, help="who runs this, for the receipts (default: the OS user)")
        parser.add_argument("--no-progress", action="store_true", help="no progress bar (none either when stdout "
                                                                       "is not a terminal)")

    def handle(self, *args, apply=False, older_than=None, batch_size=None, max_rows=None, archive=None,
               operator=None, no_progress=False, **options):
        rt = runtime()
        stop = threading.Event()
        try:
            cutoff = maintenance.parse_cutoff(older_than, rt.clock())
            with _stop_on_signals(stop), _progress(self.stdout, enabled=not no_progress) as progress:
                report = maintenance.maintain(
                    rt, cutoff=cutoff, apply=apply, operator=operator or _os_user(), batch_size=batch_size,
                    max_rows=max_rows, archive=archive, progress=progress, should_stop=stop.is_set)
        except maintenance.ArchiveVerificationFailed as exc:
            raise CommandError(f"{exc.detail}. Nothing of that batch was deleted and the run stopped; batches "
                               "verified before it stay deleted (see their RETENTION_APPLIED receipts).") from None
        except UNSError as exc:
            raise CommandError(exc.detail) from None
        drain = getattr(rt.publish, "drain", None)  # let the receipts' live push leave before exit
        if drain is not None:
            drain(2.0)
        for line in report_lines(report):
            self.stdout.write(line)
        if report.stopped == "interrupted":
            raise CommandError("interrupted: the batches committed so far stay done; run again to resume",
                               returncode=EXIT_INTERRUPTED)


def report_lines(report: maintenance.MaintenanceReport) -> list[str]:
    """The human report of a run: mode, cutoff, rows per kind, what was kept, receipts."""
    lines = [("APPLIED" if report.applied else "DRY RUN (nothing deleted; add --apply to delete)")
             + f" at {_iso(report.now)} by {report.operator}",
             f"cutoff: {_iso(report.cutoff)} ({report.cutoff:.3f}); eligible terminal notifications: {report.eligible}",
             "deleted:" if report.applied else "would delete:"]
    for table in maintenance.TABLES:
        extra = ""
        if table == maintenance.NOTIFICATIONS and report.by_status:
            extra = "  (" + ", ".join(f"{status} {n}" for status, n in report.by_status.items()) + ")"
        lines.append(f"  {table:<28}{report.rows[table]:>10}  {LABELS[table]}{extra}")
    lines.append(f"  {'uns_series_rollups':<28}{report.series_rows:>10}  chart rollups past their retention "
                 "(1 min buckets: 2 days, 10 min: 8 days, 1 h: 35 days)")
    if report.kept_as_evidence:
        lines.append(f"kept: {report.kept_as_evidence} eligible notification(s) that kept rows reference "
                     "(replay lineage, dedup satisfaction) or that own a live dedup window")
    if report.archive:
        lines.append(f"archive: {report.archive} ({report.parts} part(s) written and verified)" if report.applied
                     else f"archive: {report.archive} (would be written there)")
    if report.receipts:
        lines.append(f"receipts: {len(report.receipts)} RETENTION_APPLIED event(s), last {report.receipts[-1]}")
    if report.stopped == "max_rows":
        lines.append("stopped at --max-rows: run again to go on")
    elif report.stopped == "interrupted":
        lines.append("interrupted: run again to resume")
    return lines


def _iso(at: float) -> str:
    return datetime.fromtimestamp(at, timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


def _os_user() -> str:
    try:
        return getpass.getuser()
    except Exception:  # no login name (a container without /etc/passwd entry)
        return "uns-maintain"


@contextmanager
def _stop_on_signals(stop: threading.Event):
    """SIGINT/SIGTERM set ``stop`` (the run ends after the batch under way); handlers restored after."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.signal(sig, lambda *_: stop.set()) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


@contextmanager
def _progress(stdout, *, enabled: bool):
    """A ``progress(phase, done, total)`` callable drawing a rich progress bar on ``stdout``, or
    one that does nothing when disabled or when ``stdout`` is not a terminal."""
    if not (enabled and stdout.isatty()):
        yield lambda *_: None
        return
    from rich.console import Console  # here, not at the top: rich loads only when a terminal shows progress
    from rich.progress import (  # here, not at the top: as above
        BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn)

    tasks = {}
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=Console(file=getattr(stdout, "_out", stdout)), transient=True) as bar:
        def update(phase, done, total):
            if phase not in tasks:
                tasks[phase] = bar.add_task(phase, total=total)
            bar.update(tasks[phase], completed=done, total=total)

        yield update
