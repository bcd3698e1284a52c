"""Retention (the spec's ``uns.maintenance``): bounded, default-dry-run pruning of terminal work,
with an optional verified archive before anything is deleted. ``eligible`` decides what may go,
``maintain`` deletes it in batches, each one transaction with its own ``RETENTION_APPLIED``
receipt. Nothing here runs automatically and nothing vacuums the database; ``manage.py
uns_maintain`` is the shell that calls ``maintain``.

What is kept and why (satisfaction evidence, dedup windows, batches): docs/explanation/maintenance.md.
"""
import gzip
import hashlib
import json
import os
import re
from collections import Counter
from contextlib import nullcontext
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

from django.db import transaction
from django.db.models import Exists, OuterRef, Q

from core import codes
from core.errors import Conflict, InvalidRequest, UNSError
from core.keys import canonical_json
from core.transitions import ACK_TERMINAL, DEDUPLICATED, DELIVERED, FAILED

from ..models import (AcceptedAt, AckAuditRecord, Dedup, EarlyResponse, Event, InboxMessage, Notification,
                      NotificationAuditRecord, SilenceHold)
from . import series, timeline
from .dlq import MAX_LINEAGE_LINKS

DAY = 86400.0
DEFAULT_OLDER_THAN_DAYS = 90
DEFAULT_BATCH_SIZE = 500
MAX_BATCH_SIZE = 10_000
TERMINAL = (DELIVERED, DEDUPLICATED, FAILED)

# The tables a batch prunes, in archive order, with the column that ties a row to its
# notification (None: the notification itself, keyed by ``id``; ``uns_dedup`` is keyed by ``key``).
NOTIFICATIONS, EVENTS, DELIVERY_AUDIT, ACK_AUDIT, INBOX, WINDOWS = (
    "uns_notifications", "uns_events", "notification_audit_records", "ack_audit_records", "uns_console_inbox",
    "uns_dedup")
TABLES = (NOTIFICATIONS, EVENTS, DELIVERY_AUDIT, ACK_AUDIT, INBOX, WINDOWS)
_CHILDREN = {EVENTS: Event, DELIVERY_AUDIT: NotificationAuditRecord, ACK_AUDIT: AckAuditRecord, INBOX: InboxMessage}

ARCHIVE_FORMAT = "uns-retention-archive/1"
MANIFEST = "manifest.json"


class ArchiveFailed(UNSError):
    """The archive could not be written or read back as written; nothing of the batch was
    deleted. ``detail`` says why (which file, which check)."""

    code = codes.ARCHIVE_FAILED


class ArchiveVerificationFailed(ArchiveFailed):
    """What was read back from the archive is not what was written (hash, count, ids or bytes)."""

    code = codes.ARCHIVE_VERIFICATION_FAILED


