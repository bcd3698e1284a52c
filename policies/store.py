"""The policy store: the only writer of the policy tables (DESIGN.md "Policy").

Verbs: ``create_draft``, ``edit_draft``, ``clone``, ``activate``, ``retire`` (and
``ensure_initialized``, the cold bootstrap). Each is one transaction that writes its
``notification_policy_audit_records`` row(s) with actor and time.

Locks, in one order everywhere (no cycles): the revision row, then lifecycle rows.
``activate`` and ``retire`` take the revision table in EXCLUSIVE mode and its row FOR UPDATE
(PostgreSQL) before anything else, so they wait for every intake holding the row FOR SHARE
(``policies.resolution``) to commit, and intakes that arrive meanwhile queue behind them (see
``_lock_revision_exclusive`` for why the table lock). ``edit_draft`` locks only its lifecycle
row, which ``activate`` also locks, so an edit and the activation of the same draft are ordered.
On SQLite every write transaction is ``BEGIN IMMEDIATE`` and serialised already.

The ACTIVE set of a new revision is rebuilt from the lifecycle rows (status is authoritative),
never from an earlier snapshot, so no serialized historical ACTIVE policy can revive a RETIRED
version. Errors are the runtime's typed errors (``NotFound``, ``Conflict``, ``InvalidRequest``,
``PolicyUnavailable``), rendered as problem details by the one HTTP handler.
"""
import time
from dataclasses import dataclass

from django.db import IntegrityError, connection, transaction
from django.db.models import Max

from core import codes
from core.actors import check_actor
from core.errors import Conflict, InvalidRequest, NotFound, PolicyUnavailable
from core.keys import new_event_id, new_id, sha256_hex
from core.transitions import EDIT as EDIT_EDGE
from core.transitions import POLICY_STATUS, transition
from notifications import people_audit
from notifications.models import Channel
from oncall import targets as oncall_targets

from . import escalation, lifecycle
from .schemas import is_policy_id
from .content import DEFAULT_POLICY_ID, SCHEMA_VERSION, content_hash, snapshot_body, validate_content
from .models import ACTIVE, DRAFT, RETIRED, Policy, PolicyAuditRecord, PolicyContent, PolicyRevision, PolicySnapshot
from .bootstrap import REVISION_ROW_ID, bootstrap_content

BOOTSTRAP_ACTOR = "uns-bootstrap"

# Audit actions.
BOOTSTRAP, CREATE, EDIT, CLONE, ACTIVATE, RETIRE = "BOOTSTRAP", "CREATE", "EDIT", "CLONE", "ACTIVATE", "RETIRE"


@dataclass(frozen=True)
class Transition:
    """Result of ``activate`` / ``retire``. ``changed`` is False for an idempotent repeat;
    ``replaced`` is the version an activation retired; ``revision`` is the current revision
    after the call."""

    policy: Policy
    revision: int
    changed: bool
    replaced: Policy | None = None


# --- helpers -----------------------------------------------------------------------------

def _audit(row: Policy, action: str, from_status, to_status: str, *, actor: str, at: float, revision=None,
           content_hash_: str, detail: dict | None = None) -> PolicyAuditRecord:
    # One people-audit row per action: BOOTSTRAP is the store's own first revision (no one's
    # action), and the retirement an activation causes ("replaced_by") is part of that ACTIVATE.
    if action in people_audit.POLICY_ACTIONS and "replaced_by" not in (detail or {}):
        people_audit.record(actor, people_audit.POLICY_ACTIONS[action], row.policy_id, at=at,
                            title=f"{row.policy_id} v{row.version}",
                            detail={"version": row.version, "from_status": from_status, "to_status": to_status,
                                    "revision": revision, **(detail or {})})
    return PolicyAuditRecord.objects.create(
        id=new_event_id(), policy_id=row.policy_id, version=row.version, action=action, from_status=from_status,
        to_status=to_status, actor=actor, at=at, revision=revision, content_hash=content_hash_, detail=detail or {},
    )


