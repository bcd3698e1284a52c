"""People targets: ``schedule:<name>``, ``team:<name>`` and ``user:<user name>`` wherever a
policy or a request names a channel, resolved to people and their verified contact methods.

One parse (``parse``), one existence check (``missing``: activation, intake and escalation call
it through ``policies.store.channel_errors`` and ``runtime.intake.check_channels``), one
resolution at send time (``resolve``: the dispatch calls it with the attempt's clock, never
intake, so accept stays one transaction that resolves nobody). Reads only; the writes are
``notifications.runtime.oncall``'s.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from django.contrib.auth import get_user_model

from . import rotation
from .models import ContactMethod, Layer, Override, Schedule, Team, TeamMember

SCHEDULE, TEAM, USER = "schedule", "team", "user"
PREFIXES = (SCHEDULE, TEAM, USER)


def parse(name) -> tuple[str, str] | None:
    """``(kind, ref)`` of a people target (``"schedule:db"`` -> ``("schedule", "db")``), None
    for a channel name (no known prefix)."""
    if not isinstance(name, str) or ":" not in name:
        return None
    kind, _, ref = name.partition(":")
    if kind not in PREFIXES or not ref:
        return None
    return kind, ref


def is_people(name) -> bool:
    return parse(name) is not None


INBOX_NAME_MAX = 64  # uns_console_inbox.channel


def person_target_name(user: str) -> str:
    """The ``ChannelTarget.name`` a person's contact methods are sent under: ``user:<name>``, so
    the in-app inbox keeps one entry per person and notification (a team's members each get
    theirs); a name too long for the inbox's channel column keeps a prefix and a digest."""
    name = f"{USER}:{user}"
    if len(name) <= INBOX_NAME_MAX:
        return name
    return f"{USER}:{user[:40]}~{hashlib.sha256(user.encode()).hexdigest()[:16]}"


def missing(names) -> dict[str, str]:
    """``{name: reason}`` for every people target in ``names`` whose schedule, team or user does
    not exist (channel names are not looked at). Three queries at most."""
    wanted: dict[str, set[str]] = {k: set() for k in PREFIXES}
    for n in names:
        p = parse(n)
        if p:
            wanted[p[0]].add(p[1])
    found = {
        SCHEDULE: set(Schedule.objects.filter(name__in=wanted[SCHEDULE]).values_list("name", flat=True))
        if wanted[SCHEDULE] else set(),
        TEAM: set(Team.objects.filter(name__in=wanted[TEAM]).values_list("name", flat=True)) if wanted[TEAM] else set(),
        USER: set(get_user_model().objects.filter(username__in=wanted[USER], is_active=True)
                  .values_list("username", flat=True)) if wanted[USER] else set(),
    }
    out = {}
    for n in names:
        p = parse(n)
        if p and p[1] not in found[p[0]]:
            out[n] = f"{p[0]} {p[1]!r} does not exist" + (" or is inactive" if p[0] == USER else "")
    return out


def schedule_spec(schedule: Schedule, overrides_from: float | None = None) -> rotation.ScheduleSpec:
    """The pure ``rotation.ScheduleSpec`` of a stored schedule: its layers by position, its
    overrides oldest first (only those ending after ``overrides_from`` when given). Raises
    ``rotation.SpecError`` for a stored layer that no longer parses (cannot happen through
    ``runtime.oncall``)."""
    layers = Layer.objects.filter(schedule=schedule).order_by("position")
    ov = Override.objects.filter(schedule=schedule).select_related("user").order_by("created_at", "id")
    if overrides_from is not None:
        ov = ov.filter(end__gt=overrides_from)
    return rotation.ScheduleSpec(
        tuple(rotation.layer_from_dict(layer.as_spec_dict(), i) for i, layer in enumerate(layers)),
        tuple(rotation.OverrideSpec(o.user.username, o.start, o.end, o.id) for o in ov),
        schedule.time_zone)


@dataclass(frozen=True)
class Contact:
    """A verified contact method to page: its ``id``, ``kind``, ``label``, ``config`` and
    ``secret`` (the secret never leaves the dispatch; ``as_event`` leaves it and the config out)."""

    id: str
    kind: str
    label: str
    config: dict
    secret: str = field(repr=False, default="")

    def as_event(self) -> dict:
        return {"id": self.id, "kind": self.kind, "label": self.label}


