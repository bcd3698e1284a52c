"""``oncall.rotation``: who is on call at T, one pure function (no database), across
daylight-saving changes (Europe/Berlin, America/New_York, Australia/Lord_Howe's 30-minute
change), leap days, restrictions, overrides, layer precedence and gaps; ``shifts`` agrees with it
everywhere (hypothesis)."""
from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oncall.rotation import (
    DAYS, HOURS, LAYER, OVERRIDE, WEEKS, LayerSpec, OverrideSpec, Restriction, ScheduleSpec, SpecError, layer_from_dict,
    next_change, on_call, shifts)

H = 3600.0
DAY = 86400.0


def at(tz: str, *args, fold=0) -> float:
    return datetime(*args, tzinfo=ZoneInfo(tz), fold=fold).timestamp()


def utc(*args) -> float:
    return datetime(*args, tzinfo=timezone.utc).timestamp()


def layer(members=("ann", "bob"), unit=DAYS, count=1, start="2026-03-01T09:00", tz="UTC", restrictions=(), end=None,
          name="l"):
    return LayerSpec(tuple(members), unit, count, datetime.fromisoformat(start), tz,
                     tuple(Restriction.parse(r) for r in restrictions), end, name)


def who(spec, t):
    return on_call(spec, t).user


# --- rotations -------------------------------------------------------------------------------

def test_daily_rotation_hands_off_at_the_handoff_time():
    spec = ScheduleSpec((layer(),))
    assert who(spec, utc(2026, 3, 1, 9, 0)) == "ann"
    assert who(spec, utc(2026, 3, 2, 8, 59, 59)) == "ann"
    assert who(spec, utc(2026, 3, 2, 9, 0)) == "bob"
    assert who(spec, utc(2026, 3, 3, 9, 0)) == "ann"
    assert who(spec, utc(2026, 3, 1, 8, 59)) is None  # before the layer starts: a gap


def test_weekly_and_hourly_rotations():
    weekly = ScheduleSpec((layer(("a", "b", "c"), WEEKS, 1, "2026-01-05T10:00"),))
    assert [who(weekly, utc(2026, 1, 5, 10) + k * 7 * DAY) for k in range(4)] == ["a", "b", "c", "a"]
    assert who(weekly, utc(2026, 1, 12, 9, 59)) == "a"
    hourly = ScheduleSpec((layer(("a", "b"), HOURS, 12, "2026-01-05T00:00"),))
    assert [who(hourly, utc(2026, 1, 5) + k * 12 * H) for k in range(3)] == ["a", "b", "a"]


@pytest.mark.parametrize("tz,spring,autumn,short,long", [
    # (zone, spring change day, autumn change day, spring shift length, autumn shift length)
    ("Europe/Berlin", (2026, 3, 29), (2026, 10, 25), 23 * H, 25 * H),
    ("America/New_York", (2026, 3, 8), (2026, 11, 1), 23 * H, 25 * H),
    # Lord Howe: +10:30 standard, +11 summer (a 30-minute change); spring in October, autumn in April
    ("Australia/Lord_Howe", (2026, 10, 4), (2026, 4, 5), 23.5 * H, 24.5 * H),
])
def test_daily_handoff_keeps_the_wall_clock_across_dst(tz, spring, autumn, short, long):
    spec = ScheduleSpec((layer(("a", "b"), DAYS, 1, "2026-01-01T09:00", tz),))
    for day, length in ((spring, short), (autumn, long)):
        before = datetime(*day) - timedelta(days=1)
        start = at(tz, before.year, before.month, before.day, 9)
        end = at(tz, *day, 9)
        assert end - start == length
        ss = shifts(spec, start - H, end + H)
        inner = [s for s in ss if s.start == start]
        assert inner and inner[0].end == end, ss
        assert who(spec, end - 1) != who(spec, end)


