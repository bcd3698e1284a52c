"""Silences and maintenance windows: ``create``, ``update``, ``expire``, ``preview`` and the one
question every scheduler asks, ``silencing`` ("is this notification silenced at T, and by which
silence?"). ``docs/explanation/silences.md`` explains the rules; ADR 0007 the end of a silence.

A silence has matchers (``name`` ``op`` ``value``; Alertmanager's operators ``=``, ``!=``,
``=~``, ``!~``, regular expressions anchored at both ends and evaluated with RE2, as
Alertmanager's Go ``regexp``: linear time, no backtracking), a start and an end (epoch seconds).
It holds while ``starts_at <= t < ends_at``; nothing runs to end it. Dispatch (``dispatch.claim``),
the ACK deadline sweep (``responses.time_out``) and the escalation chain
(``escalation.escalate_due``) read the silences once per pass (``Window``) and ask ``silencing``
for each due row; a held row gets a ``uns_silence_holds`` row and one SILENCED event.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Annotated, Literal

import re2
from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Q
from pydantic import Field

from core import codes
from core.actors import check_actor
from core.errors import Conflict, InvalidRequest, NotFound
from core.keys import new_id
from core.schema import Schema, parse
from core.times import MAX_EPOCH, MIN_EPOCH
from core.transitions import ACK_PENDING, ESCALATION_ACTIVE, HOLD, PENDING, transition

from .. import people_audit
from ..models import AcceptedAt, Notification, Silence, SilenceAuditRecord, SilenceHold
from . import timeline

# --- matchers ------------------------------------------------------------------------------

OPERATORS = ("=", "!=", "=~", "!~")
FIELDS = ("source", "severity", "dedup_key")
METADATA_PREFIX = "metadata."
MAX_MATCHERS = 16
MAX_NAME = 200
MAX_PATH_DEPTH = 6
MAX_VALUE = 1024          # characters of a value or pattern
MAX_SUBJECT = 4096        # characters of a notification's field a matcher reads (longer: cut)
MAX_COMMENT = 2000
MAX_DURATION_SECONDS = 366 * 86400.0
RE2_MAX_MEM = 1 << 20     # bytes of one compiled pattern (RE2 refuses larger programs)

DELIVERY, DEADLINE, ESCALATION = "delivery", "deadline", "escalation"  # uns_silence_holds.scope
CREATE, UPDATE, EXPIRE = "CREATE", "UPDATE", "EXPIRE"                     # silence_audit_records.action
ACTIVE, PENDING_STATE, EXPIRED = "active", "pending", "expired"           # a silence's state at t


class MatcherSpec(Schema):
    """One matcher: ``name`` is ``source``, ``severity``, ``dedup_key`` (the producer's key) or
    ``metadata.<key>[.<key>...]`` (a member of the notification's metadata, e.g.
    ``metadata.alertmanager.labels.alertname``); ``op`` one of ``=``, ``!=``, ``=~``, ``!~``;
    ``value`` the string to compare or the RE2 pattern (anchored: it must match the whole value)."""

    name: Annotated[str, Field(min_length=1, max_length=MAX_NAME)]
    op: Literal["=", "!=", "=~", "!~"]
    value: Annotated[str, Field(max_length=MAX_VALUE)]


class SilenceRequest(Schema):
    """The body of a new silence. Times are epoch seconds; ``starts_at`` defaults to now (a later
    one makes a maintenance window); give ``ends_at`` or ``duration_seconds`` (from the start)."""

    matchers: Annotated[list[MatcherSpec], Field(min_length=1, max_length=MAX_MATCHERS)]
    starts_at: float | None = Field(None, description="Epoch seconds; default now.")
    ends_at: float | None = Field(None, description="Epoch seconds, after starts_at.")
    duration_seconds: float | None = Field(None, description="Instead of ends_at: seconds from the start.")
    comment: Annotated[str, Field(min_length=1, max_length=MAX_COMMENT)]


class SilenceUpdateRequest(Schema):
    """The body of an edit: any of the members of ``SilenceRequest`` (a started silence keeps its
    start)."""

    matchers: Annotated[list[MatcherSpec], Field(min_length=1, max_length=MAX_MATCHERS)] | None = None
    starts_at: float | None = None
    ends_at: float | None = None
    duration_seconds: float | None = None
    comment: Annotated[str, Field(min_length=1, max_length=MAX_COMMENT)] | None = None


class PreviewRequest(Schema):
    """What a preview reads: the matchers of a silence being written."""

    matchers: Annotated[list[MatcherSpec], Field(min_length=1, max_length=MAX_MATCHERS)]


def _invalid(field: str, message: str) -> InvalidRequest:
    return InvalidRequest(f"{field} {message}", code=codes.INVALID_SILENCE,
                          errors=[{"field": field, "message": message}])


@functools.lru_cache(maxsize=512)
def _compiled(pattern: str):
    options = re2.Options()
    options.max_mem = RE2_MAX_MEM
    options.log_errors = False
    return re2.compile(f"^(?:{pattern})$", options)


def _regex_error(exc: Exception) -> str:
    """RE2's reason without its bytes repr or the anchoring wrapper ``_compiled`` adds
    (``b'missing ): ^(?:db-()$'`` -> ``missing )``)."""
    raw = exc.args[0] if exc.args else ""
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
    return text.split(": ^(?:", 1)[0] or "not a valid RE2 pattern"


def check_matchers(matchers: list[dict]) -> list[dict]:
    """Validate matcher dicts (``MatcherSpec`` shape already parsed) and return them normalised.
    Raises ``InvalidRequest`` ``invalid_silence`` naming ``matchers[i].name`` (unknown field),
    ``matchers[i].value`` (a pattern RE2 refuses) or ``matchers`` (every matcher matches the
    empty string: it would silence everything, which Alertmanager refuses too)."""
    out = []
    for i, m in enumerate(matchers):
        name, op, value = m["name"], m["op"], m["value"]
        if name not in FIELDS:
            path = name[len(METADATA_PREFIX):].split(".") if name.startswith(METADATA_PREFIX) else []
            if not path or any(not p for p in path) or len(path) > MAX_PATH_DEPTH:
                raise _invalid(f"matchers[{i}].name", f"unknown matcher field {name!r}: use one of {list(FIELDS)} "
                                                      f"or metadata.<key>[.<key>...]")
        if op in ("=~", "!~"):
            try:
                _compiled(value)
            except re2.error as exc:
                raise _invalid(f"matchers[{i}].value", f"invalid regular expression {value!r}: {_regex_error(exc)}") from None
        out.append({"name": name, "op": op, "value": value})
    if all(_match_one(m, "") for m in out):
        raise _invalid("matchers", "at least one matcher must not match the empty string (it would silence "
                                   "every notification)")
    return out


def subject(notification: dict, name: str) -> str:
    """The string a matcher named ``name`` compares for ``notification`` (the stored request
    dict): the field, or the metadata member at the dotted path. Missing, null or not a scalar:
    ``""`` (as a missing Alertmanager label). Booleans are ``true``/``false``; cut at
    ``MAX_SUBJECT`` characters. Pure."""
    if name in FIELDS:
        value = notification.get(name)
    else:
        value = notification.get("metadata") or {}
        for key in name[len(METADATA_PREFIX):].split("."):
            value = value.get(key) if isinstance(value, dict) else None
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, (int, float)) and not (isinstance(value, float) and not math.isfinite(value)):
        text = str(value)
    elif isinstance(value, str):
        text = value
    else:
        text = ""
    return text[:MAX_SUBJECT]


def _match_one(m: dict, text: str) -> bool:
    op = m["op"]
    if op == "=":
        return text == m["value"]
    if op == "!=":
        return text != m["value"]
    hit = _compiled(m["value"]).match(text) is not None
    return hit if op == "=~" else not hit


def matches(matchers: list[dict], notification: dict) -> bool:
    """Whether every matcher matches ``notification`` (a stored request dict). Pure."""
    return all(_match_one(m, subject(notification, m["name"])) for m in matchers)


# --- the silences in force: one read per pass -------------------------------------------------

@dataclass(frozen=True)
class Window:
    """The silences one pass reads at ``now``: ``active`` (holding now, latest end first) and
    ``ended`` (ended after the oldest notification the pass looks at was accepted). Read once,
    asked many times, so a pass with no silence costs one indexed query, never one per row."""

    now: float
    active: tuple
    ended: tuple = ()

    @classmethod
    def read(cls, now: float, since: float | None = None) -> Window:
        """One query: silences started by ``now`` that end after ``since`` (default ``now``)."""
        since = now if since is None else min(since, now)
        rows = list(Silence.objects.filter(starts_at__lte=now, ends_at__gt=since).order_by("-ends_at", "id"))
        return cls(now, tuple(s for s in rows if s.ends_at > now), tuple(s for s in rows if s.ends_at <= now))


def silencing(notification: dict, at: float, window: Window) -> Silence | None:
    """THE question: the silence that holds ``notification`` (a stored request dict) at ``at``
    (epoch seconds), or None. Of several, the one ending last. ``window``: ``Window.read`` of
    the caller's pass (dispatch, the deadline sweep and the escalation chain all ask here). Pure."""
    for s in window.active:
        if s.starts_at <= at < s.ends_at and matches(s.matchers, notification):
            return s
    return None