@dataclass(frozen=True)
class Person:
    """One person a target resolved to: ``user``, why (``source``: ``override``, ``layer``,
    ``team`` or ``user``; ``layer``: the layer's name; ``override``: its id) and the verified
    ``contacts`` in the order to try them."""

    user: str
    source: str
    contacts: tuple[Contact, ...]
    layer: str | None = None
    override: str | None = None

    def as_event(self) -> dict:
        return {"user": self.user, "source": self.source, "layer": self.layer, "override": self.override,
                "contact_methods": [c.as_event() for c in self.contacts]}


@dataclass(frozen=True)
class Resolved:
    """What ``resolve`` found: the ``target``, the instant ``at`` (epoch seconds), ``people``
    (may be empty) and, when nobody can be paged, ``reason``."""

    target: str
    at: float
    people: tuple[Person, ...]
    reason: str | None = None

    def as_event(self) -> dict:
        return {"target": self.target, "at": self.at, "people": [p.as_event() for p in self.people],
                "reason": self.reason}


def contacts_of(user_ids) -> dict[int, tuple[Contact, ...]]:
    """``{user id: verified contacts in position order}``: only ``VERIFIED`` methods are paged."""
    out: dict[int, list[Contact]] = {}
    for m in ContactMethod.objects.filter(user_id__in=list(user_ids), verification=ContactMethod.VERIFIED) \
            .order_by("position", "created_at", "id"):
        out.setdefault(m.user_id, []).append(Contact(m.id, m.kind, m.label, m.config or {}, m.secret))
    return {k: tuple(v) for k, v in out.items()}


def resolve(target: str, at: float) -> Resolved:
    """The people ``target`` pages at ``at`` (epoch seconds) and their verified contact methods.
    ``schedule:<name>``: who ``rotation.on_call`` names (one person); ``team:<name>``: every
    member in order; ``user:<name>``: that user. ``reason`` says why nobody can be paged (the
    target is gone, nobody is on call, nobody has a verified contact method); people without a
    verified method stay listed with no contacts, so the timeline shows they were skipped."""
    p = parse(target)
    if p is None:
        return Resolved(target, at, (), f"{target!r} is not a people target")
    kind, ref = p
    User = get_user_model()
    found: list[tuple[object, str, str | None, str | None]] = []  # (user, source, layer, override)
    if kind == SCHEDULE:
        schedule = Schedule.objects.filter(name=ref).first()
        if schedule is None:
            return Resolved(target, at, (), f"schedule {ref!r} does not exist")
        spec = schedule_spec(schedule, overrides_from=at)
        who = rotation.on_call(spec, at)
        if who.user is None:
            return Resolved(target, at, (), f"nobody is on call in schedule {ref!r} at {rotation_iso(at)}")
        user = User.objects.filter(username=who.user, is_active=True).first()
        if user is None:
            return Resolved(target, at, (), f"{who.user!r}, on call in schedule {ref!r}, is not an active user")
        layer = spec.layers[who.layer].name if who.layer is not None else None
        found.append((user, who.source, layer, who.override))
    elif kind == TEAM:
        team = Team.objects.filter(name=ref).first()
        if team is None:
            return Resolved(target, at, (), f"team {ref!r} does not exist")
        for m in TeamMember.objects.filter(team=team, user__is_active=True).select_related("user").order_by("position"):
            found.append((m.user, TEAM, None, None))
        if not found:
            return Resolved(target, at, (), f"team {ref!r} has no active members")
    else:
        user = User.objects.filter(username=ref, is_active=True).first()
        if user is None:
            return Resolved(target, at, (), f"user {ref!r} does not exist or is inactive")
        found.append((user, USER, None, None))
    contacts = contacts_of(u.pk for u, *_ in found)
    people = tuple(Person(u.get_username(), src, contacts.get(u.pk, ()), layer, ov) for u, src, layer, ov in found)
    reason = None
    if not any(person.contacts for person in people):
        reason = f"nobody {target!r} resolved to has a verified contact method ({', '.join(p.user for p in people)})"
    return Resolved(target, at, people, reason)


def rotation_iso(at: float) -> str:
    return rotation.from_epoch(at, rotation.zone("UTC")).isoformat(timespec="seconds") + "Z"