def test_handoff_inside_the_spring_gap_and_the_autumn_repeat():
    # Berlin 2026-03-29: 02:00 CET -> 03:00 CEST; 02:30 does not exist: the offset before the gap
    # gives it (01:30 UTC = 03:30 CEST). 2026-10-25: 02:30 happens twice: the first (00:30 UTC).
    spec = ScheduleSpec((layer(("a", "b"), DAYS, 1, "2026-03-27T02:30", "Europe/Berlin"),))
    assert who(spec, utc(2026, 3, 29, 1, 29, 59)) == "b"  # 2026-03-28 02:30 started b
    assert who(spec, utc(2026, 3, 29, 1, 30)) == "a"
    autumn = ScheduleSpec((layer(("a", "b"), DAYS, 1, "2026-10-23T02:30", "Europe/Berlin"),))
    assert who(autumn, utc(2026, 10, 25, 0, 29, 59)) == "b"
    assert who(autumn, utc(2026, 10, 25, 0, 30)) == "a"  # the first 02:30 (CEST)
    assert who(autumn, utc(2026, 10, 25, 1, 30)) == "a"  # the second 02:30 is no hand-off


def test_hourly_rotation_counts_elapsed_hours_across_dst():
    spec = ScheduleSpec((layer(("a", "b"), HOURS, 12, "2026-03-28T21:00", "Europe/Berlin"),))
    start = at("Europe/Berlin", 2026, 3, 28, 21)
    ss = shifts(spec, start, start + 48 * H)
    assert [s.end - s.start for s in ss] == [12 * H] * 4


def test_leap_days():
    # a daily rotation over 29 February counts it as a day; a weekly one is still 7 days
    spec = ScheduleSpec((layer(("a", "b"), DAYS, 1, "2028-02-27T00:00"),))
    assert [who(spec, utc(2028, 2, 27) + k * DAY) for k in range(4)] == ["a", "b", "a", "b"]  # 27, 28, 29, 1 March
    assert who(spec, utc(2028, 2, 29, 12)) == "a"
    weekly = ScheduleSpec((layer(("a", "b"), WEEKS, 1, "2028-02-26T09:00", "America/New_York"),))
    assert who(weekly, at("America/New_York", 2028, 3, 4, 8, 59)) == "a"
    assert who(weekly, at("America/New_York", 2028, 3, 4, 9)) == "b"
    # a layer starting on a leap day rotates every 2 days onwards
    leap = ScheduleSpec((layer(("a", "b"), DAYS, 2, "2028-02-29T12:00"),))
    assert who(leap, utc(2028, 3, 2, 11, 59)) == "a" and who(leap, utc(2028, 3, 2, 12)) == "b"
    assert who(leap, utc(2029, 3, 1, 12)) == "b"  # 366 days on: shift 183, odd


# --- restrictions ----------------------------------------------------------------------------

BUSINESS = [{"days": [0, 1, 2, 3, 4], "start": "09:00", "end": "17:00"}]


def test_weekday_business_hours_restriction_in_local_time():
    spec = ScheduleSpec((layer(("a",), WEEKS, 1, "2026-03-02T00:00", "Europe/Berlin", BUSINESS),))
    assert who(spec, at("Europe/Berlin", 2026, 3, 2, 9)) == "a"  # Monday 09:00
    assert who(spec, at("Europe/Berlin", 2026, 3, 2, 8, 59)) is None
    assert who(spec, at("Europe/Berlin", 2026, 3, 2, 17)) is None
    assert who(spec, at("Europe/Berlin", 2026, 3, 7, 12)) is None  # Saturday
    # the Monday after the spring change: still 09:00-17:00 on the wall clock
    assert who(spec, at("Europe/Berlin", 2026, 3, 30, 9)) == "a"
    assert who(spec, utc(2026, 3, 30, 7, 30)) == "a" and who(spec, utc(2026, 3, 30, 6, 59)) is None
    ss = shifts(spec, at("Europe/Berlin", 2026, 3, 30), at("Europe/Berlin", 2026, 4, 4))
    assert [(s.start, s.end - s.start) for s in ss] == [
        (at("Europe/Berlin", 2026, 3, 30, 9) + d * DAY, 8 * H) for d in range(5)]