def _invalid_content(errors: list[dict], detail: str) -> InvalidRequest:
    return InvalidRequest(detail, code=codes.INVALID_POLICY_CONTENT, errors=errors)


def _check_policy_id(policy_id) -> None:
    if not is_policy_id(policy_id):
        raise InvalidRequest(
            "policy_id must be 1-64 characters: letters, digits, '.', '_' or '-', starting with a letter or digit",
            code=codes.INVALID_POLICY_ID, errors=[{"field": "policy_id", "message": "invalid policy id"}],
        )


def _description(content: dict) -> str:
    text = content.get("description") if isinstance(content, dict) else None
    return text[:500] if isinstance(text, str) else ""


def named_channels(content: dict) -> list[tuple[str, str]]:
    """``(field path, channel name)`` of every channel a policy content would deliver to
    (``channels``, the fallbacks of ``fallback_channels``, the governance approvers' channels)
    or escalate to (``escalation.target`` or every level's ``channels``), in content order: the one reading of which channels
    a policy routes to (activation's check, and ``runtime.channels``, which refuses to disable a
    channel the ACTIVE set routes to)."""
    named: list[tuple[str, str]] = []

    def collect(prefix, settings_):
        if not isinstance(settings_, dict):
            return
        for name in settings_.get("channels") or []:
            named.append((f"{prefix}.channels", name))
        named.extend(escalation.channel_paths(settings_.get("escalation"), f"{prefix}.escalation"))
        fallbacks = settings_.get("fallback_channels")
        for primary, names in (fallbacks.items() if isinstance(fallbacks, dict) else ()):
            named.extend((f"{prefix}.fallback_channels.{primary}", name) for name in names or ())

    if not isinstance(content, dict):
        return named
    collect("defaults", content.get("defaults"))
    for i, rule in enumerate(content.get("rules") or []):
        if isinstance(rule, dict):
            collect(f"rules[{i}].set", rule.get("set"))
    governance = content.get("governance")  # approvers' channels (policies/governance/schema.py)
    if isinstance(governance, dict):
        collect("governance.approval", governance.get("approval"))
        for i, rule in enumerate(governance.get("rules") or []):
            if isinstance(rule, dict):
                collect(f"governance.rules[{i}].approval", rule.get("approval"))
    return named


def channel_errors(content: dict) -> list[dict]:
    """Activation-time check: every channel the content would deliver to (``channels``, the
    governance approvers' channels included) or escalate to (``escalation.target``) is
    configured and enabled, and every people target (``schedule:``, ``team:``, ``user:``,
    ``oncall.targets``) names a schedule, team or active user that exists."""
    named = named_channels(content)
    people = oncall_targets.missing({n for _, n in named})  # schedule:/team:/user: targets that do not exist
    channels = {n for _, n in named if not oncall_targets.is_people(n)}
    enabled = set(Channel.objects.filter(name__in=channels, enabled=True).values_list("name", flat=True))
    errors, seen = [], set()
    for path, name in named:
        if (path, name) in seen:
            continue
        if oncall_targets.is_people(name):
            if name in people:
                seen.add((path, name))
                errors.append({"field": path, "message": people[name]})
        elif name not in enabled:
            seen.add((path, name))
            errors.append({"field": path, "message": f"channel {name!r} is not configured or is disabled"})
    return errors


def routes_to(policies: list[dict], channel: str) -> list[dict]:
    """Where an ACTIVE set (``resolution.Current.policies``) routes to ``channel``:
    ``[{"policy_id", "version", "field"}]``, empty when it does not."""
    return [{"policy_id": e["policy_id"], "version": e["version"], "field": path}
            for e in policies for path, name in named_channels(e.get("content")) if name == channel]


def _not_found(policy_id, version) -> NotFound:
    return NotFound(f"no policy {policy_id!r} version {version}", code=codes.POLICY_NOT_FOUND,
                    policy_id=policy_id, version=version)


