"""``accept``: validate, resolve policy, coalesce and store one obligation exactly once."""
from dataclasses import dataclass

from django.db import connection, transaction

from core import codes
from core.errors import Conflict, InvalidRequest, PolicyUnavailable, UnknownChannel
from core.keys import dedup_digest, idempotency_key, new_id, sha256_hex
from core.schema import parse_dict
from core.transitions import DEDUPLICATED, PENDING, initial
from oncall import targets as oncall_targets
from policies import resolution as policy_resolution

from ..models import Channel, Dedup, Notification
from . import dedup, group_commit, rows, schemas, timeline

SEVERITIES = schemas.SEVERITIES
MAX_CHANNELS = schemas.MAX_CHANNELS
MAX_METADATA_BYTES = schemas.MAX_METADATA_BYTES


def validate_request(data) -> dict:
    """Validate a SendNotificationRequest and return it normalised (every field present).

    The shape is ``schemas.SendNotificationRequest`` (the one definition HTTP, WebSocket, MCP and
    the OpenAPI document share): ``source`` and ``title`` (required strings), ``body``,
    ``severity`` (info | warning | error | critical, default info), ``intent``, ``channels``
    (list of channel names, at most 16), ``idempotency_key``, ``dedup_key``, ``require_ack``
    (bool), ``metadata`` (object, at most 16 KiB as JSON, key ``uns_resolution`` reserved),
    ``agent_id``, ``autonomy_mode``. Raises ``InvalidJSON`` (``parse_error``) for a value UNS
    cannot store (NUL, non-finite number, ...) and ``InvalidRequest`` listing every ``{"field",
    "message"}`` problem; unknown fields are refused so a typo never passes silently.
    """
    return parse_dict(schemas.SendNotificationRequest, data, detail="the notification request is invalid")


@dataclass(frozen=True)
class AcceptResult:
    """``notification`` is the stored row; ``created`` is False for an idempotent repeat."""

    notification: Notification
    created: bool


# What an idempotency key makes of a request (``Idempotency.outcome``; simulation reports it).
NEW, REPEAT, CONFLICT = "new", "repeat", "conflict"
IDEMPOTENCY_OUTCOMES = (NEW, REPEAT, CONFLICT)


@dataclass(frozen=True)
class Idempotency:
    """What the idempotency key makes of a request: ``outcome`` ``new`` | ``repeat`` (same key,
    same fingerprint: ``existing`` is that row) | ``conflict`` (same key, other fingerprint).
    ``key`` is the row key the notification is stored under, ``fingerprint`` the request's hash."""

    outcome: str
    key: str
    fingerprint: str
    existing: Notification | None


def idempotency(principal: str, req: dict) -> Idempotency:
    """The idempotency outcome of a validated request (one read of ``uns_notifications`` when it
    carries an ``idempotency_key``; none otherwise, its key being a fresh id). Writes nothing."""
    fingerprint = sha256_hex(req)
    if not req["idempotency_key"]:
        return Idempotency(NEW, idempotency_key(principal, req["source"], new_id()), fingerprint, None)
    key = idempotency_key(principal, req["source"], req["idempotency_key"])
    row = Notification.objects.filter(key=key).first()
    if row is None:
        return Idempotency(NEW, key, fingerprint, None)
    return Idempotency(REPEAT if row.fingerprint == fingerprint else CONFLICT, key, fingerprint, row)


def _raise_conflict(idem: Idempotency) -> None:
    raise Conflict("this idempotency key was already used with a different request",
                   code=codes.IDEMPOTENCY_CONFLICT, notification_id=idem.existing.id)


def check_channels(names: list[str]) -> None:
    """Raise ``UnknownChannel`` (field ``channels``) unless every name is an enabled channel or a
    people target (``schedule:``, ``team:``, ``user:``) whose schedule, team or user exists
    (``oncall.targets.missing``; who it pages is resolved at send time, not here)."""
    missing = oncall_targets.missing(names)
    channels = [n for n in names if not oncall_targets.is_people(n)]
    known = set(Channel.objects.filter(name__in=channels, enabled=True).values_list("name", flat=True)) if channels \
        else set()
    unknown = [n for n in names if (n in missing if oncall_targets.is_people(n) else n not in known)]
    if unknown:
        raise UnknownChannel(
            f"unknown or disabled channel(s): {unknown}",
            errors=[{"field": "channels", "message": f"not configured: {unknown}"}],
        )