def test_overnight_restriction_and_24_00():
    night = ScheduleSpec((layer(("n",), WEEKS, 1, "2026-03-01T00:00", "UTC",
                                [{"days": [4], "start": "22:00", "end": "06:00"}]),))  # Friday night
    assert who(night, utc(2026, 3, 6, 22)) == "n"  # Friday 22:00
    assert who(night, utc(2026, 3, 7, 5, 59)) == "n"  # Saturday 05:59
    assert who(night, utc(2026, 3, 7, 6)) is None
    assert who(night, utc(2026, 3, 7, 23)) is None  # Saturday night is not named
    allday = ScheduleSpec((layer(("d",), WEEKS, 1, "2026-03-01T00:00", "UTC",
                                 [{"days": [6], "start": "00:00", "end": "24:00"}]),))
    assert who(allday, utc(2026, 3, 8, 23, 59)) == "d" and who(allday, utc(2026, 3, 9)) is None


def test_restriction_edge_inside_a_dst_gap_agrees_with_shifts():
    # a restriction starting at 02:30 on the Berlin spring change: the wall clock jumps from 02:00
    # to 03:00, so it is inside the window from the jump on (01:00 UTC).
    spec = ScheduleSpec((layer(("a",), DAYS, 1, "2026-03-01T00:00", "Europe/Berlin",
                               [{"days": [6], "start": "02:30", "end": "04:00"}]),))
    assert who(spec, utc(2026, 3, 29, 0, 59, 59)) is None
    assert who(spec, utc(2026, 3, 29, 1, 0)) == "a"
    ss = shifts(spec, utc(2026, 3, 28), utc(2026, 3, 30))
    assert [(s.start, s.end) for s in ss] == [(utc(2026, 3, 29, 1), utc(2026, 3, 29, 2))]


# --- overrides, precedence, gaps -------------------------------------------------------------

def test_override_wins_then_later_override_wins():
    base = layer(("a", "b"), DAYS, 1, "2026-03-01T00:00")
    spec = ScheduleSpec((base,), (OverrideSpec("x", utc(2026, 3, 1, 10), utc(2026, 3, 1, 12), "o1"),
                                  OverrideSpec("y", utc(2026, 3, 1, 11), utc(2026, 3, 1, 13), "o2")))
    assert on_call(spec, utc(2026, 3, 1, 9)).user == "a"
    assert on_call(spec, utc(2026, 3, 1, 10)) .user == "x"
    got = on_call(spec, utc(2026, 3, 1, 11, 30))
    assert (got.user, got.source, got.override) == ("y", OVERRIDE, "o2")
    assert on_call(spec, utc(2026, 3, 1, 13)).user == "a"
    ss = shifts(spec, utc(2026, 3, 1, 9), utc(2026, 3, 1, 14))
    assert [(s.user, s.start, s.end) for s in ss] == [
        ("a", utc(2026, 3, 1, 9), utc(2026, 3, 1, 10)), ("x", utc(2026, 3, 1, 10), utc(2026, 3, 1, 11)),
        ("y", utc(2026, 3, 1, 11), utc(2026, 3, 1, 13)), ("a", utc(2026, 3, 1, 13), utc(2026, 3, 1, 14))]


def test_higher_layer_wins_where_it_has_someone_and_gaps_are_empty():
    base = layer(("a",), WEEKS, 1, "2026-03-02T00:00", "UTC", name="base",
                 restrictions=[{"days": [0, 1, 2, 3, 4], "start": "00:00", "end": "24:00"}])
    top = layer(("t",), WEEKS, 1, "2026-03-02T00:00", "UTC", BUSINESS, name="day")
    spec = ScheduleSpec((base, top))
    got = on_call(spec, utc(2026, 3, 2, 10))
    assert (got.user, got.source, got.layer) == ("t", LAYER, 1)
    assert on_call(spec, utc(2026, 3, 2, 18)).layer == 0
    assert who(spec, utc(2026, 3, 7, 12)) is None  # the weekend: nobody (a gap)
    ss = shifts(spec, utc(2026, 3, 6), utc(2026, 3, 9))
    assert ss[-1].end == utc(2026, 3, 7)  # nothing on the weekend
    assert on_call(ScheduleSpec(), utc(2026, 1, 1)).user is None


