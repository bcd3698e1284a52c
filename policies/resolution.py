"""Policy resolution: which revision, policy and effective settings apply to a request.

Two readers, one rule each (architecture.md, "Acceptance and policy identity"):

- ``lock_current()`` (and ``resolve(request)`` / ``current_for_intake()`` on top of it) is what
  ``notifications.runtime.intake`` calls *inside* the intake transaction. On PostgreSQL one
  statement takes ``FOR SHARE OF`` the one revision row, joined with its snapshot, and keeps the
  lock until the intake commits; lifecycle writes take that row ``FOR UPDATE`` behind a
  fair EXCLUSIVE table lock (``policies.store._lock_revision_exclusive``). So intakes run side
  by side (shared locks do not conflict), an activation waits for the intakes already resolved
  under the old revision to commit, and an intake that arrives while an activation holds or
  awaits the lock waits and then resolves under the new revision: no intake commits under a
  revision older than an activation that committed before it. On SQLite the intake transaction
  is ``BEGIN IMMEDIATE``, which already serialises it against every other writer.
- ``read_current()`` is for steady-state inspection and simulation: revision plus immutable
  snapshot in ONE SELECT (a join), no lock, never writes.

Cold initialisation: when no revision row exists, intake bootstraps revision 1 from
``content.BOOTSTRAP_CONTENT`` or the JSON/YAML file named by ``UNS_BOOTSTRAP_POLICY_FILE``
(``store.ensure_initialized``). A revision whose snapshot is missing, belongs to another revision
or fails its SHA-256 raises ``PolicyUnavailable`` (HTTP 503): fail closed, never guess.
"""
import json
from dataclasses import dataclass, field, replace

from django.db import connection

from core import codes
from core.errors import PolicyUnavailable
from core.keys import sha256_hex

from . import store
from .bootstrap import REVISION_ROW_ID, bootstrap_content
from .content import BUILTIN_DEFAULTS, DEFAULT_POLICY_ID, content_hash, resolve_in_set, snapshot_body
from .models import PolicyRevision, PolicySnapshot


@dataclass(frozen=True)
class Resolution:
    """What acceptance freezes on a notification (ACCEPTED payload, ``metadata.uns_resolution``).

    ``policy_id`` / ``policy_version`` / ``policy_hash`` name the policy version that resolved
    the request (``policy_hash`` is its content SHA-256), ``revision`` / ``snapshot_hash`` the
    ACTIVE set it was resolved in, ``rule`` the matched rule (None: the policy's defaults).
    """

    policy_id: str
    policy_hash: str
    revision: int
    effective: dict
    effective_hash: str
    rule: str | None
    policy_version: int | None = None
    snapshot_hash: str | None = None

    def as_dict(self) -> dict:
        return {
            "policy_id": self.policy_id,
            "policy_version": self.policy_version,
            "policy_hash": self.policy_hash,
            "revision": self.revision,
            "snapshot_hash": self.snapshot_hash,
            "effective": self.effective,
            "effective_hash": self.effective_hash,
            "rule": self.rule,
        }


@dataclass(frozen=True)
class Current:
    """The current revision and its verified snapshot. ``policies`` is the ACTIVE set in
    evaluation order: ``{"policy_id", "version", "content_hash", "content"}`` items."""

    revision: int
    snapshot_id: str
    snapshot_hash: str
    policies: list = field(repr=False)
    created_at: float
    created_by: str
    reason: str


def _current_from_row(row: PolicyRevision) -> Current:
    try:
        snap = row.snapshot  # joined by select_related: no further query
    except PolicySnapshot.DoesNotExist:
        snap = None
    if snap is None:
        raise PolicyUnavailable(
            f"policy revision {row.revision} names snapshot {row.snapshot_id}, which is missing; "
            "intake refuses to guess a policy",
            code=codes.POLICY_SNAPSHOT_MISSING, revision=row.revision,
        )
    if snap.revision != row.revision:
        raise PolicyUnavailable(
            f"policy revision {row.revision} names the snapshot of revision {snap.revision}",
            code=codes.POLICY_SNAPSHOT_MISMATCH, revision=row.revision,
        )
    body = snap.snapshot
    if isinstance(body, str):
        body = json.loads(body)
    if sha256_hex(body) != snap.snapshot_hash:
        raise PolicyUnavailable(
            f"the snapshot of policy revision {row.revision} does not match its SHA-256",
            code=codes.POLICY_SNAPSHOT_CORRUPT, revision=row.revision,
        )
    return Current(
        revision=row.revision,
        snapshot_id=snap.id,
        snapshot_hash=snap.snapshot_hash,
        policies=body["policies"],
        created_at=snap.created_at,
        created_by=snap.created_by,
        reason=snap.reason,
    )


