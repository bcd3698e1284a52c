"""The console's on-call read models (issue 22): /ui/oncall (each schedule's on call now and next,
the teams), /ui/oncall/schedules/{name}/calendar (each layer alone, the final shifts with the
overrides, the overrides in the window) and /ui/oncall/me (my contact methods and my pages, from
the timeline's ONCALL_RESOLVED events). Both databases."""
from datetime import datetime, timezone

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from knox.models import AuthToken
from rest_framework.test import APIClient

from notifications.runtime import oncall
from oncall.models import ContactMethod

pytestmark = pytest.mark.django_db

DAY = 86400.0
OP = "olga"


def person(name, verified=True):
    user = get_user_model().objects.create_user(name)
    ContactMethod.objects.create(id=f"{name}-0", user=user, position=0, kind="webhook",
                                 config={"url": f"https://user:pw-{name}@hooks.example/{name}"}, secret=f"whsec_{name}",
                                 created_at=0.0,
                                 verification=ContactMethod.VERIFIED if verified else ContactMethod.UNVERIFIED)
    return user


def as_user(name):
    """An APIClient with a Bearer token of the existing user ``name``, in the console group."""
    user = get_user_model().objects.get(username=name)
    user.groups.add(*Group.objects.filter(name="console"))
    _, token = AuthToken.objects.create(user=user, expiry=None)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    return client


@pytest.fixture
def crew(db, clock):
    for name in ("ann", "bob", "cid"):
        person(name)
    # A daily rotation, ann first, handing off at clock.now's wall clock (UTC) from yesterday.
    start = datetime.fromtimestamp(clock.now - DAY, timezone.utc).strftime("%Y-%m-%dT%H:%M")
    oncall.create_team("dba", members=["ann", "bob"], actor=OP, clock=clock)
    oncall.create_schedule("db", time_zone="UTC", team="dba", actor=OP, clock=clock)
    oncall.add_layer("db", {"name": "primary", "members": ["ann", "bob"], "rotation_unit": "days",
                            "rotation_count": 1, "start": start, "time_zone": "UTC"}, actor=OP, clock=clock)
    return datetime.strptime(start, "%Y-%m-%dT%H:%M").replace(tzinfo=timezone.utc).timestamp()


def test_the_board_shows_who_is_on_call_now_and_next_and_the_teams(ui, clock, crew):
    client = ui()
    body = client.get("/ui/oncall").json()
    [s] = body["schedules"]
    assert body["now"] == clock.now
    # yesterday's hand-off made ann on call, today's (at or just before now) bob
    on_call = s["on_call"]["user"]
    assert on_call in ("ann", "bob") and s["on_call"]["source"] == "layer" and s["on_call"]["layer"] == "primary"
    assert s["next_shift"]["user"] != on_call and s["next_shift"]["start"] > clock.now
    assert s["team"] == "dba" and s["time_zone"] == "UTC"
    assert body["teams"] == [{"name": "dba", "description": "", "members": ["ann", "bob"], "schedules": ["db"]}]
    oncall.add_override("db", "cid", clock.now - 60, clock.now + 3600, actor=OP, clock=clock)
    [s] = client.get("/ui/oncall").json()["schedules"]
    assert (s["on_call"]["user"], s["on_call"]["source"]) == ("cid", "override")


def test_the_calendar_gives_each_layer_alone_and_the_final_shifts_with_overrides(ui, clock, crew):
    first = crew + DAY  # the hand-off at or before now
    o = oncall.add_override("db", "cid", first + 3600, first + 3 * 3600, actor=OP, clock=clock)
    oncall.add_override("db", "ann", first + 30 * DAY, first + 31 * DAY, actor=OP, clock=clock)  # outside the window
    client = ui()
    body = client.get(f"/ui/oncall/schedules/db/calendar?start={first}&end={first + 2 * DAY}").json()
    assert (body["schedule"], body["time_zone"], body["team"], body["start"], body["end"]) == (
        "db", "UTC", "dba", first, first + 2 * DAY)
    [layer] = body["layers"]
    assert layer["name"] == "primary" and layer["members"] == ["ann", "bob"]
    assert [(s["user"], s["start"], s["end"], s["source"]) for s in layer["shifts"]] == [
        ("bob", first, first + DAY, "layer"), ("ann", first + DAY, first + 2 * DAY, "layer")]  # no override in it
    assert [(s["user"], s["start"], s["end"], s["source"], s["override"]) for s in body["shifts"]] == [
        ("bob", first, first + 3600, "layer", None),
        ("cid", first + 3600, first + 3 * 3600, "override", o.id),
        ("bob", first + 3 * 3600, first + DAY, "layer", None),
        ("ann", first + DAY, first + 2 * DAY, "layer", None)]
    assert [x["id"] for x in body["overrides"]] == [o.id]  # only those overlapping the window
    # the default window: now and 14 days later
    body = client.get("/ui/oncall/schedules/db/calendar").json()
    assert (body["start"], body["end"]) == (clock.now, clock.now + 14 * DAY)
    assert len(body["shifts"]) == 16  # a shift a day, the first cut in two by the override
    assert sum(s["source"] == "override" for s in body["shifts"]) == 1


@pytest.mark.parametrize("query,field", [
    ("?start=10&end=5", "end"), ("?start=0&end=2764801", "end"), ("?start=abc", "start"), ("?start=-1", "start"),
    ("?start=nan", "start"), ("?start=inf", "start"),
])
def test_a_bad_calendar_window_is_a_problem(ui, crew, query, field):
    response = ui().get(f"/ui/oncall/schedules/db/calendar{query}")
    assert response.status_code == 400, response.content
    assert response["Content-Type"].startswith("application/problem+json")
    assert response.json()["code"] == "invalid_request"
    assert response.json()["errors"][0]["field"] == field


def test_an_unknown_schedule_is_404(ui, crew):
    response = ui().get("/ui/oncall/schedules/nope/calendar")
    assert response.status_code == 404 and response.json()["code"] == "schedule_not_found"


def test_my_pages_and_contact_methods_without_secrets(ui, rt, clock, webhook, crew):
    nid = rt.accept("svc", {"source": "db", "title": "replica lag", "channels": ["user:ann"]}).notification.id
    clock.advance(1)
    rt.dispatch()
    other = rt.accept("svc", {"source": "db", "title": "for bob", "channels": ["user:bob"]}).notification.id
    clock.advance(1)
    rt.dispatch()
    body = as_user("ann").get("/ui/oncall/me").json()
    assert body["user"] == "ann"
    assert [(p["notification_id"], p["target"], p["title"], p["status"]) for p in body["pages"]] == [
        (nid, "user:ann", "replica lag", "DELIVERED")]
    assert other not in str(body)
    [m] = body["contact_methods"]
    assert (m["id"], m["verification"], m["has_secret"]) == ("ann-0", "VERIFIED", True)
    assert "whsec_ann" not in str(body) and "pw-ann" not in str(body)