def parse_cutoff(value, now: float) -> float:
    """The cutoff (epoch seconds) of ``--older-than``: a number of days before ``now`` (``"90"``,
    ``"0.5"``, or a number), or an ISO 8601 date or date-time (``"2026-09-01"``,
    ``"2026-09-01T12:00:00+02:00"``; without an offset it is UTC).

    Raises ``InvalidRequest`` ``invalid_older_than`` for anything else, a negative number of
    days, a moment after ``now``, or one before the epoch (1970-01-01: no notification is older,
    and such dates do not print)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        days = float(value)
    else:
        text = str(value).strip()
        days = float(text) if re.fullmatch(r"[+-]?\d+(\.\d+)?", text) else None
        if days is None:
            try:
                moment = datetime.fromisoformat(text)
            except ValueError:
                raise InvalidRequest(f"--older-than {text!r} is neither a number of days nor an ISO 8601 date "
                                     "(e.g. 90 or 2026-09-01)", code=codes.INVALID_OLDER_THAN) from None
            if moment.tzinfo is None:
                moment = moment.replace(tzinfo=timezone.utc)
            cutoff = moment.timestamp()
            if cutoff > now:
                raise InvalidRequest(f"--older-than {text!r} is in the future", code=codes.INVALID_OLDER_THAN)
            return _after_epoch(cutoff, value)
    if days != days or days in (float("inf"), float("-inf")) or days < 0:
        raise InvalidRequest(f"--older-than must be a non-negative number of days, not {value!r}",
                             code=codes.INVALID_OLDER_THAN)
    return _after_epoch(now - days * DAY, value)


def _after_epoch(cutoff: float, value) -> float:
    if cutoff < 0:
        raise InvalidRequest(f"--older-than {value!r} reaches before 1970-01-01", code=codes.INVALID_OLDER_THAN)
    return cutoff


def eligible(cutoff: float):
    """The notifications retention may prune at ``cutoff`` (epoch seconds), before the
    satisfaction-evidence rule (a row a kept row references stays; docs/explanation/maintenance.md),
    annotated with ``accepted`` (the acceptance time, as indexed by ``ix_uns_accepted``).

    Eligible: terminal (DELIVERED, DEDUPLICATED, or FAILED without dead letter), acknowledgement
    settled or never required, no automatic escalation due, accepted before the cutoff, no event
    at or after it, and no event in the callback outbox or holding an undelivered callback
    (``callback_pending``, or a ``callback_error`` after at least one attempt; a row closed unsent
    for want of a destination, 0 attempts, does not keep it). Pruning one also deletes its
    ``uns_events``, ``notification_audit_records``, ``ack_audit_records`` and
    ``uns_console_inbox`` rows."""
    recent_or_outbox = Event.objects.filter(notification_id=OuterRef("id")).filter(
        Q(at__gte=cutoff) | Q(callback_pending=True) | Q(callback_error__isnull=False, callback_attempts__gt=0))
    return (Notification.objects.annotate(accepted=AcceptedAt())
            .filter(accepted__lt=cutoff, status__in=TERMINAL, dead_letter=False, escalation_due__isnull=True)
            .filter(Q(ack_status__isnull=True) | Q(ack_status__in=ACK_TERMINAL))
            .exclude(Exists(recent_or_outbox)))


@dataclass
class MaintenanceReport:
    """What a run did (``applied``) or would do (a dry run).

    ``cutoff``/``now``: epoch seconds. ``rows``: ``{table: rows}`` deleted, or that would be,
    for every table in ``TABLES``. ``by_status``: the pruned notifications by status.
    ``eligible``: terminal notifications older than the cutoff when the run started.
    ``kept_as_evidence``: eligible notifications kept because a kept row references them (or
    they own a live dedup window). ``receipts``: ids of the RETENTION_APPLIED events written.
    ``parts``: archive parts written and verified. ``stopped``: None when the run finished,
    ``"max_rows"`` or ``"interrupted"`` when it stopped early (run again to go on).
    ``series_rows``: time-series rollup rows past their step's retention (``series.prune``:
    fixed retentions, not the cutoff), deleted or that would be.
    """

    cutoff: float
    now: float
    applied: bool
    operator: str
    archive: str | None = None
    rows: dict = field(default_factory=lambda: dict.fromkeys(TABLES, 0))
    by_status: dict = field(default_factory=dict)
    eligible: int = 0
    kept_as_evidence: int = 0
    batches: int = 0
    receipts: list = field(default_factory=list)
    parts: int = 0
    stopped: str | None = None
    series_rows: int = 0


def maintain(runtime, *, cutoff: float, apply: bool = False, operator: str, batch_size: int = DEFAULT_BATCH_SIZE,
             max_rows: int | None = None, archive: str | os.PathLike | None = None,
             progress: Callable[[str, int, int | None], None] | None = None,
             should_stop: Callable[[], bool] | None = None,
             after_write: Callable[[dict], None] | None = None) -> MaintenanceReport:
    """Prune (``apply``) or count (dry run, the default) terminal work older than ``cutoff``.

    ``cutoff``: epoch seconds (see ``parse_cutoff``); ``operator``: who runs it (recorded in each
    receipt). ``batch_size``: notifications (or windows) examined per transaction, 1..10000.
    ``max_rows``: at most this many notifications plus dedup windows deleted in this run (None:
    no limit). ``archive``: a directory; each batch is written there as a part of gzipped JSON
    Lines files (one per table) listed in ``manifest.json`` with row counts and a SHA-256 per
    file, read back and verified before the batch deletes anything. A dry run writes nothing.
    ``progress(phase, done, total)``: called as batches finish (phase ``"notifications"`` or
    ``"dedup windows"``). ``should_stop()``: checked before each batch; True stops the run
    (``stopped="interrupted"``). ``after_write(files)``: called with ``{table: Path}`` between
    writing a part and reading it back (a test seam).

    Every applied run writes at least one RETENTION_APPLIED receipt (a run that deleted nothing
    writes one with zero counts); each batch that deletes writes its own in its transaction.
    Receipt payload (catalog): ``operator``, ``cutoff``, ``deleted_rows`` (``{table: rows}``),
    ``notification_ids``, ``dedup_keys`` (the windows deleted), and ``archive`` (the verified
    part: ``path``, ``manifest``, ``manifest_sha256``, ``part``, ``verified``, ``files``) or
    ``removed: true`` (deleted without an archive). The receipt's ``notification_id`` is its own id.

    Raises ``InvalidRequest`` (a batch size outside 1..10000, a ``max_rows`` below 1);
    ``ArchiveFailed`` when the archive directory is unusable (before anything is deleted);
    ``ArchiveVerificationFailed`` when a part does not read back as written: that batch deletes
    nothing, its files are removed, a receipt with zero counts and ``archive.verified: false``
    records the failure, and the run stops (batches committed before it stay done).
    """
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or not 1 <= batch_size <= MAX_BATCH_SIZE:
        raise InvalidRequest(f"batch size must be an integer from 1 to {MAX_BATCH_SIZE}, not {batch_size!r}",
                             code=codes.INVALID_BATCH_SIZE)
    if max_rows is not None and (isinstance(max_rows, bool) or not isinstance(max_rows, int) or max_rows < 1):
        raise InvalidRequest(f"max rows must be a positive integer, not {max_rows!r}", code=codes.INVALID_MAX_ROWS)
    now = runtime.clock()
    report = MaintenanceReport(cutoff=float(cutoff), now=now, applied=apply, operator=operator)
    store = None
    if archive is not None:
        store = Archive(archive)
        report.archive = str(store.path)
        if apply:
            store.open()
    run = _Run(runtime, report, batch_size, max_rows, store, progress or (lambda *_: None),
               should_stop or (lambda: False), after_write)
    try:
        run.notifications()
        if report.stopped is None:
            run.windows()
        if report.stopped is None:
            # The charts' rollups age out by their own retention (a few rows per bucket, one
            # DELETE per step), whatever the cutoff: they hold counts, no notification's data.
            report.series_rows = series.prune(runtime.clock(), apply)
    except ArchiveVerificationFailed as exc:
        if apply:
            run.receipt(_zero_rows(), [], [], archive={"path": report.archive, "part": exc.extra.get("part"),
                                                        "verified": False, "error": exc.detail})
        raise
    if apply and not report.receipts:
        run.receipt(_zero_rows(), [], [], archive=store.summary() if store else None)
    return report


def _zero_rows() -> dict:
    return dict.fromkeys(TABLES, 0)


@dataclass
class _Row:
    id: str
    accepted: float
    status: str
    dedup_key: str | None
    owner: str | None
    successor: str | None


class _Run:
    """One run's state: the budget, the cursor and, in a dry run, the keyed rows it counted as
    gone (only rows with a dedup key can reference or be referenced, so only those are kept)."""

    def __init__(self, runtime, report, batch_size, max_rows, store, progress, should_stop, after_write):
        self.runtime, self.report, self.batch_size, self.store = runtime, report, batch_size, store
        self.remaining = max_rows
        self.progress, self.should_stop, self.after_write = progress, should_stop, after_write
        self.apply = report.applied
        self.gone: set[str] = set()
        self.kept: set[str] = set()
        self.status = Counter()

    # --- budget -------------------------------------------------------------------------------
    def _limit(self) -> int | None:
        """Rows the next batch may examine, or None when the run must stop."""
        if self.should_stop():
            self.report.stopped = "interrupted"
            return None
        if self.remaining is not None and self.remaining <= 0:
            self.report.stopped = "max_rows"
            return None
        return self.batch_size if self.remaining is None else min(self.batch_size, self.remaining)

    def _spend(self, n: int) -> None:
        if self.remaining is not None:
            self.remaining -= n

    def _atomic(self):
        # A dry run reads without a transaction: on SQLite (IMMEDIATE) one would take the write lock.
        return transaction.atomic() if self.apply else nullcontext()

    # --- notifications ------------------------------------------------------------------------
    def notifications(self) -> None:
        cutoff = self.report.cutoff
        total = self.report.eligible = eligible(cutoff).count()
        self.progress("notifications", 0, total)
        done, after, deferred = 0, None, []
        while (limit := self._limit()) is not None:
            qs = eligible(cutoff)
            if after is not None:
                qs = qs.filter(Q(accepted__gt=after[0]) | Q(accepted=after[0], id__gt=after[1]))
            result = self._batch(qs, limit)
            if result is None:
                break
            examined, last, waiting = result
            after = (last.accepted, last.id)
            deferred.extend(waiting)
            done += examined
            self.progress("notifications", done, total)
        # Rows held only because an eligible row outside their batch referenced them: that row
        # is usually gone by now, so they get another chance (a few passes, while any goes).
        for _ in range(MAX_LINEAGE_LINKS):
            if not deferred or self.report.stopped:
                break
            before, retry, deferred = self.report.rows[NOTIFICATIONS], deferred, []
            while retry and (limit := self._limit()) is not None:
                chunk, retry = retry[:limit], retry[limit:]
                result = self._batch(eligible(cutoff).filter(id__in=chunk), limit)
                if result is not None:
                    deferred.extend(result[2])
            deferred.extend(retry)
            if self.report.rows[NOTIFICATIONS] == before:
                break
        if self.report.stopped is None:  # a run stopped early has not given them their chance
            self.kept.update(deferred)
        self.kept.difference_update(self.gone)
        self.report.kept_as_evidence = len(self.kept)
        self.report.by_status = dict(sorted(self.status.items()))

    def _batch(self, qs, limit):
        """One transaction: returns ``(examined, last row, deferred ids)`` or None when no
        candidate is left."""
        with self._atomic():
            if self.apply:
                qs = qs.select_for_update(skip_locked=True)
            rows = [_Row(*values) for values in qs.order_by("accepted", "id").values_list(
                "id", "accepted", "status", "dedup_key", "dedup_owner_id", "dedup_successor_id")[:limit]]
            if not rows:
                return None
            keys = sorted({r.dedup_key for r in rows if r.dedup_key})
            if keys and self.apply:  # intake and settlement lock the window first: they wait for us
                list(Dedup.objects.select_for_update().filter(key__in=keys).order_by("key").values_list("key"))
            kept, deferred = self._withhold(rows)
            doomed = [r for r in rows if r.id not in kept and r.id not in deferred]
            self.kept.update(kept)
            if doomed:
                self._prune([r.id for r in doomed], [], by_status=Counter(r.status for r in doomed))
                self.gone.update(r.id for r in doomed if r.dedup_key and not self.apply)
                self.kept.difference_update(r.id for r in doomed)
        self.report.batches += 1
        return len(rows), rows[-1], [r.id for r in rows if r.id in deferred]

    def _withhold(self, rows: list[_Row]) -> tuple[set[str], set[str]]:
        """``(kept, deferred)`` ids of the batch: rows that must stay because something that
        stays references them. Kept: referenced by a row that is not eligible, owner of a live
        window, or referenced (transitively) by such a row of the batch. Deferred: referenced
        only by eligible rows outside the batch (retried after those had their chance)."""
        by_id = {r.id: r for r in rows}
        keyed = [r.id for r in rows if r.dedup_key]
        kept, deferred = set(), set()
        if not keyed:
            return kept, deferred
        now = self.runtime.clock()
        keys = {r.dedup_key for r in rows if r.dedup_key}
        kept.update(owner for owner in Dedup.objects.filter(key__in=keys, until__gt=now).values_list(
            "owner_id", flat=True) if owner in by_id)
        referrers = [r for r in Notification.objects.filter(
            Q(dedup_successor_id__in=keyed) | Q(dedup_owner_id__in=keyed)).values_list(
            "id", "dedup_owner_id", "dedup_successor_id") if r[0] not in by_id and r[0] not in self.gone]
        if referrers:
            movable = set(eligible(self.report.cutoff).filter(id__in=[r[0] for r in referrers])
                          .values_list("id", flat=True))
            for rid, owner, successor in referrers:
                (deferred if rid in movable else kept).update(t for t in (owner, successor) if t in by_id)
        _close(kept, by_id, kept)
        deferred -= kept
        _close(deferred, by_id, deferred | kept)
        return kept, deferred - kept

    # --- dedup windows ------------------------------------------------------------------------
    def windows(self) -> None:
        now = self.runtime.clock()
        expired = Dedup.objects.filter(until__lte=now)
        total, done, after = expired.count(), 0, None
        self.progress("dedup windows", 0, total)
        while (limit := self._limit()) is not None:
            with self._atomic():
                qs = expired if after is None else expired.filter(key__gt=after)
                if self.apply:
                    qs = qs.select_for_update(skip_locked=True)
                windows = list(qs.order_by("key").values_list("key", "owner_id")[:limit])
                if not windows:
                    break
                after = windows[-1][0]
                owners = {owner for _, owner in windows if owner}
                present = set(Notification.objects.filter(id__in=owners).values_list("id", flat=True)) - self.gone
                doomed = [key for key, owner in windows if not owner or owner not in present]
                if doomed:
                    self._prune([], doomed)
            self.report.batches += 1
            done += len(windows)
            self.progress("dedup windows", done, total)

    # --- one batch's deletion -----------------------------------------------------------------
    def _prune(self, ids: list[str], keys: list[str], by_status: Counter | None = None) -> None:
        """Delete (or, in a dry run, count) the notifications ``ids`` with their rows and the
        windows ``keys``: archive and verify first when archiving, then the receipt. Runs inside
        the batch's transaction."""
        if not self.apply:
            counts = {NOTIFICATIONS: len(ids), WINDOWS: len(keys)}
            for table, model in _CHILDREN.items():
                counts[table] = _children(model, ids).count() if ids else 0
        else:
            counts = self._delete(ids, keys)
        for table, n in counts.items():
            self.report.rows[table] += n
        self.status.update(by_status or {})
        self._spend(len(ids) + len(keys))

    def _delete(self, ids: list[str], keys: list[str]) -> dict:
        rows = {NOTIFICATIONS: Notification.objects.filter(id__in=ids), WINDOWS: Dedup.objects.filter(key__in=keys)}
        for table, model in _CHILDREN.items():
            rows[table] = _children(model, ids)
        archived = None
        if self.store is not None:
            data = {table: [_as_dict(obj) for obj in qs.order_by(*_order(table))] for table, qs in rows.items()}
            archived = self.store.write_part(data, cutoff=self.report.cutoff, operator=self.report.operator,
                                             now=self.runtime.clock(), after_write=self.after_write)
            self.report.parts += 1
        counts = {}
        for table in (EVENTS, DELIVERY_AUDIT, ACK_AUDIT, INBOX, NOTIFICATIONS, WINDOWS):
            counts[table] = rows[table].delete()[0]
            expected = archived["files"][table]["rows"] if archived else None
            if expected is not None and counts[table] != expected:
                raise ArchiveFailed(f"{table}: {counts[table]} row(s) to delete but {expected} archived; the rows "
                                    "changed while the batch ran, nothing of it was deleted (run again)")
        if counts[NOTIFICATIONS] != len(ids):
            raise Conflict(f"{len(ids)} notification(s) planned but {counts[NOTIFICATIONS]} deleted; the batch "
                           "was rolled back (run again)", code=codes.CONCURRENT_CHANGE)
        # The silences' and early responses' bookkeeping of these notifications goes with them,
        # neither archived nor counted: what it held is on the archived timeline (SILENCED,
        # RESPONSE_BEFORE_DELIVERY, DELIVERY_WITHHELD events).
        SilenceHold.objects.filter(notification_id__in=ids).delete()
        EarlyResponse.objects.filter(notification_id__in=ids).delete()
        self.receipt(counts, ids, keys, archive=archived)
        return counts

    def receipt(self, counts: dict, ids: list[str], keys: list[str], *, archive: dict | None) -> None:
        """Write one RETENTION_APPLIED receipt (in the caller's transaction, if any)."""
        payload = {"operator": self.report.operator, "cutoff": self.report.cutoff,
                   "deleted_rows": {table: counts.get(table, 0) for table in TABLES},
                   "notification_ids": list(ids), "dedup_keys": list(keys)}
        if archive is not None:
            payload["archive"] = archive
        else:
            payload["removed"] = True
        ev = timeline.event("", timeline.RETENTION_APPLIED, payload, self.runtime.clock())
        ev.notification_id = ev.id  # the receipt's own id (reference 2.2): no notification row
        timeline.insert_events(self.runtime, [ev])
        self.report.receipts.append(ev.id)