def read_current() -> Current | None:
    """The current revision and its snapshot, read with ONE SELECT and no lock.

    Returns None when the database holds no revision yet (nothing is bootstrapped here: readers
    never write). Raises ``PolicyUnavailable`` when the referenced snapshot is missing, belongs
    to another revision or fails its hash.
    """
    row = PolicyRevision.objects.select_related("snapshot").filter(pk=REVISION_ROW_ID).first()
    if row is None:
        return None
    return _current_from_row(row)


# Per-process cache of verified snapshots: (revision, snapshot id) -> (stored JSON text, Current).
# Only ever consulted with the revision and snapshot id read under the intake's lock in the same
# statement, and only when the stored text is byte-identical, so it can neither let a stale
# revision accept work nor hide a tampered snapshot; it saves the JSON parse and the SHA-256.
_VERIFIED: dict[tuple[int, str], tuple[str, Current]] = {}
_VERIFIED_MAX = 8
_LATEST: list = [None]  # the Current most recently returned by ``_verified_current``


def _verified_current(revision: int, snapshot_id: str, snap_id, snap_revision, snap_hash, raw, created_at,
                      created_by, reason) -> Current:
    """``Current`` from one joined row (revision row + LEFT JOINed snapshot, the JSON as text);
    the same checks as ``_current_from_row``. Raises ``PolicyUnavailable``."""
    if snap_id is None:
        raise PolicyUnavailable(
            f"policy revision {revision} names snapshot {snapshot_id}, which is missing; "
            "intake refuses to guess a policy",
            code=codes.POLICY_SNAPSHOT_MISSING, revision=revision,
        )
    if snap_revision != revision:
        raise PolicyUnavailable(f"policy revision {revision} names the snapshot of revision {snap_revision}",
                                code=codes.POLICY_SNAPSHOT_MISMATCH, revision=revision)
    if not isinstance(raw, str):  # a driver that decoded the JSON anyway
        raw = json.dumps(raw, sort_keys=True)
    cached = _VERIFIED.get((revision, snap_id))
    if cached is not None and cached[0] == raw and cached[1].snapshot_hash == snap_hash:
        _LATEST[0] = cached[1]
        return cached[1]
    body = json.loads(raw)
    if sha256_hex(body) != snap_hash:
        raise PolicyUnavailable(f"the snapshot of policy revision {revision} does not match its SHA-256",
                                code=codes.POLICY_SNAPSHOT_CORRUPT, revision=revision)
    current = Current(revision=revision, snapshot_id=snap_id, snapshot_hash=snap_hash, policies=body["policies"],
                      created_at=created_at, created_by=created_by, reason=reason)
    if len(_VERIFIED) >= _VERIFIED_MAX:
        _VERIFIED.clear()
    _VERIFIED[(revision, snap_id)] = (raw, current)
    _LATEST[0] = current
    return current


def cached_current() -> Current | None:
    """The most recently verified snapshot this process holds, or None. A *prediction* only (for
    work a caller wants to fold into the locked statement, e.g. which channels to check): the
    caller must compare it with what ``lock_current`` returns before relying on it."""
    return _LATEST[0]


@dataclass(frozen=True)
class Probe:
    """Extra reads the intake folds into the revision-lock statement (``lock_current``):
    ``columns`` (SQL expressions, their placeholders' values in ``params``) and ``joins``
    (LEFT JOIN clauses, ``join_params``). The revision row is aliased ``r``, the snapshot ``s``."""

    columns: tuple = ()
    params: tuple = ()
    joins: str = ""
    join_params: tuple = ()