@dataclass(frozen=True)
class DedupPlan:
    """The dedup role of a request (``dedup.decide`` applied to its window).

    ``key``: the ``uns_dedup`` key, None when the request does not coalesce (no ``dedup_key`` or
    a zero window); ``window_seconds``: the effective ``dedup_window_seconds``; ``role``,
    ``owner_id``, ``owner_status``, ``generation`` (None when not coalescing) and
    ``new_generation`` as in ``dedup.DedupDecision``."""

    key: str | None
    window_seconds: float
    role: str
    owner_id: str | None
    owner_status: str | None
    generation: int | None
    new_generation: bool
    written: bool = False  # the window row already names this request as owner (inserted by the upsert)

    def as_dict(self) -> dict:
        """The simulation's ``dedup`` member."""
        if self.key is None:
            return {"role": self.role, "coalescing": False, "dedup_key": None, "owner_id": None, "generation": None}
        return {"role": self.role, "coalescing": True, "dedup_key": self.key, "owner_id": self.owner_id,
                "generation": self.generation, "window_seconds": self.window_seconds}


def dedup_plan(principal: str, req: dict, resolution, now: float, *, lock: bool,
               leader_id: str | None = None) -> DedupPlan:
    """Read the request's dedup window and decide its role (``dedup.decide``) at ``now`` (epoch
    seconds). ``lock=True`` (intake, inside its transaction, ``leader_id`` the id the request
    will be stored under): one upsert creates the window row, already owned by ``leader_id`` as
    an absent window decides, or locks the existing one and returns it, so concurrent duplicates
    serialise on it; the owner's status is then read with a new statement (READ COMMITTED: it
    sees what the owner's transaction committed before the lock was granted). ``lock=False``
    (simulation): a plain read that writes nothing. The caller applies a ``new_generation`` to
    the window unless ``written``."""
    window = float(resolution.effective["dedup_window_seconds"])
    if not req["dedup_key"] or window <= 0:
        return DedupPlan(None, window, dedup.LEADER, None, None, None, False)
    dkey = dedup_digest(principal, req["source"], req["dedup_key"], resolution.effective_hash)
    if lock:
        if leader_id is None:
            raise ValueError("dedup_plan(lock=True) needs the leader_id the request is stored under")
        absent = dedup.decide(owner_id=None, owner_status=None, generation=0, until=0.0, now=now)
        with connection.cursor() as cursor:
            # DO UPDATE (a no-op) rather than DO NOTHING: it locks and returns an existing row.
            cursor.execute(
                "INSERT INTO uns_dedup (key, until, owner_id, generation) VALUES (%s, %s, %s, %s) "
                "ON CONFLICT (key) DO UPDATE SET until = uns_dedup.until RETURNING until, owner_id, generation",
                [dkey, now + window, leader_id, absent.generation])
            until, owner_id, generation = cursor.fetchone()
        if owner_id == leader_id:  # nobody else knows this id: the row was inserted now
            return DedupPlan(dkey, window, absent.role, None, None, absent.generation, True, written=True)
    else:
        window_row = Dedup.objects.filter(key=dkey).first()
        owner_id = window_row.owner_id if window_row is not None else None
        generation = window_row.generation if window_row is not None else 0
        until = window_row.until if window_row is not None else 0.0
    owner_status = Notification.objects.filter(id=owner_id).values_list(
        "status", flat=True).first() if owner_id else None
    decision = dedup.decide(owner_id=owner_id, owner_status=owner_status, generation=generation, until=until,
                            now=now)
    return DedupPlan(dkey, window, decision.role, decision.owner_id, decision.owner_status, decision.generation,
                     decision.new_generation)


@dataclass(frozen=True)
class Decision:
    """What intake decides for a validated request: the policy revision it resolved against
    (``current``), the frozen ``resolution`` and the ``dedup`` plan."""

    current: object
    resolution: object
    dedup: DedupPlan


