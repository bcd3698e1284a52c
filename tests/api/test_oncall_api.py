"""``/api/v1/oncall``: teams, schedules (layers, overrides, shifts, who is on call), contact
methods (verify through the real adapter path), the iCalendar feed and import; capability
gating; bad input is problem details and changes nothing; secrets stay write-only."""
import logging
from datetime import datetime, timezone

import icalendar
import pytest
from django.contrib.auth import get_user_model

from notifications.adapters.base import DeliveryResult
from notifications.redaction import mask_string
from oncall.models import AuditRecord, ContactMethod, Override, Schedule, Team

from .helpers import assert_problem

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=timezone.utc).timestamp()  # a Monday, 09:00 UTC
DAY = 86400.0
CRED_URL = "https://bot:pa55w0rd-X@hooks.example/in?token=t0ken-Y&x=1"


@pytest.fixture
def people():
    User = get_user_model()
    for n in ("ann", "bob", "cid"):
        User.objects.create_user(n, email=f"{n}@example.org")


@pytest.fixture
def operator(api, api_rt, people):
    return api(groups=("operator",), name="olga")


@pytest.fixture
def viewer(api, api_rt, people):
    return api(groups=("console",), name="vic")


LAYER = {"name": "primary", "members": ["ann", "bob"], "rotation_unit": "days", "rotation_count": 1,
         "start": "2026-03-02T09:00", "time_zone": "UTC"}


def make_schedule(client, name="db", **extra):
    r = client.post("/api/v1/oncall/schedules", {"name": name, "time_zone": "Europe/Berlin",
                                                  "layers": [LAYER], **extra}, format="json")
    assert r.status_code == 201, r.content
    return r.json()


def test_schedule_crud_who_is_on_call_shifts_and_overrides(operator, viewer):
    body = make_schedule(operator)
    assert body["layers"][0]["members"] == ["ann", "bob"] and body["feed_url"].startswith(
        "/api/v1/oncall/schedules/db/feed.ics?token=")
    r = viewer.get("/api/v1/oncall/schedules/db/on-call", {"at": T0 + 3600})
    assert r.status_code == 200, r.content
    assert r.json()["on_call"]["user"] == "ann" and r.json()["next_shift"]["user"] == "bob"
    assert r.json()["current_shift"]["start"] == T0 and r.json()["next_shift"]["start"] == T0 + DAY
    assert viewer.get("/api/v1/oncall/schedules/db", {"at": T0}).json()["feed_url"] is None  # operators only
    r = viewer.get("/api/v1/oncall/schedules/db/shifts", {"start": T0, "end": T0 + 3 * DAY})
    assert [(s["user"], s["start"], s["end"]) for s in r.json()["items"]] == [
        ("ann", T0, T0 + DAY), ("bob", T0 + DAY, T0 + 2 * DAY), ("ann", T0 + 2 * DAY, T0 + 3 * DAY)]
    r = operator.post("/api/v1/oncall/schedules/db/overrides",
                      {"user": "cid", "start": T0 + 3600, "end": T0 + 7200}, format="json")
    assert r.status_code == 201, r.content
    override_id = r.json()["id"]
    listed = viewer.get("/api/v1/oncall/schedules", {"at": T0 + 3700}).json()["items"]
    assert listed[0]["name"] == "db" and listed[0]["on_call"] == {
        "user": "cid", "source": "override", "layer": None, "override": override_id}
    assert listed[0]["next_shift"]["user"] == "ann" and listed[0]["next_shift"]["start"] == T0 + 7200
    # viewers read, never write
    assert_problem(viewer.post("/api/v1/oncall/schedules/db/overrides",
                               {"user": "cid", "start": T0, "end": T0 + 1}, format="json"), 403, "permission_denied")
    assert operator.delete(f"/api/v1/oncall/schedules/db/overrides/{override_id}").status_code == 204
    assert not Override.objects.exists()
    actions = list(AuditRecord.objects.filter(entity="schedule", name="db").order_by("at", "id")
                   .values_list("action", "actor"))
    assert [a for a, _ in actions] == ["CREATE", "ADD_LAYER", "ADD_OVERRIDE", "DELETE_OVERRIDE"]
    assert {who for _, who in actions} == {"olga"}