def _get_version(policy_id: str, version: int, *, lock: bool = False) -> Policy:
    if not is_policy_id(policy_id):
        raise _not_found(policy_id, version)  # never sent to the database (NUL bytes, ...)
    qs = Policy.objects.filter(policy_id=policy_id, version=version)
    if lock:
        qs = qs.select_for_update()
    row = qs.first()
    if row is None:
        raise _not_found(policy_id, version)
    return row


def _get_content(policy_id: str, version: int, *, lock: bool = False) -> PolicyContent:
    qs = PolicyContent.objects.filter(policy_id=policy_id, version=version)
    if lock:
        qs = qs.select_for_update()
    row = qs.first()
    if row is None:
        raise PolicyUnavailable(f"the content of {policy_id} v{version} is missing", code=codes.POLICY_CONTENT_MISSING)
    return row


def _verified(content_row: PolicyContent) -> dict:
    if content_hash(content_row.content) != content_row.content_hash:
        raise PolicyUnavailable(
            f"the content of {content_row.policy_id} v{content_row.version} does not match its SHA-256",
            code=codes.POLICY_CONTENT_CORRUPT,
        )
    return content_row.content


def _active_entries() -> list[dict]:
    """The ACTIVE set as the lifecycle rows say it is, with verified content."""
    rows = list(Policy.objects.filter(status=ACTIVE))
    entries = []
    for row in rows:
        content = _verified(_get_content(row.policy_id, row.version))
        entries.append({"policy_id": row.policy_id, "version": row.version,
                        "content_hash": content_hash(content), "content": content})
    return entries


def _lock_revision_exclusive(clock) -> PolicyRevision:
    """Bootstrap if needed, then hold the revision row exclusively for the rest of the
    transaction.

    PostgreSQL: ``LOCK TABLE ... IN EXCLUSIVE MODE`` first, then the row ``FOR UPDATE``. The row
    lock alone is not fair: PostgreSQL grants a new ``FOR SHARE`` on a row that is only
    share-locked even while a ``FOR UPDATE`` waits, so a steady stream of intakes could starve
    an activation. Table-lock requests queue in order: once an activation waits, intakes that
    arrive after it (their ``FOR SHARE`` needs ROW SHARE on the table) wait behind it and then
    resolve under the new revision. Plain SELECTs (``read_current``, simulation) are never
    blocked (EXCLUSIVE admits ACCESS SHARE).
    """
    ensure_initialized(clock=clock)
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("LOCK TABLE notification_policy_revisions IN EXCLUSIVE MODE")
    row = PolicyRevision.objects.select_for_update().filter(pk=REVISION_ROW_ID).first()
    if row is None:
        raise PolicyUnavailable("no policy revision exists", code=codes.POLICY_UNINITIALIZED)
    return row


def _advance(rev: PolicyRevision, *, actor: str, now: float, reason: str) -> int:
    """Write the snapshot of the ACTIVE set as revision + 1 and point the revision row at it."""
    body = snapshot_body(_active_entries())
    if not any(e["policy_id"] == DEFAULT_POLICY_ID for e in body["policies"]):
        raise Conflict(f"the ACTIVE set must keep the default policy {DEFAULT_POLICY_ID!r}",
                       code=codes.DEFAULT_POLICY_REQUIRED)
    new_revision = rev.revision + 1
    snap = PolicySnapshot.objects.create(id=new_id(), revision=new_revision, snapshot=body,
                                         snapshot_hash=sha256_hex(body), reason=reason[:255], created_by=actor,
                                         created_at=now)
    updated = PolicyRevision.objects.filter(pk=REVISION_ROW_ID, revision=rev.revision).update(
        revision=new_revision, snapshot_id=snap.id, updated_by=actor, updated_at=now)
    if not updated:
        raise Conflict("the policy revision moved concurrently; retry", code=codes.POLICY_REVISION_CONFLICT)
    return new_revision