def decide(principal: str, req: dict, now: float, *, current, lock: bool, leader_id: str | None = None,
           enabled: frozenset = frozenset(), predicted: tuple | None = None,
           override: dict | None = None) -> Decision:
    """The one intake decision, made by ``accept`` (inside its transaction) and by
    ``policies.simulation`` (a dry run), in this order: check the requested channels, resolve
    policy against ``current()`` (a callable returning ``policies.resolution.Current``: the
    revision ``accept``'s locked statement read, the read-only ``current_or_bootstrap`` for
    simulation), check the effective channels when none were requested, then ``dedup_plan``
    (``lock`` and ``leader_id`` as there) at ``now`` (epoch seconds).

    What ``accept`` already knows saves it statements, never a check: ``enabled`` are channel
    names its locked statement counted as enabled (a check of names all in it passes without a
    query); ``predicted`` is ``(Current, Resolution)`` resolved before the lock, reused when
    ``current()`` returns that very ``Current``.

    ``override``: effective settings an in-process caller imposes over the resolution (never a
    transport's input; ``policies.governance.bridge`` sets an approval's ``ack_timeout_minutes``),
    applied before the effective hash and the dedup plan, so they are frozen like the rest.

    Raises ``UnknownChannel``, ``InvalidRequest`` (channel not allowed) or ``PolicyUnavailable``.
    """
    if req["channels"] and not set(req["channels"]) <= enabled:
        check_channels(req["channels"])
    revision = current()
    if predicted is not None and revision is predicted[0]:
        resolution = predicted[1]
    else:
        resolution = policy_resolution.resolve_against(revision, req)
    if override:
        resolution = policy_resolution.overridden(resolution, override)
    if not req["channels"] and not set(resolution.effective["channels"]) <= enabled:
        check_channels(resolution.effective["channels"])
    return Decision(revision, resolution,
                    dedup_plan(principal, req, resolution, now, lock=lock, leader_id=leader_id))


def _validated(principal: str, request) -> dict:
    """``validate_request`` and the principal check, for ``accept`` and ``admit``. Raises
    ``InvalidRequest`` (including ``principal_required``)."""
    req = validate_request(request)
    if not principal:
        raise InvalidRequest("a principal is required", code=codes.PRINCIPAL_REQUIRED)
    return req


def admit(principal: str, request) -> tuple[dict, Idempotency]:
    """Validate a request for ``principal`` as ``accept`` does (``_validated``) and read its
    idempotency outcome, for simulation. Raises ``InvalidRequest`` (including
    ``principal_required``)."""
    req = _validated(principal, request)
    return req, idempotency(principal, req)


class _KeyTaken(Exception):
    """The idempotency key's row was committed concurrently (the INSERT ... ON CONFLICT DO
    NOTHING stored nothing): rolls the intake transaction back, window updates included."""


def accept(runtime, principal: str, request: dict, *, override: dict | None = None,
           approval: dict | None = None) -> AcceptResult:
    """Accept one obligation durably, exactly once (DESIGN.md rule 5; reference 1.1 intake).

    In one transaction: resolve policy, freeze the resolution on the row, decide the dedup role
    (leader, follower behind a live PENDING leader, or DEDUPLICATED behind a DELIVERED leader
    inside its window), insert the row and its ACCEPTED (and DEDUP_LINKED) events. Round trips
    (``_insert``): one statement takes the revision lock and reads the snapshot, the row already
    stored under the idempotency key and the requested channels' state; the row is inserted
    with ``ON CONFLICT (key) DO NOTHING``, so a concurrent duplicate that commits first turns
    this request into a repeat (the transaction is rolled back and the stored row answered).

    ``override``: effective settings imposed by an in-process caller (``decide``).
    ``approval``: the governance request this notification asks a human to decide, written as
    its ``metadata.uns_governance`` after validation (``schemas.GOVERNANCE_METADATA_KEY``, a key
    no request may carry): only the in-process governance bridge makes approvals.

    Outside a transaction, accepts of one process arriving together are written in one
    transaction (``group_commit``: each in its own savepoint, one COMMIT), each answered after it;
    requests sharing a key see each other's rows in arrival order.

    Raises ``InvalidRequest``, ``UnknownChannel``, ``Conflict`` (``idempotency_conflict``: same
    key, other fingerprint) or ``PolicyUnavailable``. Nothing is written when it raises.
    """
    req = _validated(principal, request)
    if approval is not None:
        req["metadata"] = {**req["metadata"], schemas.GOVERNANCE_METADATA_KEY: approval}
    fingerprint = sha256_hex(req)
    keyed = bool(req["idempotency_key"])
    key = idempotency_key(principal, req["source"], req["idempotency_key"] if keyed else new_id())
    item = _Accept(runtime, principal, req, key, fingerprint, keyed, override)
    if connection.in_atomic_block:  # the caller's transaction holds it: no group commit
        return _accept_alone(item)
    return _GROUP.run(lambda: _accept_in_batch(item), lambda: _accept_alone(item))