@pytest.mark.parametrize("body,field", [
    ({"name": "bad name"}, "name"),
    ({"name": "x", "time_zone": "Mars/Olympus"}, "time_zone"),
    ({"name": "x", "layers": [{**LAYER, "members": ["nobody"]}]}, "members"),
    ({"name": "x", "layers": [{**LAYER, "start": "tomorrow"}]}, "start"),
    ({"name": "x", "layers": [{**LAYER, "time_zone": "Nowhere"}]}, "time_zone"),
    ({"name": "x", "layers": [{**LAYER, "restrictions": [{"days": [7], "start": "09:00", "end": "17:00"}]}]},
     "restrictions"),
    ({"name": "x", "layers": [{**LAYER, "restrictions": [{"days": [0], "start": "25:00", "end": "17:00"}]}]},
     "restrictions"),
])
def test_bad_schedule_is_a_problem_and_writes_nothing(operator, body, field):
    problem = assert_problem(operator.post("/api/v1/oncall/schedules", body, format="json"), 400, "invalid_oncall")
    assert problem["errors"][0]["field"] == (f"layers[0].{field}" if "layers" in body else field)
    assert not Schedule.objects.exists() and not AuditRecord.objects.exists()


def test_bad_queries_and_missing_things(operator, viewer):
    make_schedule(operator)
    assert_problem(viewer.get("/api/v1/oncall/schedules/db/shifts", {"start": "x", "end": 1}), 400, "invalid_request")
    assert_problem(viewer.get("/api/v1/oncall/schedules/db/shifts", {"start": T0, "end": T0 + 100 * DAY}), 400,
                   "invalid_request")
    assert_problem(viewer.get("/api/v1/oncall/schedules/nope/on-call"), 404, "schedule_not_found")
    for huge in ("1e300", "-1", "nan", "inf"):  # a year datetime cannot hold is a bad query, never a 500
        assert_problem(viewer.get("/api/v1/oncall/who", {"target": "db", "at": huge}), 400, "invalid_request")
        assert_problem(viewer.get("/api/v1/oncall/schedules", {"at": huge}), 400, "invalid_request")
    assert_problem(operator.post("/api/v1/oncall/schedules/db/layers", {**LAYER, "start": "9999-12-31T23:00"},
                                 format="json"), 400, "invalid_oncall")
    assert_problem(operator.post("/api/v1/oncall/schedules/db/overrides", {"user": "ann", "start": T0, "end": T0},
                                 format="json"), 400, "invalid_oncall")
    assert_problem(operator.post("/api/v1/oncall/schedules/db/overrides", {"user": "zed", "start": T0, "end": T0 + 1},
                                 format="json"), 400, "invalid_oncall")
    assert_problem(operator.delete("/api/v1/oncall/schedules/db/overrides/nope"), 404, "override_not_found")
    assert_problem(operator.post("/api/v1/oncall/schedules", {"name": "db"}, format="json"), 409, "schedule_exists")
    assert_problem(viewer.get("/api/v1/oncall/who", {"target": "ops-hook:x"}), 400, "invalid_request")
    assert viewer.get("/api/v1/oncall/who", {"target": "db", "at": T0}).json()["people"][0]["user"] == "ann"
    assert Override.objects.count() == 0


def test_teams(operator, viewer):
    r = operator.post("/api/v1/oncall/teams", {"name": "dba", "members": ["bob", "ann"]}, format="json")
    assert r.status_code == 201 and r.json()["members"] == ["bob", "ann"]
    assert viewer.get("/api/v1/oncall/teams").json()["items"][0]["name"] == "dba"
    r = operator.patch("/api/v1/oncall/teams/dba", {"members": ["cid"]}, format="json")
    assert r.json()["members"] == ["cid"]
    assert_problem(operator.post("/api/v1/oncall/teams", {"name": "dba"}, format="json"), 409, "team_exists")
    assert_problem(operator.post("/api/v1/oncall/teams", {"name": "x", "members": ["ann", "ann"]}, format="json"),
                   400, "invalid_oncall")
    r = viewer.get("/api/v1/oncall/who", {"target": "team:dba"})
    assert r.status_code == 200 and [p["user"] for p in r.json()["people"]] == ["cid"]
    assert "verified contact method" in r.json()["reason"]
    assert operator.delete("/api/v1/oncall/teams/dba").status_code == 204 and not Team.objects.exists()