# --- cold initialisation -------------------------------------------------------------------

def ensure_initialized(*, clock=time.time, actor: str = BOOTSTRAP_ACTOR) -> bool:
    """Cold initialisation: when no revision row exists, write ``uns-default`` as an ACTIVE
    version with the bootstrap content (``bootstrap.bootstrap_content``), its snapshot as
    revision 1 and the revision row, in one transaction. Returns whether this call wrote them.

    Concurrent callers race on ``INSERT ... ON CONFLICT DO NOTHING`` of the revision row: the
    loser waits for the winner's commit and writes nothing. A database that has snapshots but no
    revision row is damaged: ``PolicyUnavailable`` rather than a second revision 1.
    """
    if PolicyRevision.objects.filter(pk=REVISION_ROW_ID).exists():
        return False
    content = bootstrap_content()
    with transaction.atomic():
        now = clock()
        snapshot_id = new_id()
        with connection.cursor() as cursor:
            cursor.execute(
                "INSERT INTO notification_policy_revisions (id, revision, snapshot_id, updated_by, updated_at) "
                "VALUES (%s, 1, %s, %s, %s) ON CONFLICT (id) DO NOTHING",
                [REVISION_ROW_ID, snapshot_id, actor, now],
            )
            won = cursor.rowcount == 1
        if not won:
            return False
        if PolicySnapshot.objects.exists():
            raise PolicyUnavailable("policy snapshots exist but the revision row is missing; refusing to "
                                    "bootstrap over them", code=codes.POLICY_REVISION_MISSING)
        version = (Policy.objects.filter(policy_id=DEFAULT_POLICY_ID).aggregate(v=Max("version"))["v"] or 0) + 1
        digest = content_hash(content)
        row = Policy.objects.create(id=new_id(), policy_id=DEFAULT_POLICY_ID, version=version,
                                    status=POLICY_STATUS.initial(ACTIVE),
                                    description=_description(content) or "bootstrap default policy",
                                    created_by=actor, created_at=now, activated_by=actor, activated_at=now)
        PolicyContent.objects.create(id=new_id(), policy_id=DEFAULT_POLICY_ID, version=version,
                                     schema_version=SCHEMA_VERSION, content=content, content_hash=digest,
                                     created_at=now)
        body = snapshot_body([{"policy_id": DEFAULT_POLICY_ID, "version": version, "content_hash": digest,
                                "content": content}])
        PolicySnapshot.objects.create(id=snapshot_id, revision=1, snapshot=body, snapshot_hash=sha256_hex(body),
                                      reason="bootstrap", created_by=actor, created_at=now)
        _audit(row, BOOTSTRAP, None, ACTIVE, actor=actor, at=now, revision=1, content_hash_=digest)
    return True


# --- drafts ----------------------------------------------------------------------------------

def create_draft(policy_id: str, content: dict, *, actor: str, clock=time.time, _cloned_from: str | None = None,
                 _validate: bool = True) -> Policy:
    """Store ``content`` as a new DRAFT version of ``policy_id`` (version = highest + 1).

    Raises ``InvalidRequest`` (``invalid_policy_id``; ``invalid_policy_content`` with
    field-named ``errors``) or ``Conflict`` (``policy_version_conflict`` when concurrent
    creations keep taking the version).
    """
    check_actor(actor)
    _check_policy_id(policy_id)
    if _validate:
        errors = validate_content(content)
        if errors:
            raise _invalid_content(errors, "the policy content is invalid")
    elif not isinstance(content, dict):
        raise _invalid_content([{"field": "", "message": "policy content must be an object"}],
                               "the policy content is invalid")
    ensure_initialized(clock=clock)
    digest = content_hash(content)
    for _ in range(5):
        try:
            with transaction.atomic():
                version = (Policy.objects.filter(policy_id=policy_id).aggregate(v=Max("version"))["v"] or 0) + 1
                now = clock()
                row = Policy.objects.create(id=new_id(), policy_id=policy_id, version=version,
                                            status=POLICY_STATUS.initial(DRAFT),
                                            description=_description(content), cloned_from=_cloned_from,
                                            created_by=actor, created_at=now)
                PolicyContent.objects.create(id=new_id(), policy_id=policy_id, version=version,
                                             schema_version=content.get("schema_version") or SCHEMA_VERSION,
                                             content=content, content_hash=digest, created_at=now)
                _audit(row, CLONE if _cloned_from else CREATE, None, DRAFT, actor=actor, at=now,
                       content_hash_=digest, detail={"cloned_from": _cloned_from} if _cloned_from else None)
            return row
        except IntegrityError:
            continue  # a concurrent creation took this version number: take the next one
    raise Conflict(f"could not allocate a new version of {policy_id!r}; retry", code=codes.POLICY_VERSION_CONFLICT)