@dataclass(frozen=True)
class _Accept:
    """One validated request (with its caller's runtime: its clock, its live push)."""

    runtime: object
    principal: str
    req: dict
    key: str
    fingerprint: str
    keyed: bool
    override: dict | None


def _accept_alone(item: _Accept) -> AcceptResult:
    """One validated request in its own transaction (or the caller's savepoint)."""
    try:
        with transaction.atomic():
            return _insert(item.runtime, item.principal, item.req, item.key, item.fingerprint, item.keyed,
                           item.override)
    except _KeyTaken:
        return _stored(item)


def _accept_in_batch(item: _Accept) -> AcceptResult:
    """One request inside a group-commit batch (``group_commit``: already in its own savepoint)."""
    try:
        with transaction.atomic():  # _KeyTaken rolls this back, window updates included
            return _insert(item.runtime, item.principal, item.req, item.key, item.fingerprint, item.keyed,
                           item.override)
    except _KeyTaken:
        # Another transaction committed the key first: answer its row (a new statement sees it).
        return _stored(item)


def _stored(item: _Accept) -> AcceptResult:
    """The answer to a request whose idempotency key's row another transaction committed first
    (``_KeyTaken``): that row as a repeat, or ``Conflict``."""
    again = idempotency(item.principal, item.req)
    if again.outcome == CONFLICT:
        _raise_conflict(again)
    if again.existing is None:  # the winner's row is gone again: cannot happen (rows are not deleted)
        raise _KeyTaken(item.key)
    return AcceptResult(again.existing, False)


# Accepts of this process: one writer at a time (``group_commit.GroupCommit``).
_GROUP = group_commit.GroupCommit("accept")


_FIELDS = Notification._meta.concrete_fields


def _quoted_columns(alias: str = "") -> list[str]:
    """The ``uns_notifications`` columns in ``_FIELDS`` order, quoted (``rows.quoted_columns``)."""
    return rows.quoted_columns(Notification, alias)


def _insert_sql() -> str:
    """``INSERT ... ON CONFLICT (key) DO NOTHING RETURNING id`` for one row of ``_FIELDS``."""
    return (f"INSERT INTO uns_notifications ({', '.join(_quoted_columns())}) "
            f"VALUES ({', '.join(['%s'] * len(_FIELDS))}) ON CONFLICT (key) DO NOTHING RETURNING id")


def _row_from_db(values) -> Notification:
    """A ``Notification`` from raw column values in ``_FIELDS`` order (``rows.from_values``)."""
    return rows.from_values(Notification, values)


def _predict(req: dict):
    """``(cached Current, its resolution)`` from this process's last verified snapshot, or
    ``(None, None)``: a guess of the effective channels to check in the locked statement, used
    only when the locked statement returns that very snapshot."""
    cached = policy_resolution.cached_current()
    if cached is None:
        return None, None
    try:
        return cached, policy_resolution.resolve_against(cached, req)
    except (InvalidRequest, PolicyUnavailable):
        return None, None