def hold(runtime, silence: Silence, notification_id: str, scope: str, now: float, *, remaining: float | None = None,
         payload: dict | None = None) -> bool:
    """Record that ``silence`` holds ``notification_id`` for ``scope``, in the caller's
    transaction: a ``uns_silence_holds`` row and, the first time, a SILENCED event (silence_id,
    scope, until, comment, created_by, plus ``payload``). Returns whether the hold is new."""
    try:
        with transaction.atomic():
            SilenceHold.objects.create(silence_id=silence.id, notification_id=notification_id, scope=scope, at=now,
                                       remaining=remaining)
    except IntegrityError:
        return False
    timeline.insert_events(runtime, [timeline.event(notification_id, timeline.SILENCED, {
        "silence_id": silence.id, "scope": scope, "until": silence.ends_at, "comment": silence.comment,
        "created_by": silence.created_by, **(payload or {})}, now)])
    return True


def paused_remaining(silence: Silence, row: Notification) -> float:
    """Seconds of ``row``'s ACK deadline left when ``silence`` began holding it: the remaining
    its earlier hold by this silence recorded, else ``deadline - max(starts_at, delivered_at)``."""
    earlier = (SilenceHold.objects.filter(silence_id=silence.id, notification_id=row.id, scope=DEADLINE)
               .values_list("remaining", flat=True).first())
    if earlier is not None:
        return earlier
    return row.deadline - max(silence.starts_at, row.delivered_at or silence.starts_at)


