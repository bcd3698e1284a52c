"""The on-call service: the one writer of teams, schedules (layers, overrides) and contact
methods (``oncall.models``). The API, the MCP tools and the Django admin call these verbs and
nothing else writes those tables.

Each write is one transaction that changes the rows and appends an ``oncall_audit_records`` row
(who, when, what changed; never a secret or a contact address): schedules are policy-like
authority (issue 22). Deleting a schedule or team the ACTIVE policy set routes to
(``policies.store.routes_to``) is refused with ``Conflict`` ``target_routed``, as a routed channel
is (``runtime.channels.routing_refusal``), under the same revision lock.

Contact methods take their kinds, config rules and secrets from the channels'
(``runtime.channels.validate_config``), and are verified by one test send through the real
adapter (``verify``, ``runtime.channels.test_target``): ``VERIFIED`` when it succeeds, ``FAILED``
otherwise; changing a method's address or secret makes it ``UNVERIFIED`` again, and only a
``VERIFIED`` method is ever paged (``oncall.targets.contacts_of``).

Errors: ``InvalidRequest`` ``invalid_oncall`` (``errors: [{"field", "message"}]``),
``NotFound`` (``team_not_found``, ``schedule_not_found``, ``layer_not_found``,
``override_not_found``, ``contact_method_not_found``, ``user_not_found``), ``Conflict``
(``team_exists``, ``schedule_exists``, ``target_routed``).
"""
import math
import secrets as _secrets
import time

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.validators import validate_slug
from django.db import IntegrityError, transaction

from core import codes
from core.actors import check_actor
from core.errors import Conflict, InvalidRequest, NotFound
from core.keys import new_event_id, new_id
from oncall import rotation, targets
from oncall.models import AuditRecord, ContactMethod, Layer, Override, Schedule, Team, TeamMember

from .. import people_audit
from . import channels

MAX_NAME = 64
MAX_LAYERS = 20
MAX_MEMBERS = 100
MAX_OVERRIDE_SECONDS = 366 * 86400.0
MAX_CONTACT_METHODS = 20


def _invalid(field: str, message: str) -> InvalidRequest:
    return InvalidRequest(f"{field}: {message}", code=codes.INVALID_ONCALL, errors=[{"field": field, "message": message}])


def _audit(entity: str, name: str, action: str, *, actor: str, at: float, detail: dict | None = None) -> None:
    # a time-ordered id: the audit reads in write order by (at, id) even at equal times
    AuditRecord.objects.create(id=new_event_id(), entity=entity, name=name, action=action, actor=actor, at=at,
                               detail=detail or {})
    # and the people audit's row (who did what; the same detail, which never holds a secret)
    people_audit.record(actor, people_audit.ONCALL_ACTIONS[entity, action], name, at=at, title=name,
                        detail=detail or {})


def _check_name(name, field: str = "name") -> str:
    if not isinstance(name, str) or not 0 < len(name) <= MAX_NAME:
        raise _invalid(field, f"must be 1-{MAX_NAME} characters")
    try:
        validate_slug(name)
    except ValidationError:
        raise _invalid(field, "must hold only letters, digits, '-' or '_'") from None
    return name


def _check_text(value, field: str, limit: int = 2000) -> str:
    if not isinstance(value, str) or len(value) > limit:
        raise _invalid(field, f"must be a string of at most {limit} characters")
    return value


def _check_zone(name, field: str = "time_zone") -> str:
    try:
        rotation.zone(name)
    except rotation.SpecError as exc:
        raise _invalid(field, exc.message) from None
    return name


def _users(names, field: str) -> list:
    """The active users named (in order). Raises ``InvalidRequest`` naming the first unknown."""
    if not isinstance(names, list) or len(names) > MAX_MEMBERS or any(not isinstance(n, str) for n in names):
        raise _invalid(field, f"must be a list of at most {MAX_MEMBERS} user names")
    if len(set(names)) != len(names) and field != "members":
        raise _invalid(field, "names a user twice")
    found = {u.get_username(): u for u in get_user_model().objects.filter(username__in=names, is_active=True)}
    for n in names:
        if n not in found:
            raise _invalid(field, f"no active user {n!r}")
    return [found[n] for n in names]


