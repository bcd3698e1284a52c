"""The console's on-call views in Chromium (issue 22), on test_console_browser's stack and browser
(``manage.py uns_serve`` with the worker in-process on a fresh PostgreSQL database, Debian's
Chromium in Tokyo time): who is on call now for a schedule, an operator's override changing who
that is (and a refused one showing its problem), the calendar listing the next two weeks' shifts,
and a responder's pages and contact methods. axe-core checks each view with its data on screen.
Setup goes through the HTTP API, as an operator's would."""
import re

import pytest

from .axe import assert_accessible
from .test_console_browser import (browser, login, nav, page, receiver, shot, stack, submit,  # noqa: F401 (fixtures)
                                   wait_state)

pytestmark = [pytest.mark.e2e]

SCHEDULE = "db-primary"
MEMBERS = ["rita", "rob"]


def call(stack, method, path, body=None, expect=(200, 201)):
    with stack.client("olga-token") as client:
        response = client.request(method, path, json=body)
    assert response.status_code in expect, (method, path, response.status_code, response.text)
    return response.json() if response.content else None


@pytest.fixture(scope="module")
def schedule(stack):
    """A team and its schedule in Berlin time: a daily rotation of rita and rob since 2020."""
    call(stack, "POST", "/api/v1/oncall/teams", {"name": "database", "members": MEMBERS})
    call(stack, "POST", "/api/v1/oncall/schedules", {
        "name": SCHEDULE, "time_zone": "Europe/Berlin", "team": "database", "description": "The database pager",
        "layers": [{"name": "primary", "members": MEMBERS, "rotation_unit": "days", "rotation_count": 1,
                    "start": "2020-01-01T09:00", "time_zone": "Europe/Berlin"}]})
    return SCHEDULE


def on_call_now(stack) -> dict:
    return call(stack, "GET", f"/api/v1/oncall/schedules/{SCHEDULE}/on-call")


def test_on_call_now_an_override_changes_it_and_the_calendar_lists_two_weeks(page, stack, schedule):
    now = on_call_now(stack)
    person = now["on_call"]["user"]
    other = next(m for m in MEMBERS if m != person)
    assert person in MEMBERS and now["next_shift"]["user"] == other
    login(page, "olga")
    nav(page, "On call")
    row = page.get_by_test_id(f"now-{SCHEDULE}")
    row.filter(has_text=person).wait_for()
    assert "layer primary" in row.inner_text()
    assert other in page.get_by_test_id(f"next-{SCHEDULE}").inner_text()
    board = page.get_by_test_id(f"oncall-{SCHEDULE}").inner_text()
    assert "database" in board and "Europe/Berlin:" in board  # the team; the hand-off in the schedule's zone too
    assert "rita, rob" in page.get_by_test_id("team-database").inner_text()
    assert_accessible(page, context="the on-call board with one schedule and one team")
    shot(page, "20-oncall")

    # The calendar: 14 days, each with the layer's shifts and the final ones.
    page.get_by_test_id(f"oncall-{SCHEDULE}").get_by_role("link", name=SCHEDULE).click()
    page.get_by_role("heading", name=f"Schedule {SCHEDULE}").wait_for()
    calendar = page.get_by_test_id("calendar")
    calendar.locator("tbody tr").nth(13).wait_for()
    assert calendar.locator("tbody tr").count() == 14
    headers = [h.strip() for h in calendar.locator("thead th").all_inner_texts()]
    assert headers == ["Day", "Layer primary", "Final (who is paged)"]
    finals = calendar.locator("td.final").all_inner_texts()
    assert all(re.search(r"\b(rita|rob)\b", text) for text in finals), finals  # everyone of the 14 days
    assert any("rita" in t for t in finals) and any("rob" in t for t in finals)  # a daily rotation of both
    assert "override" not in calendar.locator("tbody").inner_text()
    page.get_by_test_id("calendar-now").filter(has_text=person).wait_for()
    assert_accessible(page, context="the two-week calendar of a daily rotation")

    # A refused override: its end before its start; the problem and the field are shown.
    form = page.locator("form.oncall-override-form")
    form.get_by_label("Person").fill("paula")
    start = form.get_by_label("From").input_value()
    form.get_by_label("To").fill("2020-01-01T00:00")
    form.get_by_role("button", name="Add override").click()
    alert = form.get_by_role("alert")
    alert.wait_for()
    assert "end" in alert.get_by_test_id("problem-fields").inner_text()  # the field the server named
    assert_accessible(page, context="the override form showing a refusal")
    assert on_call_now(stack)["on_call"]["user"] == person  # nothing changed

    # paula instead, from now for an hour (the form's defaults), submitted from the keyboard.
    form.get_by_label("To").fill(page.evaluate(
        "s => { const d = new Date(new Date(s).getTime() + 3600e3); const p = n => String(n).padStart(2, '0');"
        " return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}`; }",
        start))
    form.get_by_label("Person").focus()
    page.keyboard.press("Enter")
    page.get_by_role("status").filter(has_text="Override added: paula").wait_for()
    page.get_by_test_id("calendar-now").filter(has_text="paula").wait_for()
    assert "override" in page.get_by_test_id("calendar-now").inner_text()
    today = calendar.locator("td.final").first
    today.filter(has_text="paula").wait_for()
    assert "override" in today.inner_text()  # marked in words, not by colour alone
    assert "paula" not in calendar.locator("tbody tr").first.locator("td").first.inner_text()  # the layer alone
    page.get_by_test_id("override-paula").wait_for()
    overridden = on_call_now(stack)["on_call"]
    assert (overridden["user"], overridden["source"]) == ("paula", "override")
    assert_accessible(page, context="the calendar with an override")
    page.evaluate("window.scrollTo(0, 0)")  # the picture: who is on call now and the first days
    shot(page, "21-oncall-calendar")

    nav(page, "On call")
    page.get_by_test_id(f"now-{SCHEDULE}").filter(has_text="paula").wait_for()
    assert "override" in page.get_by_test_id(f"now-{SCHEDULE}").inner_text()

    # Deleting it (after a confirmation) gives the rotation back.
    page.get_by_test_id(f"oncall-{SCHEDULE}").get_by_role("link", name=SCHEDULE).click()
    page.get_by_role("button", name="Delete the override of paula").click()
    page.get_by_role("alertdialog", name="Delete the override of paula?").get_by_role(
        "button", name="Delete override").click()
    page.get_by_role("status").filter(has_text="Override deleted.").wait_for()
    page.get_by_test_id("calendar-now").filter(has_text=person).wait_for()
    assert page.get_by_test_id("override-paula").count() == 0
    assert on_call_now(stack)["on_call"]["user"] == person