def _insert(runtime, principal, req, key, fingerprint, keyed, override=None) -> AcceptResult:
    nid = new_id()
    predicted, predicted_resolution = _predict(req)
    names = list(dict.fromkeys(req["channels"] or (predicted_resolution.effective["channels"]
                                                   if predicted_resolution else [])))
    columns, params, joins, join_params = [], [], "", []
    if names:
        columns.append("(SELECT count(*) FROM uns_channels c WHERE c.enabled AND c.name IN "
                       f"({', '.join(['%s'] * len(names))}))")
        params.extend(names)
    if keyed:
        columns.extend(_quoted_columns("n"))
        joins, join_params = "LEFT JOIN uns_notifications n ON n.key = %s", [key]
    try:
        current, probed = policy_resolution.lock_current(policy_resolution.Probe(
            tuple(columns), tuple(params), joins, tuple(join_params)))
    except PolicyUnavailable:
        # A stored request is still answered (a repeat or a conflict) while no policy resolves.
        stored = idempotency(principal, req) if keyed else None
        if stored is None or stored.existing is None:
            raise
        if stored.outcome == CONFLICT:
            _raise_conflict(stored)
        return AcceptResult(stored.existing, False)
    # The acceptance time is read under the revision lock: an activation that commits before
    # this intake got the lock was stamped earlier, one that waits for this intake later.
    now = runtime.clock()
    enabled = probed[0] if names else None
    if keyed and probed[-len(_FIELDS)] is not None:
        existing = _row_from_db(probed[-len(_FIELDS):])
        if existing.fingerprint != fingerprint:
            _raise_conflict(Idempotency(CONFLICT, key, fingerprint, existing))
        return AcceptResult(existing, False)
    # The decision simulation makes too; the locked statement's channel count and the prediction
    # only spare it statements.
    decision = decide(principal, req, now, current=lambda: current, lock=True, leader_id=nid,
                      enabled=frozenset(names) if names and enabled == len(names) else frozenset(),
                      predicted=(predicted, predicted_resolution) if predicted is not None else None,
                      override=override)
    resolution, plan = decision.resolution, decision.dedup
    effective = resolution.effective
    status = DEDUPLICATED if plan.role == dedup.DEDUPLICATED else PENDING
    owner_id, owner_status, generation, dkey = plan.owner_id, plan.owner_status, plan.generation, plan.key
    if plan.new_generation and not plan.written:
        # No live owner (none, FAILED, or a delivered window that expired): lead a new generation.
        Dedup.objects.filter(key=dkey).update(owner_id=nid, generation=generation, until=now + plan.window_seconds)
    notification = {
        "id": nid,
        "source": req["source"],
        "title": req["title"],
        "body": req["body"],
        "severity": req["severity"],
        "intent": req["intent"],
        "channels": effective["channels"],
        "requested_channels": req["channels"],
        "require_ack": effective["require_ack"],
        "idempotency_key": req["idempotency_key"],
        "dedup_key": req["dedup_key"],
        "agent_id": req["agent_id"],
        "autonomy_mode": req["autonomy_mode"],
        "metadata": {**req["metadata"], "uns_resolution": resolution.as_dict()},
        "created_at": now,
    }
    row = Notification(
        id=nid,
        key=key,
        fingerprint=fingerprint,
        principal=principal,
        notification=notification,
        **initial(status=status),
        outcome={"channels_attempted": [], "channels_succeeded": [], "channels_failed": [], "error_message": None},
        attempts=0,
        cycle=1,
        cycle_attempts=0,
        dedup_key=dkey,
        dedup_owner_id=owner_id,
        dedup_generation=generation,
        dedup_successor_id=None,
        # a policy's pause holds the first delivery back (policies.content: pause_seconds)
        next_attempt=now + float(effective.get("pause_seconds") or 0.0),
        lease_until=0.0,
        lease_token=None,
        dead_letter=False,
    )
    conn = rows.current_connection()
    with conn.cursor() as cursor:
        cursor.execute(_insert_sql(), [f.get_db_prep_save(getattr(row, f.attname), conn) for f in _FIELDS])
        if cursor.fetchone() is None:
            raise _KeyTaken(key)
    row._state.adding, row._state.db = False, conn.alias
    events = [
        timeline.event(nid, timeline.ACCEPTED, {
            "policy_id": resolution.policy_id,
            "policy_hash": resolution.policy_hash,
            "revision": resolution.revision,
            "effective": effective,
            "effective_hash": resolution.effective_hash,
        }, now),
    ]
    if owner_id is not None:
        events.append(timeline.event(nid, timeline.DEDUP_LINKED, {
            "owner_id": owner_id, "generation": generation, "owner_status": owner_status,
        }, now))
    timeline.insert_events(runtime, events, principal=principal)
    return AcceptResult(row, True)