def _close(seeds: set[str], by_id: dict, stop: set[str]) -> None:
    """Add to ``seeds`` every row of the batch that a row in ``seeds`` references, transitively
    (rows in ``stop`` are not followed again)."""
    stack, seen = list(seeds), set(stop) | set(seeds)
    while stack:
        r = by_id[stack.pop()]
        for target in (r.owner, r.successor):
            if target in by_id and target not in seen:
                seen.add(target)
                seeds.add(target)
                stack.append(target)


def _children(model, ids):
    qs = model.objects.filter(notification_id__in=ids)
    return qs.exclude(kind=timeline.RETENTION_APPLIED) if model is Event else qs  # receipts are never pruned


def _order(table: str) -> tuple:
    if table == WINDOWS:
        return ("key",)
    if table == NOTIFICATIONS:
        return ("id",)
    return ("notification_id", "at", "id") if table == EVENTS else ("notification_id", "id")


def _as_dict(obj) -> dict:
    """Every column of a row by its column name, as stored (JSON columns as their values)."""
    return {f.column: f.value_from_object(obj) for f in obj._meta.concrete_fields}


def _row_key(table: str, row: dict) -> str:
    return row["key"] if table == WINDOWS else row["id"]


# --- the archive ------------------------------------------------------------------------------
class Archive:
    """A retention archive: a directory of parts, one per batch, each one gzipped JSON Lines
    file per table (``part-00001-uns_events.jsonl.gz``: one row per line, canonical JSON, the
    columns by name), and ``manifest.json``::

        {"format": "uns-retention-archive/1",
         "counts": {table: rows in all parts},
         "parts": [{"part": 1, "created_at": epoch s, "cutoff": epoch s, "operator": "...",
                    "files": {table: {"file": "...", "rows": n, "bytes": n, "sha256": "..."}}}]}

    A part is listed in the manifest only after every file of it read back as written (a part
    file the manifest does not list is not part of the archive). Running again with the same
    directory adds parts. A part may hold a row again when the deletion of
    an earlier part did not commit: restore by id (``key`` for ``uns_dedup``).
    """

    def __init__(self, path):
        self.path = Path(path).expanduser().absolute()
        self.manifest = {"format": ARCHIVE_FORMAT, "counts": dict.fromkeys(TABLES, 0), "parts": []}
        self.manifest_sha256 = None

    def open(self) -> None:
        """Create the directory (and parents) or load its manifest. Raises ``ArchiveFailed``
        when the path is not a usable directory or holds a manifest that is not a UNS archive's."""
        try:
            self.path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ArchiveFailed(f"archive {self.path}: cannot create the directory: {exc}") from None
        if not self.path.is_dir():
            raise ArchiveFailed(f"archive {self.path} is not a directory")
        if not os.access(self.path, os.W_OK | os.X_OK):
            raise ArchiveFailed(f"archive {self.path} is not writable")
        manifest = self.path / MANIFEST
        if manifest.exists():
            try:
                raw = manifest.read_bytes()
                loaded = json.loads(raw)
            except (OSError, ValueError) as exc:
                raise ArchiveFailed(f"archive {manifest}: cannot read it: {exc}") from None
            if not isinstance(loaded, dict) or loaded.get("format") != ARCHIVE_FORMAT:
                raise ArchiveFailed(f"archive {manifest} is not a UNS retention archive manifest ({ARCHIVE_FORMAT})")
            loaded.setdefault("counts", {})
            for table in TABLES:
                loaded["counts"].setdefault(table, 0)
            self.manifest, self.manifest_sha256 = loaded, hashlib.sha256(raw).hexdigest()
        else:
            self._write_manifest()

    def summary(self) -> dict:
        """The receipt's ``archive`` value for a run that wrote no part."""
        return {"path": str(self.path), "manifest": MANIFEST, "manifest_sha256": self.manifest_sha256,
                "part": None, "verified": True, "files": {}}

    def write_part(self, data: dict, *, cutoff: float, operator: str, now: float, after_write=None) -> dict:
        """Write ``data`` (``{table: [row dict]}``) as the next part, read it back, verify it and
        list it in the manifest. Returns the receipt's ``archive`` value. Raises
        ``ArchiveVerificationFailed`` (the part's files removed, the manifest unchanged) or
        ``ArchiveFailed`` (an I/O error)."""
        part = self._next_part()
        files, paths, expected = {}, {}, {}
        try:
            for table in TABLES:
                name = f"part-{part:05d}-{table}.jsonl.gz"
                path = self.path / name
                body = b"".join(canonical_json(row) + b"\n" for row in data.get(table, []))
                blob = gzip.compress(body, mtime=0)
                with open(path, "xb") as fh:  # never overwrite: a file of this name is another run's
                    fh.write(blob)
                    fh.flush()
                    os.fsync(fh.fileno())
                files[table] = {"file": name, "rows": len(data.get(table, [])), "bytes": len(blob),
                                "sha256": hashlib.sha256(blob).hexdigest()}
                paths[table], expected[table] = path, body
            _fsync_dir(self.path)
        except FileExistsError as exc:
            self._remove(paths)
            raise ArchiveFailed(f"archive {self.path}: {exc.filename} exists but is not in {MANIFEST}; "
                                "use another directory", part=part) from None
        except OSError as exc:
            self._remove(paths)
            raise ArchiveFailed(f"archive {self.path}: writing part {part} failed: {exc}", part=part) from None
        if after_write is not None:
            after_write(dict(paths))
        try:
            for table in TABLES:
                _verify_file(paths[table], files[table], expected[table],
                             [_row_key(table, row) for row in data.get(table, [])], table, part)
        except ArchiveVerificationFailed:
            self._remove(paths)
            raise
        entry = {"part": part, "created_at": now, "cutoff": cutoff, "operator": operator, "files": files}
        manifest = json.loads(json.dumps(self.manifest))
        manifest["parts"].append(entry)
        for table in TABLES:
            manifest["counts"][table] = manifest["counts"].get(table, 0) + files[table]["rows"]
        previous, self.manifest = self.manifest, manifest
        try:
            self._write_manifest()
        except ArchiveFailed:
            self.manifest = previous
            self._remove(paths)
            try:
                self._write_manifest()  # put back the manifest without this part
            except ArchiveFailed:
                pass
            raise
        return {"path": str(self.path), "manifest": MANIFEST, "manifest_sha256": self.manifest_sha256,
                "part": part, "verified": True, "files": files}

    def _next_part(self) -> int:
        """After every part the manifest lists and every part file on disk: files a crashed run
        left unlisted are not part of the archive, and are never overwritten."""
        numbers = [p["part"] for p in self.manifest["parts"]]
        numbers += [int(m.group(1)) for p in self.path.glob("part-*.jsonl.gz")
                    if (m := re.fullmatch(r"part-(\d+)-.+\.jsonl\.gz", p.name))]
        return max(numbers, default=0) + 1

    def _write_manifest(self) -> None:
        """Replace ``manifest.json`` atomically and read it back. Raises ``ArchiveFailed``."""
        final, tmp = self.path / MANIFEST, self.path / f".{MANIFEST}.tmp"
        blob = json.dumps(self.manifest, indent=1, sort_keys=True).encode("utf-8") + b"\n"
        try:
            with open(tmp, "wb") as fh:
                fh.write(blob)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, final)
            _fsync_dir(self.path)
            back = final.read_bytes()
        except OSError as exc:
            raise ArchiveFailed(f"archive {final}: writing the manifest failed: {exc}") from None
        if back != blob:
            raise ArchiveVerificationFailed(f"archive {final}: the manifest read back differs from what was written")
        self.manifest_sha256 = hashlib.sha256(blob).hexdigest()

    @staticmethod
    def _remove(paths: dict) -> None:
        for path in paths.values():
            try:
                path.unlink()
            except OSError:
                pass


