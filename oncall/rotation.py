"""Who is on call: the one pure function of a schedule (no database, no clock).

A schedule (``ScheduleSpec``) is ``layers`` of rotations, lowest precedence first, and
``overrides``. ``on_call(spec, t)`` answers who is on call at ``t`` (epoch seconds);
``shifts(spec, a, b)`` lists the shifts between two instants (the calendar, the iCalendar feed
and the API read them), built from ``on_call`` itself, so the two never disagree.

The rules (the generated docs/reference/oncall.md shows them to users; Grafana OnCall and PagerDuty's
schedules work the same way):

- An override covering ``t`` (``start <= t < end``) wins over every layer; of several, the one
  created last (the last in ``overrides``) wins.
- Otherwise the highest layer with someone on call at ``t`` wins; a layer with nobody there
  (before its start, after its end, outside its restrictions, no members) lets the next layer
  below answer. No layer with anyone: nobody is on call (``OnCall.user`` is None), which the
  router turns into a failed page with a reason, never into silence.
- A layer's hand-offs are counted from ``start``, a local wall-clock date and time in the
  layer's IANA ``time_zone``. ``days`` and ``weeks`` rotations hand off at that same wall-clock
  time every ``count`` days or weeks, whatever daylight-saving changes lie between (a shift
  across the spring change in Europe/Berlin is 23 hours long, across the autumn change 25;
  across Australia/Lord_Howe's 30-minute change 23.5 or 24.5). ``hours`` rotations hand off every
  ``count`` elapsed hours (a 12-hour rotation stays 12 real hours across a change).
- A wall-clock time that does not exist (inside a spring-forward gap) means the instant the
  offset before the gap gives it (02:30 in Berlin on the spring change is 03:30 CEST); one that
  happens twice (an autumn change) means its first occurrence (``fold=0``, PEP 495).
- ``restrictions``: a layer with any has someone on call only inside one of them. A restriction
  names weekdays (0 Monday .. 6 Sunday) and a wall-clock ``start`` and ``end`` in the layer's
  zone (``"09:00"``-``"17:00"``; ``"24:00"`` is midnight at the day's end); an ``end`` at or
  before ``start`` runs over midnight into the next day (the weekday named is the one it starts
  on). Restrictions read the wall clock: ``09:00``-``17:00`` is eight hours on any day.
- Member ``k`` of a rotation is on call in its ``k``-th shift, modulo the number of members.

Times are epoch seconds (floats) everywhere outside this module's local wall-clock arithmetic.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta, timezone
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from core.times import MAX_EPOCH, MIN_EPOCH

HOURS, DAYS, WEEKS = "hours", "days", "weeks"
# The instants a schedule speaks of: 1970-01-01 .. 3000-01-01 (epoch seconds). Anything later is
# refused as input (a layer's start year too), so a year's look-ahead never leaves datetime's range:
# core.times.MIN_EPOCH, MAX_EPOCH.
MIN_YEAR, MAX_YEAR = 1970, 2999
UNITS = (HOURS, DAYS, WEEKS)
OVERRIDE, LAYER = "override", "layer"
_UTC = timezone.utc
_DAY = timedelta(days=1)


class SpecError(ValueError):
    """A schedule specification that cannot be evaluated: ``field`` names what is wrong."""

    def __init__(self, field_: str, message: str):
        super().__init__(f"{field_}: {message}")
        self.field = field_
        self.message = message


def zone(name: str) -> ZoneInfo:
    """The IANA time zone ``name``. Raises ``SpecError`` (field ``time_zone``) for an unknown one."""
    if not isinstance(name, str) or not name or name not in _zone_names():
        raise SpecError("time_zone", f"{name!r} is not an IANA time zone name")
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise SpecError("time_zone", f"{name!r} is not an IANA time zone name") from None


_ZONES: frozenset[str] | None = None


def _zone_names() -> frozenset[str]:
    global _ZONES
    if _ZONES is None:
        _ZONES = frozenset(available_timezones())
    return _ZONES


def parse_clock(value: str, *, allow_24: bool = False) -> time | None:
    """``"HH:MM"`` as a ``time``; ``"24:00"`` (only with ``allow_24``) is None, the end of the
    day. Raises ``SpecError``."""
    if isinstance(value, str) and len(value) == 5 and value[2] == ":" and value[:2].isdigit() and value[3:].isdigit():
        hh, mm = int(value[:2]), int(value[3:])
        if allow_24 and hh == 24 and mm == 0:
            return None
        if hh < 24 and mm < 60:
            return time(hh, mm)
    raise SpecError("restrictions", f"{value!r} is not a wall-clock time HH:MM")


def parse_local(value: str) -> datetime:
    """A naive local date and time ``"YYYY-MM-DDTHH:MM"`` (seconds allowed). Raises ``SpecError``."""
    try:
        parsed = datetime.fromisoformat(value) if isinstance(value, str) else None
    except ValueError:
        parsed = None
    if parsed is None or parsed.tzinfo is not None:
        raise SpecError("start", f"{value!r} is not a local date and time YYYY-MM-DDTHH:MM (no offset)")
    if not MIN_YEAR <= parsed.year <= MAX_YEAR:
        raise SpecError("start", f"the year must be {MIN_YEAR}..{MAX_YEAR}")
    return parsed


@dataclass(frozen=True)
class Restriction:
    """Weekdays (0 Monday .. 6 Sunday) and a wall-clock window ``start``-``end`` (``end`` None:
    midnight at the day's end; ``end <= start``: over midnight)."""

    days: frozenset[int]
    start: time
    end: time | None

    @classmethod
    def parse(cls, value: dict) -> Restriction:
        """From ``{"days": [0..6], "start": "HH:MM", "end": "HH:MM"}``. Raises ``SpecError``."""
        if not isinstance(value, dict) or set(value) - {"days", "start", "end"}:
            raise SpecError("restrictions", 'each must be {"days": [0..6], "start": "HH:MM", "end": "HH:MM"}')
        days = value.get("days", list(range(7)))
        if (not isinstance(days, list) or not days
                or any(not isinstance(d, int) or isinstance(d, bool) or not 0 <= d <= 6 for d in days)):
            raise SpecError("restrictions", "days must be a non-empty list of weekdays 0 (Monday) .. 6 (Sunday)")
        start = parse_clock(value.get("start"))
        end = parse_clock(value.get("end"), allow_24=True)
        if end == start:
            raise SpecError("restrictions", "start and end must differ")
        return cls(frozenset(days), start, end)

    def as_dict(self) -> dict:
        return {"days": sorted(self.days), "start": self.start.strftime("%H:%M"),
                "end": "24:00" if self.end is None else self.end.strftime("%H:%M")}

    def overnight(self) -> bool:
        return self.end is not None and self.end <= self.start

    def holds(self, local: datetime) -> bool:
        """Whether the wall-clock ``local`` (naive, the layer's zone) is inside this window."""
        t = local.time()
        wd = local.weekday()
        if not self.overnight():
            return wd in self.days and self.start <= t and (self.end is None or t < self.end)
        return (wd in self.days and t >= self.start) or ((wd - 1) % 7 in self.days and t < self.end)


@dataclass(frozen=True)
class LayerSpec:
    """One rotation layer: ``members`` (user names, in order), ``unit`` and ``count`` (the
    rotation length), ``start`` (naive local wall clock of the first hand-off), ``time_zone``,
    ``restrictions`` (none: always), ``end`` (epoch seconds, None: open-ended)."""

    members: tuple[str, ...]
    unit: str
    count: int
    start: datetime
    time_zone: str
    restrictions: tuple[Restriction, ...] = ()
    end: float | None = None
    name: str = ""

    def __post_init__(self):
        if self.unit not in UNITS:
            raise SpecError("rotation_unit", f"must be one of {', '.join(UNITS)}")
        if not isinstance(self.count, int) or isinstance(self.count, bool) or not 1 <= self.count <= 1000:
            raise SpecError("rotation_count", "must be an integer 1..1000")
        if self.start.tzinfo is not None:
            raise SpecError("start", "must be a local (naive) date and time")
        zone(self.time_zone)

    @property
    def tz(self) -> ZoneInfo:
        return ZoneInfo(self.time_zone)

    def start_epoch(self) -> float:
        return to_epoch(self.start, self.tz)

    def handoff(self, k: int) -> float:
        """The instant (epoch seconds) of hand-off ``k`` (0: the layer's start; may be negative)."""
        if self.unit == HOURS:
            return self.start_epoch() + k * self.count * 3600.0
        days = self.count * (7 if self.unit == WEEKS else 1)
        return to_epoch(self.start + timedelta(days=k * days), self.tz)

    def shift_index(self, t: float) -> int:
        """The ``k`` with ``handoff(k) <= t < handoff(k + 1)``."""
        if self.unit == HOURS:
            return math.floor((t - self.start_epoch()) / (self.count * 3600.0))
        days = self.count * (7 if self.unit == WEEKS else 1)
        local = from_epoch(t, self.tz)
        k = math.floor((local - self.start).total_seconds() / (days * 86400.0))
        while self.handoff(k + 1) <= t:
            k += 1
        while self.handoff(k) > t:
            k -= 1
        return k

    def active(self, t: float) -> bool:
        """Inside the layer's span and restrictions (not counting members)."""
        if t < self.start_epoch() or (self.end is not None and t >= self.end):
            return False
        if not self.restrictions:
            return True
        local = from_epoch(t, self.tz)
        return any(r.holds(local) for r in self.restrictions)

    def member_at(self, t: float) -> str | None:
        if not self.members or not self.active(t):
            return None
        return self.members[self.shift_index(t) % len(self.members)]


@dataclass(frozen=True)
class OverrideSpec:
    """``user`` is on call from ``start`` to ``end`` (epoch seconds, end exclusive)."""

    user: str
    start: float
    end: float
    id: str = ""


@dataclass(frozen=True)
class ScheduleSpec:
    """``layers`` lowest precedence first; ``overrides`` oldest first (a later one wins)."""

    layers: tuple[LayerSpec, ...] = ()
    overrides: tuple[OverrideSpec, ...] = ()
    time_zone: str = "UTC"


@dataclass(frozen=True)
class OnCall:
    """Who is on call at an instant: ``user`` (None: nobody), ``source`` (``override``,
    ``layer`` or None), ``layer`` (index in ``ScheduleSpec.layers`` when from a layer),
    ``override`` (the override's id when from one)."""

    user: str | None
    source: str | None = None
    layer: int | None = None
    override: str | None = None


@dataclass(frozen=True)
class Shift:
    """``user`` on call from ``start`` to ``end`` (epoch seconds, end exclusive), and why
    (``source``, ``layer``, ``override`` as in ``OnCall``)."""

    user: str
    start: float
    end: float
    source: str
    layer: int | None = None
    override: str | None = None


def to_epoch(local: datetime, tz: ZoneInfo, fold: int = 0) -> float:
    """The epoch seconds of naive wall clock ``local`` in ``tz`` (``fold`` as PEP 495)."""
    return local.replace(tzinfo=tz, fold=fold).timestamp()


def from_epoch(t: float, tz: ZoneInfo) -> datetime:
    """The naive wall clock in ``tz`` at epoch ``t``."""
    return datetime.fromtimestamp(t, _UTC).astimezone(tz).replace(tzinfo=None)


def on_call(spec: ScheduleSpec, t: float) -> OnCall:
    """Who is on call in schedule ``spec`` at ``t`` (epoch seconds): the module's rules."""
    for o in reversed(spec.overrides):
        if o.start <= t < o.end:
            return OnCall(o.user, OVERRIDE, override=o.id)
    for i in range(len(spec.layers) - 1, -1, -1):
        user = spec.layers[i].member_at(t)
        if user is not None:
            return OnCall(user, LAYER, layer=i)
    return OnCall(None)


def next_change(spec: ScheduleSpec, t: float, horizon: float = 366 * 86400.0) -> Shift | None:
    """The first shift starting after ``t`` with someone other than who is on call at ``t``
    on call (the "next on call"), looking at most ``horizon`` seconds ahead; None when nobody
    is within it."""
    now = on_call(spec, t)
    step = 14 * 86400.0
    a = t
    while a < t + horizon:
        b = min(a + step, t + horizon)
        for s in shifts(spec, a, b):
            if s.start > t and s.user != now.user:
                return s
        a = b
    return None


def shifts(spec: ScheduleSpec, a: float, b: float) -> list[Shift]:
    """The shifts between ``a`` and ``b`` (epoch seconds, ``a < b``): maximal spans in which
    ``on_call`` gives one person for one reason, clipped to ``[a, b)``; spans with nobody on
    call are left out (they are the gaps). Each breakpoint where the answer may change (hand-
    offs, layer starts and ends, restriction edges in both folds, the zones' offset changes,
    override edges) is evaluated with ``on_call``, so the two agree everywhere."""
    if not b > a:
        return []
    points = {a, b}
    for layer in spec.layers:
        points.update(_layer_points(layer, a, b))
    for o in spec.overrides:
        points.update((o.start, o.end))
    ordered = sorted(p for p in points if a <= p <= b)
    out: list[Shift] = []
    for start, end in zip(ordered, ordered[1:]):
        who = on_call(spec, start)
        if who.user is None:
            continue
        last = out[-1] if out else None
        if (last is not None and last.end == start and last.user == who.user and last.source == who.source
                and last.layer == who.layer and last.override == who.override):
            out[-1] = Shift(last.user, last.start, end, last.source, last.layer, last.override)
        else:
            out.append(Shift(who.user, start, end, who.source, who.layer, who.override))
    return out


def _layer_points(layer: LayerSpec, a: float, b: float) -> set[float]:
    points = {layer.start_epoch()}
    if layer.end is not None:
        points.add(layer.end)
    lo = max(a, layer.start_epoch())
    hi = b if layer.end is None else min(b, layer.end)
    if lo >= hi:
        return points
    k = layer.shift_index(lo)
    while True:
        h = layer.handoff(k)
        if h > hi:
            break
        points.add(h)
        k += 1
    if layer.restrictions:
        tz = layer.tz
        points.update(_transitions(tz, lo, hi))
        day = from_epoch(lo, tz).date() - _DAY
        last = from_epoch(hi, tz).date() + _DAY
        while day <= last:
            for r in layer.restrictions:
                if day.weekday() not in r.days:
                    continue
                begin = datetime.combine(day, r.start)
                if r.end is None:
                    finish = datetime.combine(day + _DAY, time(0))
                elif r.overnight():
                    finish = datetime.combine(day + _DAY, r.end)
                else:
                    finish = datetime.combine(day, r.end)
                for local in (begin, finish):
                    points.add(to_epoch(local, tz, 0))
                    points.add(to_epoch(local, tz, 1))
            day += _DAY
    return points


def _transitions(tz: ZoneInfo, a: float, b: float) -> list[float]:
    """The instants in ``[a, b]`` where ``tz``'s UTC offset changes (to the second), found by
    stepping six hours at a time and bisecting where the offset differs."""
    def offset(t: float):
        return datetime.fromtimestamp(t, _UTC).astimezone(tz).utcoffset()

    out = []
    step = 6 * 3600.0
    t = math.floor(a)
    prev = offset(t)
    while t < b:
        nxt = min(t + step, math.ceil(b))
        cur = offset(nxt)
        if cur != prev:
            lo, hi = t, nxt
            while hi - lo > 1:
                mid = (lo + hi) // 2
                if offset(mid) == prev:
                    lo = mid
                else:
                    hi = mid
            out.append(float(hi))
        prev, t = cur, nxt
    return out


def layer_from_dict(value: dict, index: int = 0) -> LayerSpec:
    """A ``LayerSpec`` from its stored form ``{"members", "rotation_unit", "rotation_count",
    "start", "time_zone", "restrictions", "end", "name"}`` (``oncall.models.Layer.as_spec_dict``).
    Raises ``SpecError``."""
    members = value.get("members") or []
    if not isinstance(members, list) or any(not isinstance(m, str) or not m for m in members):
        raise SpecError("members", "must be a list of user names")
    restrictions = value.get("restrictions") or []
    if not isinstance(restrictions, list):
        raise SpecError("restrictions", "must be a list")
    end = value.get("end")
    if end is not None and (not isinstance(end, (int, float)) or isinstance(end, bool) or not math.isfinite(end)
                            or not MIN_EPOCH <= end <= MAX_EPOCH):
        raise SpecError("end", "must be epoch seconds (1970..3000) or null")
    return LayerSpec(tuple(members), value.get("rotation_unit"), value.get("rotation_count"),
                     parse_local(value.get("start")), value.get("time_zone"),
                     tuple(Restriction.parse(r) for r in restrictions), None if end is None else float(end),
                     value.get("name") or f"layer {index + 1}")


def local_date(t: float, tz_name: str) -> date:
    """The wall-clock date at ``t`` in ``tz_name``."""
    return from_epoch(t, zone(tz_name)).date()