def silenced_while_waiting(notification: dict, window: Window) -> Silence | None:
    """An ended silence of ``window`` that matched ``notification`` and ended after it was
    accepted (so it held it, or would have: a dedup follower, a row in backoff, a worker that was
    down), or None. Pure: the matchers and the times decide, no hold row is read."""
    accepted = float(notification.get("created_at") or window.now)
    for s in window.ended:
        if s.ends_at > accepted and matches(s.matchers, notification):
            return s
    return None


def freshness_seconds() -> float:
    """``UNS_SILENCE_FRESHNESS_SECONDS``: how recent a held notification must be to be delivered
    when its silence ends (ADR 0007)."""
    return float(settings.UNS_SILENCE_FRESHNESS_SECONDS)


# --- the silence's own lifecycle ----------------------------------------------------------------

def state(silence: Silence, now: float) -> str:
    """``pending`` (starts later), ``active`` or ``expired`` at ``now``. Pure."""
    if silence.ends_at <= now:
        return EXPIRED
    return PENDING_STATE if silence.starts_at > now else ACTIVE


def _times(body, now: float, *, starts_at: float | None, current_end: float | None = None) -> tuple[float, float]:
    """``(starts_at, ends_at)`` of a create or edit body. Raises ``InvalidRequest`` ``invalid_silence``."""
    for name in ("starts_at", "ends_at", "duration_seconds"):
        value = getattr(body, name)
        if value is not None and not math.isfinite(value):
            raise _invalid(name, "must be a finite number")
        if name != "duration_seconds" and value is not None and not MIN_EPOCH <= value <= MAX_EPOCH:
            raise _invalid(name, "must be epoch seconds between 1970 and 3000 (seconds, not milliseconds)")
    if body.ends_at is not None and body.duration_seconds is not None:
        raise _invalid("ends_at", "give ends_at or duration_seconds, not both")
    start = starts_at if starts_at is not None else now
    if body.duration_seconds is not None:
        if body.duration_seconds <= 0:
            raise _invalid("duration_seconds", "must be positive")
        end = start + body.duration_seconds
    elif body.ends_at is not None:
        end = body.ends_at
    elif current_end is not None:
        end = current_end
    else:
        raise _invalid("ends_at", "is required (or duration_seconds)")
    if end <= start:
        raise _invalid("ends_at", "must be after starts_at")
    if end <= now:
        raise _invalid("ends_at", "must be in the future")
    if end - start > MAX_DURATION_SECONDS:
        raise _invalid("ends_at", f"a silence lasts at most {MAX_DURATION_SECONDS / 86400:g} days")
    return start, end