def _verify_file(path: Path, entry: dict, body: bytes, ids: list[str], table: str, part: int) -> None:
    """Read ``path`` back: its SHA-256, that it decompresses, its row count, that every line is
    a JSON object, the ids it holds and its bytes against what was written. Raises
    ``ArchiveVerificationFailed`` naming the file and the check that failed."""
    def failed(why):
        return ArchiveVerificationFailed(f"archive verification failed for {path.name}: {why}", part=part,
                                         file=str(path), table=table)

    try:
        blob = path.read_bytes()
    except OSError as exc:
        raise failed(f"cannot read it back: {exc}") from None
    digest = hashlib.sha256(blob).hexdigest()
    if digest != entry["sha256"]:
        raise failed(f"SHA-256 {digest} read back, {entry['sha256']} written")
    try:
        back = gzip.decompress(blob)
    except (OSError, EOFError, ValueError) as exc:
        raise failed(f"does not decompress: {exc}") from None
    lines = back.splitlines()
    if len(lines) != entry["rows"]:
        raise failed(f"{len(lines)} row(s) read back, {entry['rows']} written")
    found = []
    for number, line in enumerate(lines, 1):
        try:
            value = json.loads(line)
        except ValueError as exc:
            raise failed(f"line {number} is not JSON: {exc}") from None
        if not isinstance(value, dict):
            raise failed(f"line {number} is not a JSON object")
        found.append(value.get("key") if table == WINDOWS else value.get("id"))
    if found != ids:
        raise failed("the rows read back are not the rows that were to be deleted")
    if back != body:
        raise failed("the rows read back differ from the rows in the database")


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