def edit_draft(policy_id: str, version: int, content: dict, *, actor: str, expected_hash: str | None = None,
               clock=time.time) -> Policy:
    """Replace the content of a DRAFT version.

    ``expected_hash`` (optional) is the content hash the editor started from; a different
    current hash raises ``Conflict`` ``policy_edit_conflict`` instead of losing someone's edit.
    Raises ``NotFound``, ``Conflict`` ``policy_not_draft`` (ACTIVE and RETIRED versions are
    immutable) or ``InvalidRequest`` ``invalid_policy_content``.
    """
    check_actor(actor)
    errors = validate_content(content)
    if errors:
        raise _invalid_content(errors, "the policy content is invalid")
    with transaction.atomic():
        row = _get_version(policy_id, version, lock=True)
        lifecycle.check_editable(row.status, policy_id=policy_id, version=version)
        current = _get_content(policy_id, version, lock=True)
        if expected_hash and expected_hash != current.content_hash:
            raise Conflict(f"{policy_id} v{version} was edited by someone else since you loaded it",
                           code=codes.POLICY_EDIT_CONFLICT, current_hash=current.content_hash)
        digest = content_hash(content)
        now = clock()
        if not transition(Policy.objects.filter(pk=row.pk), status=(DRAFT, DRAFT), edge=EDIT_EDGE,
                          set={"description": _description(content)}):
            raise Conflict(f"{policy_id} v{version} is no longer a DRAFT", code=codes.POLICY_NOT_DRAFT)
        PolicyContent.objects.filter(pk=current.pk).update(content=content, content_hash=digest,
                                                           schema_version=content["schema_version"])
        _audit(row, EDIT, DRAFT, DRAFT, actor=actor, at=now, content_hash_=digest,
               detail={"previous_hash": current.content_hash})
    row.refresh_from_db()
    return row


def clone(policy_id: str, version: int, *, actor: str, new_policy_id: str | None = None, clock=time.time) -> Policy:
    """A new DRAFT version (of ``new_policy_id`` or the same policy) with the content of
    ``policy_id`` v``version``, whatever its status. The content is copied verbatim, even when a
    later schema would refuse it; activation validates it again. Raises ``NotFound``."""
    _get_version(policy_id, version)
    content = _verified(_get_content(policy_id, version))
    return create_draft(new_policy_id or policy_id, content, actor=actor, clock=clock,
                        _cloned_from=f"{policy_id}@{version}", _validate=False)


# --- lifecycle -------------------------------------------------------------------------------