def _audit(silence: Silence, action: str, actor: str, now: float) -> None:
    """The silence's own audit row (its matchers and times as of this version) and the people
    audit's (who did what), in the caller's transaction."""
    SilenceAuditRecord.objects.create(id=new_id(), silence_id=silence.id, action=action, actor=actor, at=now,
                                      matchers=silence.matchers, starts_at=silence.starts_at,
                                      ends_at=silence.ends_at, comment=silence.comment)
    people_audit.record(actor, people_audit.SILENCE_ACTIONS[action], silence.id, at=now, title=silence.comment,
                        detail={"matchers": silence.matchers, "starts_at": silence.starts_at,
                                "ends_at": silence.ends_at})


def create(runtime, actor: str, request) -> Silence:
    """Create a silence from ``request`` (``SilenceRequest`` as a dict) by ``actor`` (the
    authenticated principal), with its CREATE audit row, in one transaction. A start in the past
    is taken as now. Raises ``InvalidRequest`` (``invalid_request`` for the shape,
    ``invalid_silence`` for an unknown matcher field, a bad pattern, a matcher set that matches
    everything, an end not after the start or already past)."""
    check_actor(actor)
    body = parse(SilenceRequest, request)
    matchers = check_matchers([m.model_dump() for m in body.matchers])
    now = runtime.clock()
    start, end = _times(body, now, starts_at=max(body.starts_at, now) if body.starts_at is not None else None)
    silence = Silence(id=new_id(), matchers=matchers, starts_at=start, ends_at=end, comment=body.comment,
                      created_by=actor, created_at=now, updated_at=now)
    with transaction.atomic():
        silence.save(force_insert=True)
        _audit(silence, CREATE, actor, now)
    return silence


def get(silence_id: str) -> Silence:
    """The silence, or ``NotFound`` ``silence_not_found``."""
    row = Silence.objects.filter(id=silence_id).first() if isinstance(silence_id, str) and len(silence_id) <= 36 \
        and "\x00" not in silence_id else None
    if row is None:
        raise NotFound(f"silence {silence_id} does not exist", code=codes.SILENCE_NOT_FOUND)
    return row


def update(runtime, silence_id: str, actor: str, request) -> Silence:
    """Edit a pending or active silence (matchers, comment, times; a started silence keeps its
    start), with an UPDATE audit row; the notifications it holds are re-timed to its new end in
    the same transaction (``_retime``). Raises ``NotFound``, ``InvalidRequest`` (as ``create``)
    and ``Conflict`` ``silence_expired`` (an ended silence cannot be edited: create a new one)."""
    check_actor(actor)
    body = parse(SilenceUpdateRequest, request)
    now = runtime.clock()
    with transaction.atomic():
        silence = Silence.objects.select_for_update().filter(id=get(silence_id).id).first()
        if state(silence, now) == EXPIRED:
            raise Conflict("this silence has ended; create a new one", code=codes.SILENCE_EXPIRED,
                           ends_at=silence.ends_at)
        started = silence.starts_at <= now
        if started and body.starts_at is not None and body.starts_at != silence.starts_at:
            raise _invalid("starts_at", "cannot move the start of a silence that has started")
        start = silence.starts_at if started else (max(body.starts_at, now) if body.starts_at is not None
                                                    else silence.starts_at)
        start, end = _times(body, now, starts_at=start, current_end=silence.ends_at)
        if body.matchers is not None:
            silence.matchers = check_matchers([m.model_dump() for m in body.matchers])
        if body.comment is not None:
            silence.comment = body.comment
        silence.starts_at, silence.ends_at, silence.updated_at = start, end, now
        silence.save()
        _audit(silence, UPDATE, actor, now)
        _retime(silence, now)
    return silence