def user(name):
    """The active user ``name``. Raises ``NotFound`` ``user_not_found``."""
    u = get_user_model().objects.filter(username=name, is_active=True).first() if isinstance(name, str) else None
    if u is None:
        raise NotFound(f"no active user {name!r}", code=codes.USER_NOT_FOUND)
    return u


def _routing_refusal(target: str) -> Conflict | None:
    """Under the intake's revision lock: ``target_routed`` when the ACTIVE set routes to it."""
    return channels.routed_refusal(target, lock=True, code=codes.TARGET_ROUTED, noun="")


def _team(name, lock: bool = False) -> Team:
    qs = Team.objects.select_for_update() if lock else Team.objects
    row = qs.filter(name=name).first() if isinstance(name, str) and "\x00" not in name else None
    if row is None:
        raise NotFound(f"no team {name!r}", code=codes.TEAM_NOT_FOUND)
    return row


def _set_members(team: Team, members: list) -> None:
    TeamMember.objects.filter(team=team).delete()
    TeamMember.objects.bulk_create([TeamMember(team=team, user=u, position=i) for i, u in enumerate(members)])


def create_team(name: str, *, description: str = "", members: list | None = None, actor: str,
                clock=time.time) -> Team:
    """A new team with ``members`` (user names, in order). Audit ``CREATE``. Raises
    ``InvalidRequest`` or ``Conflict`` ``team_exists``."""
    check_actor(actor)
    _check_name(name)
    _check_text(description, "description")
    users = _users(members or [], "members")
    if len({u.pk for u in users}) != len(users):
        raise _invalid("members", "names a user twice")
    now = clock()
    try:
        with transaction.atomic():
            row = Team.objects.create(name=name, description=description, created_at=now)
            _set_members(row, users)
            _audit("team", name, "CREATE", actor=actor, at=now, detail={"members": [u.get_username() for u in users]})
    except IntegrityError:
        raise Conflict(f"a team named {name!r} exists", code=codes.TEAM_EXISTS, team=name) from None
    return row


def update_team(name: str, *, description: str | None = None, members: list | None = None, actor: str,
                clock=time.time) -> Team:
    """Change a team's ``description`` and/or ``members`` (None: unchanged). Audit ``UPDATE``."""
    check_actor(actor)
    with transaction.atomic():
        row = _team(name, lock=True)
        detail = {}
        if description is not None:
            row.description = _check_text(description, "description")
            row.save(update_fields=["description"])
            detail["description"] = True
        if members is not None:
            users = _users(members, "members")
            if len({u.pk for u in users}) != len(users):
                raise _invalid("members", "names a user twice")
            _set_members(row, users)
            detail["members"] = [u.get_username() for u in users]
        if detail:
            _audit("team", name, "UPDATE", actor=actor, at=clock(), detail=detail)
    return row


def delete_team(name: str, *, actor: str, clock=time.time) -> None:
    """Delete a team (audit ``DELETE``); refused with ``target_routed`` while the ACTIVE policy
    set names ``team:<name>``."""
    check_actor(actor)
    with transaction.atomic():
        refusal = _routing_refusal(f"team:{name}")
        row = _team(name, lock=True)
        if refusal is not None:
            raise refusal
        _audit("team", name, "DELETE", actor=actor, at=clock())
        row.delete()


# schedules --------------------------------------------------------------------------------

def schedule(name, lock: bool = False) -> Schedule:
    """The schedule ``name``. Raises ``NotFound`` ``schedule_not_found``."""
    qs = Schedule.objects.select_for_update() if lock else Schedule.objects
    row = qs.filter(name=name).first() if isinstance(name, str) and "\x00" not in name else None
    if row is None:
        raise NotFound(f"no schedule {name!r}", code=codes.SCHEDULE_NOT_FOUND)
    return row