def test_a_read_only_user_sees_the_calendar_without_override_controls(page, stack, schedule):
    login(page, "rob")
    nav(page, "On call")
    page.get_by_test_id(f"oncall-{SCHEDULE}").get_by_role("link", name=SCHEDULE).click()
    page.get_by_test_id("calendar").locator("tbody tr").nth(13).wait_for()
    assert page.locator("form.oncall-override-form").count() == 0
    assert page.get_by_role("button", name=re.compile("Delete")).count() == 0


def test_a_responder_verifies_a_contact_method_and_sees_the_page_it_brought(page, stack, receiver, schedule):
    method = call(stack, "POST", "/api/v1/oncall/users/rita/contact-methods",
                  {"kind": "webhook", "label": "pager", "config": {"url": receiver.url, "timeout": 5}})
    login(page, "rita")
    nav(page, "My pages")
    row = page.get_by_test_id(f"method-{method['id']}")
    row.filter(has_text="not verified").wait_for()
    assert page.get_by_text("Nothing has paged you yet.").is_visible()
    row.get_by_role("button", name="Send test through pager").click()
    page.get_by_role("status").filter(has_text="succeeded").wait_for()
    row.filter(has_text=re.compile(r"^(?!.*not verified).*verified", re.S)).wait_for()

    nid = submit(stack, source="db", title="replica lag", channels=["user:rita"])
    wait_state(stack, nid, "delivered to rita's pager", lambda d: d["status"] == "DELIVERED")
    nav(page, "On call")
    nav(page, "My pages")
    paged = page.get_by_test_id(f"page-{nid}")
    paged.wait_for()
    assert "replica lag" in paged.inner_text() and "user:rita" in paged.inner_text()
    assert_accessible(page, context="my pages with one page and a verified contact method")
    paged.get_by_role("link", name="replica lag").click()
    page.wait_for_url(re.compile(f"#/notifications/{nid}$"))