def activate(policy_id: str, version: int, *, actor: str, clock=time.time) -> Transition:
    """DRAFT -> ACTIVE: retire the ACTIVE version of the same policy (if any), write the new
    ACTIVE set's snapshot as revision + 1 and point the revision row at it, in one transaction
    holding the revision row exclusively.

    Activating the ACTIVE version again is an idempotent no-op (``changed`` False). Raises
    ``NotFound``, ``Conflict`` ``policy_retired`` (RETIRED is final: clone it),
    ``InvalidRequest`` ``invalid_policy_content`` (field-named ``errors``, including channels
    that are not configured) or ``PolicyUnavailable`` (content fails its SHA-256).
    """
    check_actor(actor)
    with transaction.atomic():
        rev = _lock_revision_exclusive(clock)
        row = _get_version(policy_id, version, lock=True)
        if row.status == ACTIVE:
            return Transition(row, rev.revision, changed=False)
        lifecycle.check(row.status, ACTIVE, policy_id=policy_id, version=version)
        content = _verified(_get_content(policy_id, version))
        errors = validate_content(content) or channel_errors(content)
        if errors:
            raise _invalid_content(errors, f"{policy_id} v{version} cannot be activated: its content is invalid")
        now = clock()
        replaced = Policy.objects.select_for_update().filter(policy_id=policy_id, status=ACTIVE).first()
        if replaced is not None:
            if not transition(Policy.objects.filter(pk=replaced.pk), status=(ACTIVE, RETIRED),
                              set={"retired_by": actor, "retired_at": now}):
                raise Conflict(f"{policy_id} v{replaced.version} changed concurrently", code=codes.POLICY_CONFLICT)
        if not transition(Policy.objects.filter(pk=row.pk), status=(DRAFT, ACTIVE),
                          set={"activated_by": actor, "activated_at": now}):
            raise Conflict(f"{policy_id} v{version} is no longer a DRAFT", code=codes.POLICY_NOT_DRAFT)
        revision = _advance(rev, actor=actor, now=now, reason=f"activate {policy_id} v{version}")
        digest = content_hash(content)
        if replaced is not None:
            _audit(replaced, RETIRE, ACTIVE, RETIRED, actor=actor, at=now, revision=revision,
                   content_hash_=_get_content(policy_id, replaced.version).content_hash,
                   detail={"replaced_by": version})
        _audit(row, ACTIVATE, DRAFT, ACTIVE, actor=actor, at=now, revision=revision, content_hash_=digest,
               detail={"replaced": replaced.version} if replaced is not None else None)
    row.refresh_from_db()
    if replaced is not None:
        replaced.refresh_from_db()
    return Transition(row, revision, changed=True, replaced=replaced)


def retire(policy_id: str, version: int, *, actor: str, clock=time.time) -> Transition:
    """ACTIVE -> RETIRED (writes a new revision without it) or DRAFT -> RETIRED (abandons a
    draft; the ACTIVE set and revision do not change). Retiring a RETIRED version again is an
    idempotent no-op. Raises ``NotFound`` or ``Conflict`` ``default_policy_required`` (the
    default policy's ACTIVE version can only be replaced, by activating another version)."""
    check_actor(actor)
    with transaction.atomic():
        rev = _lock_revision_exclusive(clock)
        row = _get_version(policy_id, version, lock=True)
        if row.status == RETIRED:
            return Transition(row, rev.revision, changed=False)
        lifecycle.check(row.status, RETIRED, policy_id=policy_id, version=version)
        refusal = lifecycle.retire_refusal(policy_id, row.status)
        if refusal is not None:
            raise refusal
        now = clock()
        was = row.status
        if not transition(Policy.objects.filter(pk=row.pk), status=(was, RETIRED),
                          set={"retired_by": actor, "retired_at": now}):
            raise Conflict(f"{policy_id} v{version} changed concurrently", code=codes.POLICY_CONFLICT)
        revision = rev.revision
        if was == ACTIVE:
            revision = _advance(rev, actor=actor, now=now, reason=f"retire {policy_id} v{version}")
        _audit(row, RETIRE, was, RETIRED, actor=actor, at=now, revision=revision if was == ACTIVE else None,
               content_hash_=_get_content(policy_id, version).content_hash)
    row.refresh_from_db()
    return Transition(row, revision, changed=True)