def test_my_contact_methods_verify_and_secrets(api, api_rt, people, caplog):
    caplog.set_level(logging.DEBUG)
    ann = api(groups=("console",), name="dee")
    r = ann.post("/api/v1/oncall/me/contact-methods", {"kind": "webhook", "config": {"url": CRED_URL},
                                                        "secret": "whsec_aHR0cC10ZXN0LWtleS0x", "label": "pager"},
                 format="json")
    assert r.status_code == 201, r.content
    method = r.json()
    assert method["verification"] == "UNVERIFIED" and method["has_secret"] and "secret" not in method
    assert method["config"]["url"] == "https://***@hooks.example/in?token=***&x=1"
    r = ann.post(f"/api/v1/oncall/me/contact-methods/{method['id']}/verify")
    assert r.status_code == 200, r.content
    assert r.json()["success"] is True and r.json()["contact_method"]["verification"] == "VERIFIED"
    # a new address is a new verification
    r = ann.patch(f"/api/v1/oncall/me/contact-methods/{method['id']}", {"config": {"url": "http://127.0.0.1:9/h"}},
                  format="json")
    assert r.json()["verification"] == "UNVERIFIED"
    api_rt.adapters["webhook"].script.append(DeliveryResult(False, error="HTTP 500"))
    r = ann.post(f"/api/v1/oncall/me/contact-methods/{method['id']}/verify")
    assert r.json()["success"] is False and r.json()["contact_method"]["verification"] == "FAILED"
    assert_problem(ann.get("/api/v1/oncall/users/bob/contact-methods"), 403, "permission_denied")
    assert_problem(ann.post("/api/v1/oncall/me/contact-methods", {"kind": "webhook", "config": {"url": "ftp://x"}},
                            format="json"), 400, "invalid_oncall")
    assert ContactMethod.objects.count() == 1
    everything = str(list(AuditRecord.objects.values())) + str(ann.get("/api/v1/oncall/me/contact-methods").json())
    for secret in ("whsec_aHR0cC10ZXN0LWtleS0x", "pa55w0rd-X", "t0ken-Y"):
        assert secret not in everything and secret not in caplog.text


def test_feed_by_token_and_import(operator, client):
    body = make_schedule(operator)
    token = body["feed_url"].split("token=", 1)[1]
    assert token not in mask_string(f"GET {body['feed_url']} 200")  # as a log line is redacted
    anonymous = client.get(body["feed_url"])
    assert anonymous.status_code == 200 and anonymous["Content-Type"].startswith("text/calendar")
    cal = icalendar.Calendar.from_ical(anonymous.content)
    assert {str(e["summary"]) for e in cal.walk("VEVENT")} == {"ann", "bob"}
    wrong = client.get("/api/v1/oncall/schedules/db/feed.ics?token=nope")
    assert wrong.status_code in (401, 403, 404)
    assert client.get("/api/v1/oncall/schedules/db/feed.ics").status_code in (401, 403)
    ics = ("BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//test//EN\r\nBEGIN:VEVENT\r\nUID:swap-1\r\n"
           "DTSTAMP:20260301T000000Z\r\nDTSTART:20260305T090000Z\r\nDTEND:20260306T090000Z\r\n"
           "SUMMARY:cid\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n")
    for _ in range(2):  # importing twice replaces
        r = operator.post("/api/v1/oncall/schedules/db/import", {"ical": ics, "start": T0, "end": T0 + 30 * DAY},
                          format="json")
        assert r.status_code == 201, r.content
    assert list(Override.objects.values_list("user__username", "start", "source")) == [
        ("cid", T0 + 3 * DAY, "ical")]
    assert_problem(operator.post("/api/v1/oncall/schedules/db/import", {"ical": "nonsense"}, format="json"),
                   400, "invalid_oncall")


def test_my_pages_lists_what_paged_me(api, api_rt, people):
    dee = api(groups=("console",), name="dee")
    producer = api(groups=("producer",), name="prod")
    method = dee.post("/api/v1/oncall/me/contact-methods", {"kind": "webhook", "config": {"url": "http://127.0.0.1:9/d"}},
                      format="json").json()
    assert dee.post(f"/api/v1/oncall/me/contact-methods/{method['id']}/verify").json()["success"] is True
    r = producer.post("/api/v1/notifications", {"source": "db", "title": "lag", "channels": ["user:dee"]}, format="json")
    assert r.status_code == 202, r.content
    api_rt.clock.advance(1)
    api_rt.dispatch()
    [page] = dee.get("/api/v1/oncall/me/pages").json()["items"]
    assert (page["notification_id"], page["target"], page["title"], page["status"]) == (
        r.json()["id"], "user:dee", "lag", "DELIVERED")
    other = api(groups=("console",), name="eli")
    assert other.get("/api/v1/oncall/me/pages").json()["items"] == []