def create_schedule(name: str, *, time_zone: str = "UTC", description: str = "", team: str | None = None,
                    layers: list | None = None, actor: str, clock=time.time) -> Schedule:
    """A new schedule with ``layers`` (lowest precedence first, each checked as ``check_layer``;
    none: nobody is on call yet), all in one transaction. Audit ``CREATE`` and one ``ADD_LAYER``
    per layer. Raises ``InvalidRequest`` (field ``layers[i].<field>``), ``NotFound``
    ``team_not_found`` or ``Conflict`` ``schedule_exists``."""
    check_actor(actor)
    _check_name(name)
    _check_zone(time_zone)
    _check_text(description, "description")
    if len(layers or []) > MAX_LAYERS:
        raise _invalid("layers", f"a schedule has at most {MAX_LAYERS} layers")
    clean_layers = []
    for i, layer in enumerate(layers or []):
        try:
            clean_layers.append(check_layer(layer))
        except InvalidRequest as exc:
            err = exc.extra["errors"][0]
            raise _invalid(f"layers[{i}].{err['field']}", err["message"]) from None
    team_row = _team(team) if team is not None else None
    now = clock()
    try:
        with transaction.atomic():
            row = Schedule.objects.create(name=name, description=description, time_zone=time_zone, team=team_row,
                                          feed_token=_secrets.token_urlsafe(32), created_at=now, updated_at=now)
            _audit("schedule", name, "CREATE", actor=actor, at=now,
                   detail={"time_zone": time_zone, "team": team})
            for position, clean in enumerate(clean_layers):
                Layer.objects.create(schedule=row, position=position, **clean)
                _audit("schedule", name, "ADD_LAYER", actor=actor, at=now, detail={"position": position, "layer": clean})
    except IntegrityError:
        raise Conflict(f"a schedule named {name!r} exists", code=codes.SCHEDULE_EXISTS, schedule=name) from None
    return row


def update_schedule(name: str, changes: dict, *, actor: str, clock=time.time) -> Schedule:
    """Change ``description``, ``time_zone`` or ``team`` (null: none). Audit ``UPDATE``."""
    check_actor(actor)
    if not isinstance(changes, dict) or set(changes) - {"description", "time_zone", "team"}:
        raise _invalid("body", "may change only description, time_zone, team")
    with transaction.atomic():
        row = schedule(name, lock=True)
        if "description" in changes:
            row.description = _check_text(changes["description"], "description")
        if "time_zone" in changes:
            row.time_zone = _check_zone(changes["time_zone"])
        if "team" in changes:
            row.team = None if changes["team"] is None else _team(changes["team"])
        now = clock()
        row.updated_at = now
        row.save()
        _audit("schedule", name, "UPDATE", actor=actor, at=now, detail={"changed": sorted(changes)})
    return row


def rotate_feed_token(name: str, *, actor: str, clock=time.time) -> Schedule:
    """A new iCalendar feed token (the old feed URL stops working). Audit ``ROTATE_FEED_TOKEN``."""
    check_actor(actor)
    with transaction.atomic():
        row = schedule(name, lock=True)
        row.feed_token = _secrets.token_urlsafe(32)
        row.save(update_fields=["feed_token"])
        _audit("schedule", name, "ROTATE_FEED_TOKEN", actor=actor, at=clock())
    return row


def delete_schedule(name: str, *, actor: str, clock=time.time) -> None:
    """Delete a schedule with its layers and overrides (audit ``DELETE``); refused with
    ``target_routed`` while the ACTIVE policy set names ``schedule:<name>``."""
    check_actor(actor)
    with transaction.atomic():
        refusal = _routing_refusal(f"schedule:{name}")
        row = schedule(name, lock=True)
        if refusal is not None:
            raise refusal
        _audit("schedule", name, "DELETE", actor=actor, at=clock())
        row.delete()


LAYER_FIELDS = ("name", "members", "rotation_unit", "rotation_count", "start", "time_zone", "restrictions", "end")


def check_layer(value: dict) -> dict:
    """The normalised stored form of a layer (``Layer.as_spec_dict``): every member a known
    active user, the rotation parseable by ``oncall.rotation``. Raises ``InvalidRequest``."""
    if not isinstance(value, dict):
        raise _invalid("layer", "must be an object")
    unknown = sorted(set(value) - set(LAYER_FIELDS))
    if unknown:
        raise _invalid(unknown[0], "unknown field")
    name = value.get("name") or ""
    _check_text(name, "name", MAX_NAME)
    members = value.get("members")
    if not isinstance(members, list) or not members:
        raise _invalid("members", "must name at least one user")
    _users(sorted(set(members)) if all(isinstance(m, str) for m in members) else members, "members")
    try:
        spec = rotation.layer_from_dict({**value, "name": name})
    except rotation.SpecError as exc:
        raise _invalid(exc.field, exc.message) from None
    return {"name": name, "members": list(spec.members), "rotation_unit": spec.unit, "rotation_count": spec.count,
            "start": spec.start.isoformat(timespec="minutes"), "time_zone": spec.time_zone,
            "restrictions": [r.as_dict() for r in spec.restrictions], "end": spec.end}