def test_layer_end_and_next_change():
    spec = ScheduleSpec((layer(("a", "b"), DAYS, 1, "2026-03-01T09:00", end=utc(2026, 3, 3, 9)),))
    assert who(spec, utc(2026, 3, 3, 8)) == "b" and who(spec, utc(2026, 3, 3, 9)) is None
    nxt = next_change(spec, utc(2026, 3, 1, 10))
    assert (nxt.user, nxt.start) == ("b", utc(2026, 3, 2, 9))
    assert next_change(spec, utc(2026, 3, 2, 10)) is None  # nobody after b


def test_bad_specs_are_refused():
    with pytest.raises(SpecError):
        layer(tz="Mars/Olympus")
    with pytest.raises(SpecError):
        layer(unit="months")
    with pytest.raises(SpecError):
        Restriction.parse({"days": [0], "start": "09:00", "end": "09:00"})
    with pytest.raises(SpecError):
        layer_from_dict({"members": ["a"], "rotation_unit": "days", "rotation_count": 1, "start": "2026-03-01T09:00Z",
                         "time_zone": "UTC"})


# --- properties: shifts and on_call agree everywhere -------------------------------------------

ZONES = ["Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "UTC", "Asia/Kolkata"]
restriction = st.fixed_dictionaries({
    "days": st.lists(st.integers(0, 6), min_size=1, max_size=7, unique=True),
    "start": st.sampled_from(["00:00", "02:30", "09:00", "22:00"]),
    "end": st.sampled_from(["01:45", "03:00", "17:00", "24:00", "06:00"]),
}).filter(lambda r: r["start"] != r["end"])
layers = st.builds(
    lambda members, unit, count, day, hhmm, tz, rs: layer(members, unit, count, f"2026-{day}T{hhmm}", tz, rs),
    st.lists(st.sampled_from(["a", "b", "c", "d"]), min_size=1, max_size=3),
    st.sampled_from([HOURS, DAYS, WEEKS]), st.integers(1, 3),
    st.sampled_from(["01-15", "03-07", "03-28", "10-03", "10-24", "11-01"]),
    st.sampled_from(["00:00", "02:30", "09:00"]), st.sampled_from(ZONES), st.lists(restriction, max_size=2))
T_LO, T_HI = utc(2026, 1, 1), utc(2027, 1, 1)
overrides = st.builds(lambda u, s, d, i: OverrideSpec(u, s, s + d, f"o{i}"), st.sampled_from(["x", "y"]),
                      st.floats(T_LO, T_HI), st.floats(60, 3 * DAY), st.integers(0, 9))
specs = st.builds(lambda ls, os: ScheduleSpec(tuple(ls), tuple(os)), st.lists(layers, min_size=0, max_size=3),
                  st.lists(overrides, max_size=3))


@settings(max_examples=150, deadline=None)
@given(specs, st.floats(T_LO, T_HI - 10 * DAY), st.floats(H, 10 * DAY), st.lists(st.floats(0, 1), max_size=8))
def test_shifts_agree_with_on_call(spec, a, span, probes):
    b = a + span
    ss = shifts(spec, a, b)
    for s, nxt in zip(ss, ss[1:]):
        assert s.start < s.end <= nxt.start  # ordered, no overlap
    for p in probes:
        t = a + p * span
        if t >= b:
            continue
        who_at = on_call(spec, t)
        inside = [s for s in ss if s.start <= t < s.end]
        if who_at.user is None:
            assert not inside
        else:
            assert len(inside) == 1 and inside[0].user == who_at.user and inside[0].source == who_at.source


@settings(max_examples=100, deadline=None)
@given(layers, st.floats(T_LO, T_HI))
def test_shift_edges_are_where_on_call_changes(lay, t):
    spec = ScheduleSpec((lay,))
    for s in shifts(spec, t, t + 3 * DAY):
        assert on_call(spec, s.start).user == s.user
        assert on_call(spec, s.end - 0.001).user == s.user