def lock_current(probe: Probe | None = None) -> tuple[Current, tuple]:
    """The current revision under the intake's revision lock, with its snapshot, in ONE statement
    (a join; PostgreSQL ``FOR SHARE OF`` the revision row), plus the ``probe`` columns. Returns
    ``(current, probe values)``. Bootstraps revision 1 on a database that has none. Must run
    inside the intake transaction. Raises ``PolicyUnavailable``.

    PostgreSQL, READ COMMITTED: when the statement had to wait for an activation's lock, the
    recheck sees the revision row's new version but the snapshot row joined from the statement's
    older MVCC snapshot (the new snapshot row is not visible to it). That case is detected (the
    joined snapshot is not the one the locked row names) and the snapshot is read again with a
    new statement, which sees what the lock protects.
    """
    if not connection.in_atomic_block:
        raise RuntimeError("lock_current() must run inside the intake transaction")
    probe = probe or Probe()
    postgres = connection.vendor == "postgresql"
    snapshot = "s.snapshot::text" if postgres else "s.snapshot"  # the snapshot's JSON text
    extra = "".join(f", {c}" for c in probe.columns)
    sql = ("SELECT r.revision, r.snapshot_id, s.id, s.revision, s.snapshot_hash, "
           f"{snapshot}, s.created_at, s.created_by, s.reason{extra} "
           "FROM notification_policy_revisions r "
           f"LEFT JOIN notification_policy_snapshots s ON s.id = r.snapshot_id {probe.joins} "
           f"WHERE r.id = %s{' FOR SHARE OF r' if postgres else ''}")
    params = [*probe.params, *probe.join_params, REVISION_ROW_ID]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
        if row is None:
            store.ensure_initialized()
            cursor.execute(sql, params)
            row = cursor.fetchone()
        if row is None:
            raise PolicyUnavailable("no policy revision exists and none could be bootstrapped",
                                    code=codes.POLICY_UNINITIALIZED)
        revision, snapshot_id, snap_id = row[0], row[1], row[2]
        snap = row[2:9]
        if snap_id != snapshot_id:
            # Waited behind an activation (see above), or the snapshot is gone: read it again.
            cursor.execute(
                f"SELECT s.id, s.revision, s.snapshot_hash, {snapshot}, "  # nosec B608  # a constant per backend
                "s.created_at, s.created_by, s.reason FROM notification_policy_snapshots s WHERE s.id = %s",
                [snapshot_id])
            snap = cursor.fetchone() or (None,) * 7
    current = _verified_current(revision, snapshot_id, *snap)
    return current, tuple(row[9:])


def current_for_intake() -> Current:
    """The current revision under the intake's revision lock (see the module docstring), read
    with its snapshot in one statement (``lock_current``); bootstraps revision 1 on a database
    that has none. Must run inside a transaction. Raises ``PolicyUnavailable``."""
    return lock_current()[0]


def resolve_against(current: Current, request: dict) -> Resolution:
    """Resolve a validated request against one revision's ACTIVE set (no database access).
    Raises ``InvalidRequest`` (channel not allowed) or ``PolicyUnavailable`` (no default)."""
    try:
        entry, effective, rule = resolve_in_set(current.policies, request)
    except LookupError as exc:
        raise PolicyUnavailable(str(exc), code=codes.POLICY_NO_DEFAULT, revision=current.revision) from exc
    return Resolution(
        policy_id=entry["policy_id"],
        policy_hash=entry["content_hash"],
        revision=current.revision,
        effective=effective,
        effective_hash=sha256_hex(effective),
        rule=rule,
        policy_version=entry["version"],
        snapshot_hash=current.snapshot_hash,
    )


def overridden(resolution: Resolution, override: dict) -> Resolution:
    """``resolution`` with ``override`` (effective settings, ``content.BUILTIN_DEFAULTS`` keys
    other than ``channels`` / ``allowed_channels``) laid over its effective settings and the
    effective hash recomputed. Raises ``ValueError`` for another key (a caller's bug)."""
    unknown = set(override) - (set(BUILTIN_DEFAULTS) - {"channels", "allowed_channels"})
    if unknown:
        raise ValueError(f"cannot override {sorted(unknown)}")
    effective = {**resolution.effective, **override}
    return replace(resolution, effective=effective, effective_hash=sha256_hex(effective))


def current_or_bootstrap() -> Current:
    """For readers: the current revision (one SELECT, no lock), or, on a database that has none
    yet, what cold initialisation would write (revision 1, ``snapshot_id`` "") without writing
    it."""
    current = read_current()
    if current is not None:
        return current
    content = bootstrap_content()
    body = snapshot_body([{"policy_id": DEFAULT_POLICY_ID, "version": 1,
                                          "content_hash": content_hash(content), "content": content}])
    return Current(revision=1, snapshot_id="", snapshot_hash=sha256_hex(body), policies=body["policies"],
                   created_at=0.0, created_by="", reason="bootstrap (not yet written)")


def resolve(request: dict) -> Resolution:
    """Resolve a validated request.

    Inside a transaction (intake) it runs under the revision lock and may bootstrap revision 1
    (``current_for_intake``). Outside one there is no commit to order against, so it reads like
    simulation: one SELECT, no lock, no writes (``current_or_bootstrap``).
    Raises ``InvalidRequest`` (channel not allowed) or ``PolicyUnavailable`` (no usable policy:
    missing or corrupt snapshot, unreadable bootstrap file).
    """
    if connection.in_atomic_block:
        return resolve_against(current_for_intake(), request)
    return resolve_against(current_or_bootstrap(), request)