def add_layer(name: str, layer: dict, *, actor: str, clock=time.time) -> Layer:
    """Add a layer on top of schedule ``name``'s (the highest precedence). Audit ``ADD_LAYER``."""
    check_actor(actor)
    clean = check_layer(layer)
    with transaction.atomic():
        row = schedule(name, lock=True)
        count = Layer.objects.filter(schedule=row).count()
        if count >= MAX_LAYERS:
            raise _invalid("layers", f"a schedule has at most {MAX_LAYERS} layers")
        top = max(Layer.objects.filter(schedule=row).values_list("position", flat=True), default=-1)
        out = Layer.objects.create(schedule=row, position=top + 1, **clean)
        now = clock()
        Schedule.objects.filter(pk=row.pk).update(updated_at=now)
        _audit("schedule", name, "ADD_LAYER", actor=actor, at=now, detail={"position": out.position, "layer": clean})
    return out


def _layer(row: Schedule, position) -> Layer:
    if not isinstance(position, int) or isinstance(position, bool):
        raise NotFound(f"no layer {position!r}", code=codes.LAYER_NOT_FOUND)
    out = Layer.objects.filter(schedule=row, position=position).first()
    if out is None:
        raise NotFound(f"schedule {row.name!r} has no layer at position {position}", code=codes.LAYER_NOT_FOUND)
    return out


def update_layer(name: str, position: int, layer: dict, *, actor: str, clock=time.time) -> Layer:
    """Replace the layer at ``position`` (the whole layer, validated as ``check_layer``). Audit
    ``UPDATE_LAYER``."""
    check_actor(actor)
    clean = check_layer(layer)
    with transaction.atomic():
        row = schedule(name, lock=True)
        out = _layer(row, position)
        for k, v in clean.items():
            setattr(out, k, v)
        out.save()
        now = clock()
        Schedule.objects.filter(pk=row.pk).update(updated_at=now)
        _audit("schedule", name, "UPDATE_LAYER", actor=actor, at=now, detail={"position": position, "layer": clean})
    return out


def delete_layer(name: str, position: int, *, actor: str, clock=time.time) -> None:
    """Remove the layer at ``position`` (the others keep theirs). Audit ``DELETE_LAYER``."""
    check_actor(actor)
    with transaction.atomic():
        row = schedule(name, lock=True)
        _layer(row, position).delete()
        now = clock()
        Schedule.objects.filter(pk=row.pk).update(updated_at=now)
        _audit("schedule", name, "DELETE_LAYER", actor=actor, at=now, detail={"position": position})


def _check_span(start, end) -> tuple[float, float]:
    for field, v in (("start", start), ("end", end)):
        if (not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v)
                or not rotation.MIN_EPOCH <= v <= rotation.MAX_EPOCH):
            raise _invalid(field, "must be epoch seconds (1970..3000)")
    if not end > start:
        raise _invalid("end", "must be after start")
    if end - start > MAX_OVERRIDE_SECONDS:
        raise _invalid("end", "an override lasts at most 366 days")
    return float(start), float(end)


def add_override(name: str, user_name: str, start: float, end: float, *, actor: str, clock=time.time,
                 source: str = "manual", ical_uid: str | None = None) -> Override:
    """``user_name`` is on call in schedule ``name`` from ``start`` to ``end`` (epoch seconds,
    end exclusive), over every layer (a later override wins over an earlier one). Audit
    ``ADD_OVERRIDE``. Raises ``InvalidRequest`` (bad span, unknown user) or ``NotFound``."""
    check_actor(actor)
    start, end = _check_span(start, end)
    person = _users([user_name] if isinstance(user_name, str) else user_name, "user")[0]
    with transaction.atomic():
        row = schedule(name, lock=True)
        now = clock()
        out = Override.objects.create(id=new_id(), schedule=row, user=person, start=start, end=end, source=source,
                                      ical_uid=ical_uid, created_by=actor, created_at=now)
        Schedule.objects.filter(pk=row.pk).update(updated_at=now)
        _audit("schedule", name, "ADD_OVERRIDE", actor=actor, at=now,
               detail={"override": out.id, "user": person.get_username(), "start": start, "end": end, "source": source})
    return out