def expire(runtime, silence_id: str, actor: str) -> Silence:
    """Expire a silence now ("expire now"): ``ends_at`` = now, ``expired_by`` the actor, an
    EXPIRE audit row, and the notifications it holds re-timed to now (``_retime``), in one
    transaction. A pending silence expires without ever holding. Idempotent: an ended silence is
    returned unchanged. Raises ``NotFound``."""
    check_actor(actor)
    now = runtime.clock()
    with transaction.atomic():
        silence = Silence.objects.select_for_update().filter(id=get(silence_id).id).first()
        if silence.ends_at <= now:
            return silence
        silence.ends_at = now
        silence.starts_at = min(silence.starts_at, now)
        silence.expired_by, silence.updated_at = actor, now
        silence.save()
        _audit(silence, EXPIRE, actor, now)
        _retime(silence, now)
    return silence


def _retime(silence: Silence, now: float) -> None:
    """Bring what ``silence`` holds in line with its (new) end, in the caller's transaction:
    a deferred dispatch comes due no later than the end, a paused ACK deadline is the end plus the
    time it had left, a deferred escalation step is due at the end. Only moves times earlier."""
    end = silence.ends_at
    holds = SilenceHold.objects.filter(silence_id=silence.id)
    ids = {scope: [] for scope in (DELIVERY, DEADLINE, ESCALATION)}
    remaining = {}
    for nid, scope, rest in holds.values_list("notification_id", "scope", "remaining"):
        ids.setdefault(scope, []).append(nid)
        if scope == DEADLINE:
            remaining[nid] = rest or 0.0
    if ids[DELIVERY]:
        transition(Notification.objects.filter(id__in=ids[DELIVERY]), status=(PENDING, PENDING), edge=HOLD,
                   where={"dedup_owner_id__isnull": True, "next_attempt__gt": end}, set={"next_attempt": end})
    for nid, rest in remaining.items():
        transition(Notification.objects.filter(id=nid), ack_status=(ACK_PENDING, ACK_PENDING), edge=HOLD,
                   where={"deadline__gt": end + rest}, set={"deadline": end + rest})
    if ids[ESCALATION]:
        transition(Notification.objects.filter(id__in=ids[ESCALATION]),
                   escalation_state=(ESCALATION_ACTIVE, ESCALATION_ACTIVE), edge=HOLD,
                   where={"escalation_due__gt": end}, set={"escalation_due": end})


def state_filter(value: str, now: float) -> Q:
    """The queryset filter of ``state`` ``value`` at ``now``."""
    if value == ACTIVE:
        return Q(starts_at__lte=now, ends_at__gt=now)
    if value == PENDING_STATE:
        return Q(starts_at__gt=now)
    return Q(ends_at__lte=now)


# --- preview: what would these matchers silence now? ---------------------------------------------

PREVIEW_SCAN = 5000   # open notifications a preview reads at most (newest first)
PREVIEW_SAMPLE = 10


def preview(request, *, scan: int = PREVIEW_SCAN, sample: int = PREVIEW_SAMPLE) -> dict:
    """Which open notifications (not yet delivered, or awaiting a response) ``request``'s
    matchers (``PreviewRequest``) would match now: ``{"matched": N, "scanned": M, "complete":
    bool, "sample": [{"id", "title", "source", "severity", "status", "ack_status"}]}``, reading
    at most ``scan`` newest open rows (``complete`` false when there were more). Writes nothing.
    Raises ``InvalidRequest`` as ``create`` does for the matchers."""
    body = parse(PreviewRequest, request)
    matchers = check_matchers([m.model_dump() for m in body.matchers])
    open_rows = (Q(status=PENDING) | Q(ack_status=ACK_PENDING))
    rows = list(Notification.objects.filter(open_rows).annotate(accepted=AcceptedAt()).order_by("-accepted", "-id")
                .values_list("id", "notification", "status", "ack_status")[:scan + 1])
    complete = len(rows) <= scan
    hits = [r for r in rows[:scan] if matches(matchers, r[1])]
    return {"matched": len(hits), "scanned": min(len(rows), scan), "complete": complete,
            "sample": [{"id": rid, "title": n.get("title"), "source": n.get("source"), "severity": n.get("severity"),
                        "status": status, "ack_status": ack} for rid, n, status, ack in hits[:sample]]}
