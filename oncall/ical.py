"""A schedule's shifts as an iCalendar feed (RFC 5545), and shifts read from one.

``feed(name, shifts_)`` renders ``rotation.shifts`` as a VCALENDAR (one VEVENT per shift, UTC
times, a stable UID per shift, SUMMARY the person's user name) that a calendar app subscribes to
(``GET /api/v1/oncall/schedules/{name}/feed.ics?token=...``). ``parse_shifts(text, a, b)`` reads
an iCalendar file's events between ``a`` and ``b`` (epoch seconds), recurring ones expanded by
``recurring-ical-events``, each as ``(user name, start, end, uid)``: the SUMMARY is the user name,
as in UNS's own feed and Grafana OnCall's (an import of UNS's feed into another schedule gives
the same shifts). ``icalendar`` builds and parses the text; neither module is UNS's own.
"""
from __future__ import annotations

import hashlib
from datetime import date, datetime, timezone

import icalendar
import recurring_ical_events

from .rotation import Shift

PRODID = "-//UNS//on-call schedule//EN"
MAX_IMPORT_EVENTS = 5000


class IcalError(ValueError):
    """The text is not an iCalendar file UNS can read (the message says why)."""


def _utc(t: float) -> datetime:
    return datetime.fromtimestamp(t, timezone.utc)


def shift_uid(schedule: str, s: Shift) -> str:
    """A stable UID for a shift: the same shift keeps its UID across fetches of the feed."""
    digest = hashlib.sha256(f"{schedule}|{s.user}|{s.start}|{s.end}".encode()).hexdigest()[:32]
    return f"{digest}@uns-oncall"


def feed(schedule: str, shifts_: list[Shift], *, stamp: float) -> bytes:
    """The VCALENDAR of ``shifts_`` of schedule ``schedule`` (``stamp``: DTSTAMP, epoch seconds)."""
    cal = icalendar.Calendar()
    cal.add("prodid", PRODID)
    cal.add("version", "2.0")
    cal.add("x-wr-calname", f"On call: {schedule}")
    for s in shifts_:
        ev = icalendar.Event()
        ev.add("uid", shift_uid(schedule, s))
        ev.add("dtstamp", _utc(stamp))
        ev.add("dtstart", _utc(s.start))
        ev.add("dtend", _utc(s.end))
        ev.add("summary", s.user)
        ev.add("description", f"{s.user} is on call in schedule {schedule} ({s.source})")
        cal.add_component(ev)
    return cal.to_ical()


def _epoch(value) -> float:
    if isinstance(value, datetime):
        if value.tzinfo is None:  # a floating time: read as UTC (RFC 5545 leaves it to the reader)
            value = value.replace(tzinfo=timezone.utc)
        return value.timestamp()
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day, tzinfo=timezone.utc).timestamp()
    raise IcalError(f"not a date or date-time: {value!r}")


def parse_shifts(text: str | bytes, a: float, b: float) -> list[tuple[str, float, float, str]]:
    """The events of ``text`` overlapping ``[a, b)`` (epoch seconds) as ``(user name, start,
    end, uid)``, sorted by start; recurring events expanded. Raises ``IcalError``."""
    try:
        cal = icalendar.Calendar.from_ical(text)
    except (ValueError, IndexError, KeyError) as exc:
        raise IcalError(f"not an iCalendar file: {exc}") from None
    try:
        events = recurring_ical_events.of(cal).between(_utc(a), _utc(b))
    except Exception as exc:  # the library raises several types for a bad RRULE or time
        raise IcalError(f"the events cannot be expanded: {type(exc).__name__}: {exc}") from None
    out = []
    for ev in events:
        if len(out) >= MAX_IMPORT_EVENTS:
            raise IcalError(f"more than {MAX_IMPORT_EVENTS} events in the window")
        summary = str(ev.get("summary") or "").strip()
        start = ev.get("dtstart")
        end = ev.get("dtend")
        if not summary or start is None or end is None:
            continue
        out.append((summary, _epoch(start.dt), _epoch(end.dt), str(ev.get("uid") or "")))
    return sorted(out, key=lambda r: (r[1], r[0]))