def delete_override(name: str, override_id: str, *, actor: str, clock=time.time) -> None:
    """Remove an override. Audit ``DELETE_OVERRIDE``. Raises ``NotFound``."""
    check_actor(actor)
    with transaction.atomic():
        row = schedule(name, lock=True)
        out = Override.objects.filter(schedule=row, id=override_id).select_related("user").first() \
            if isinstance(override_id, str) else None
        if out is None:
            raise NotFound(f"schedule {name!r} has no override {override_id!r}", code=codes.OVERRIDE_NOT_FOUND)
        detail = {"override": out.id, "user": out.user.get_username(), "start": out.start, "end": out.end}
        out.delete()
        now = clock()
        Schedule.objects.filter(pk=row.pk).update(updated_at=now)
        _audit("schedule", name, "DELETE_OVERRIDE", actor=actor, at=now, detail=detail)


def import_overrides(name: str, shifts: list[tuple[str, float, float, str]], *, actor: str,
                     clock=time.time) -> list[Override]:
    """Import ``shifts`` (``(user name, start, end, uid)``, from an iCalendar file:
    ``oncall.ical.parse_shifts``) as overrides of source ``ical``: an imported override with
    the same ``uid`` and start is replaced, so importing a file twice changes nothing. All or
    nothing (one transaction); audit ``IMPORT`` with the count."""
    check_actor(actor)
    for i, (u, s, e, _uid) in enumerate(shifts):
        try:
            _check_span(s, e)
            _users([u], "user")
        except InvalidRequest as exc:
            raise _invalid(f"shifts[{i}].{exc.extra['errors'][0]['field']}", exc.extra["errors"][0]["message"]) from None
    out = []
    with transaction.atomic():
        row = schedule(name, lock=True)
        now = clock()
        users = {u.get_username(): u for u in get_user_model().objects.filter(username__in={s[0] for s in shifts})}
        for u, s, e, uid in shifts:
            key = f"{uid}@{s}"
            Override.objects.filter(schedule=row, source="ical", ical_uid=key).delete()
            out.append(Override.objects.create(id=new_id(), schedule=row, user=users[u], start=float(s), end=float(e),
                                               source="ical", ical_uid=key, created_by=actor, created_at=now))
        Schedule.objects.filter(pk=row.pk).update(updated_at=now)
        _audit("schedule", name, "IMPORT", actor=actor, at=now, detail={"overrides": len(out)})
    return out


# contact methods --------------------------------------------------------------------------

def _contact(user_row, method_id, lock: bool = False) -> ContactMethod:
    qs = ContactMethod.objects.select_for_update() if lock else ContactMethod.objects
    row = qs.filter(user=user_row, id=method_id).first() if isinstance(method_id, str) else None
    if row is None:
        raise NotFound(f"{user_row.get_username()!r} has no contact method {method_id!r}",
                       code=codes.CONTACT_METHOD_NOT_FOUND)
    return row


def _contact_name(user_row, method_id: str) -> str:
    return f"{user_row.get_username()}/{method_id}"


def _clean_contact(kind, config, secret) -> dict:
    try:
        return channels.validate_config(kind, config, secret)
    except InvalidRequest as exc:
        err = exc.extra.get("errors", [{"field": "config", "message": exc.detail}])[0]
        raise _invalid(err["field"], err["message"]) from None


