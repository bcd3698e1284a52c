"""The iCalendar feed (``oncall.ical``) parses with ``icalendar`` and ``recurring-ical-events``
(libraries nobody on the project wrote) and lists exactly the shifts ``oncall.rotation.shifts``
gives, across a daylight-saving change; importing a feed gives back the same shifts, and a
recurring event in an imported file is expanded."""
from datetime import datetime, timezone

import icalendar
import pytest
import recurring_ical_events

from oncall import ical
from oncall.rotation import DAYS, HOURS, LayerSpec, OverrideSpec, Restriction, ScheduleSpec, shifts


def utc(*args) -> float:
    return datetime(*args, tzinfo=timezone.utc).timestamp()


SPEC = ScheduleSpec((
    LayerSpec(("ann", "bob", "cid"), DAYS, 1, datetime(2026, 3, 20, 9), "Europe/Berlin"),
    LayerSpec(("dan",), HOURS, 24, datetime(2026, 3, 20, 0), "Europe/Berlin",
              (Restriction.parse({"days": [5, 6], "start": "10:00", "end": "14:00"}),), name="weekend"),
), (OverrideSpec("eve", utc(2026, 3, 30, 12), utc(2026, 3, 31, 3), "o1"),))
A, B = utc(2026, 3, 22), utc(2026, 4, 5)  # across the Berlin spring change (29 March)


def test_the_feed_lists_the_same_shifts_as_the_function():
    expected = shifts(SPEC, A, B)
    assert len(expected) > 14 and {s.source for s in expected} == {"layer", "override"}
    body = ical.feed("db", expected, stamp=A)
    cal = icalendar.Calendar.from_ical(body)
    listed = sorted((str(e["summary"]), e["dtstart"].dt.timestamp(), e["dtend"].dt.timestamp())
                    for e in recurring_ical_events.of(cal).between(datetime.fromtimestamp(A, timezone.utc),
                                                                   datetime.fromtimestamp(B, timezone.utc)))
    assert listed == sorted((s.user, s.start, s.end) for s in expected)
    uids = [str(e["uid"]) for e in cal.walk("VEVENT")]
    assert len(set(uids)) == len(uids)
    assert ical.feed("db", expected, stamp=B).count(b"UID:") == len(uids)
    assert [str(e["uid"]) for e in icalendar.Calendar.from_ical(ical.feed("db", expected, stamp=B)).walk("VEVENT")] \
        == uids  # stable across fetches


def test_import_of_a_feed_gives_back_its_shifts():
    expected = shifts(SPEC, A, B)
    got = ical.parse_shifts(ical.feed("db", expected, stamp=A), A, B)
    assert [(u, s, e) for u, s, e, _uid in got] == [(s.user, s.start, s.end) for s in expected]


def test_import_expands_a_recurring_event_in_its_time_zone():
    text = ("BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//test//EN\r\nBEGIN:VEVENT\r\nUID:weekly\r\n"
            "DTSTAMP:20260301T000000Z\r\nDTSTART;TZID=America/New_York:20260302T090000\r\n"
            "DTEND;TZID=America/New_York:20260302T170000\r\nRRULE:FREQ=WEEKLY;COUNT=3\r\nSUMMARY:bob\r\n"
            "END:VEVENT\r\nEND:VCALENDAR\r\n")
    got = ical.parse_shifts(text, utc(2026, 3, 1), utc(2026, 4, 1))
    # 2 March is EST (-5), 9 and 16 March EDT (-4): 09:00 local each time
    assert [(u, s) for u, s, _e, _uid in got] == [
        ("bob", utc(2026, 3, 2, 14)), ("bob", utc(2026, 3, 9, 13)), ("bob", utc(2026, 3, 16, 13))]


def test_a_file_that_is_not_icalendar_is_refused():
    with pytest.raises(ical.IcalError):
        ical.parse_shifts("BEGIN:NOTHING", 0, 1)