def create_contact_method(user_name: str, kind: str, config: dict | None = None, secret: str = "", *,
                          label: str = "", position: int | None = None, actor: str,
                          clock=time.time) -> ContactMethod:
    """A new ``UNVERIFIED`` contact method of ``user_name`` (a channel kind, its config and
    secret checked as a channel's). ``position``: the order to try it in (default: last).
    Audit ``CREATE`` (kind and label; never the address or the secret)."""
    check_actor(actor)
    person = user(user_name)
    _check_text(label, "label", MAX_NAME)
    clean = _clean_contact(kind, config if config is not None else {}, secret)
    if position is not None and (not isinstance(position, int) or isinstance(position, bool) or position < 0):
        raise _invalid("position", "must be a non-negative integer")
    now = clock()
    with transaction.atomic():
        existing = ContactMethod.objects.select_for_update().filter(user=person)
        if existing.count() >= MAX_CONTACT_METHODS:
            raise _invalid("contact_methods", f"a person has at most {MAX_CONTACT_METHODS} contact methods")
        if position is None:
            position = max(existing.values_list("position", flat=True), default=-1) + 1
        row = ContactMethod.objects.create(id=new_id(), user=person, position=position, label=label, kind=kind,
                                           config=clean, secret=secret, created_at=now)
        _audit("contact_method", _contact_name(person, row.id), "CREATE", actor=actor, at=now,
               detail={"kind": kind, "label": label, "position": position, "secret": bool(secret)})
    return row


def update_contact_method(user_name: str, method_id: str, changes: dict, *, actor: str,
                          clock=time.time) -> ContactMethod:
    """Change ``label``, ``position``, ``config`` (whole) or ``secret``. A changed config or
    secret makes the method ``UNVERIFIED`` (verify it again). Audit ``UPDATE`` (field names)."""
    check_actor(actor)
    if not isinstance(changes, dict) or set(changes) - {"label", "position", "config", "secret"}:
        raise _invalid("body", "may change only label, position, config, secret")
    person = user(user_name)
    with transaction.atomic():
        row = _contact(person, method_id, lock=True)
        if "label" in changes:
            row.label = _check_text(changes["label"], "label", MAX_NAME)
        if "position" in changes:
            p = changes["position"]
            if not isinstance(p, int) or isinstance(p, bool) or p < 0:
                raise _invalid("position", "must be a non-negative integer")
            row.position = p
        if "config" in changes or "secret" in changes:
            config = changes.get("config", row.config)
            secret = changes.get("secret", row.secret)
            row.config = _clean_contact(row.kind, config, secret)
            row.secret = secret
            row.verification, row.verified_at = ContactMethod.UNVERIFIED, None
        row.save()
        _audit("contact_method", _contact_name(person, row.id), "UPDATE", actor=actor, at=clock(),
               detail={"changed": sorted(changes)})
    return row


def delete_contact_method(user_name: str, method_id: str, *, actor: str, clock=time.time) -> None:
    """Remove a contact method. Audit ``DELETE``."""
    check_actor(actor)
    person = user(user_name)
    with transaction.atomic():
        row = _contact(person, method_id, lock=True)
        _audit("contact_method", _contact_name(person, row.id), "DELETE", actor=actor, at=clock(),
               detail={"kind": row.kind})
        row.delete()


def verify_contact_method(user_name: str, method_id: str, *, adapters: dict, actor: str,
                          clock=time.time) -> tuple[ContactMethod, channels.TestResult]:
    """Send one test message through the method's real adapter (``channels.test_target``, the
    channel test's path; outside any transaction) and record the outcome: ``VERIFIED`` (and
    ``verified_at``) on success, ``FAILED`` with the masked error otherwise. Audit ``VERIFY``
    (success and when; never the answer). A method changed while the test ran keeps its new
    state (the record is conditional on the tested address and secret)."""
    check_actor(actor)
    person = user(user_name)
    row = _contact(person, method_id)
    result = channels.test_target(targets.person_target_name(person.get_username()), row.kind, row.config, row.secret,
                                  adapters=adapters, clock=clock)
    now = clock()
    with transaction.atomic():
        state = ContactMethod.VERIFIED if result.success else ContactMethod.FAILED
        current = ContactMethod.objects.select_for_update().filter(pk=row.pk).first()
        if current is not None and current.config == row.config and current.secret == row.secret:
            ContactMethod.objects.filter(pk=row.pk).update(
                verification=state, verified_at=now if result.success else None, last_test_at=now,
                last_test_error="" if result.success else (result.error or result.answer or "failed")[:500])
            _audit("contact_method", _contact_name(person, row.id), "VERIFY", actor=actor, at=now,
                   detail={"success": result.success})
    return ContactMethod.objects.get(pk=row.pk), result
