"""The policy lifecycle in the Django admin, in a real browser (Debian's Chromium driven by
Playwright, as ``test_console_browser``) against ``manage.py uns_serve`` on a fresh database,
logged in as a superuser:

- the editor shows a validation error on the content field as the admin types, before saving;
- Activate shows the diff against the ACTIVE version and the before/after resolution of recent
  requests, and acts only after the admin confirms;
- the history lists the revisions the test made, with their authors.

Screenshots of the editor and the activation page are written to ``docs/images/`` (the how-to
page ``docs/how-to/policy-admin.md`` shows them). Setup goes through management commands and
HTTP; nothing here touches the ORM (Playwright's sync API holds an event loop in this thread).
"""
import json
import re

import pytest

from .stack import BASE_DIR, Stack
from .test_console_browser import UI_TIMEOUT_MS, browser  # noqa: F401  (the module's Chromium, a fixture)

pytestmark = [pytest.mark.e2e]

IMAGES = BASE_DIR / "docs" / "images"
ADMIN, PASSWORD = "root", "correct horse battery staple"


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    # No worker runs: the webhook channel is never called, notifications stay accepted.
    s = Stack(tmp_path_factory.mktemp("policy-admin"), "http://127.0.0.1:9/unused", secret="policy-admin-e2e-secret")
    try:
        s.env["UNS_STATIC_ROOT"] = str(s.workdir / "static")
        s.prepare({"producer": "producer"}, "policy-admin-hook")
        s.manage("collectstatic", "--no-input", "-v", "0")
        s.manage("createsuperuser", "--no-input", "--username", ADMIN, "--email", "root@example.org",
                 env={**s.env, "DJANGO_SUPERUSER_PASSWORD": PASSWORD})
        s.server = s.serve()
        with s.client("producer") as client:  # recent requests for the activation preview
            for body in ({"source": "billing", "title": "invoice sent"},
                         {"source": "db", "title": "disk full", "severity": "critical"}):
                assert client.post("/api/v1/notifications", json=body).status_code in (200, 201, 202)
    except BaseException:
        s.close()
        raise
    yield s
    codes = s.close()
    assert all(rc == 0 for rc in codes.values()), f"unclean exit {codes}\n{s.logs()}"


@pytest.fixture(scope="module")
def page(browser, stack):  # noqa: F811  (browser: the imported fixture)
    """One logged-in admin page for the module, on ``test_console_browser``'s Chromium."""
    IMAGES.mkdir(parents=True, exist_ok=True)
    context = browser.new_context(base_url=stack.base_url, viewport={"width": 1440, "height": 1000},
                                  locale="en-US")
    context.set_default_timeout(UI_TIMEOUT_MS)
    pg = context.new_page()
    errors = []
    pg.on("pageerror", lambda exc: errors.append(str(exc)))
    pg.goto("/admin/login/?next=/admin/")
    pg.fill("#id_username", ADMIN)
    pg.fill("#id_password", PASSWORD)
    pg.click("input[type=submit]")
    pg.wait_for_url("**/admin/")
    yield pg
    context.close()
    assert not errors, f"uncaught errors in the page: {errors}"


def content(**defaults) -> dict:
    from .stack import policy_content

    body = policy_content()
    body["description"] = "fewer retries"
    body["defaults"].update(defaults)
    return body


def test_the_editor_shows_a_validation_error_on_the_field_before_saving(page):
    from playwright.sync_api import expect

    page.goto("/admin/policies/policy/add/")
    page.fill("#id_policy_id", "uns-default")
    editor = page.locator("textarea#id_content")
    editor.fill(json.dumps(content(max_attempts=3), indent=2))
    form = page.locator("#policy-settings-form")
    expect(form.locator('select[data-path="defaults.delivery_mode"]')).to_have_value("GUARANTEED")
    expect(form.locator('input[data-path="defaults.channels"][value="policy-admin-hook"]')).to_be_visible()

    attempts = form.locator('.policy-form-row[data-path="defaults.max_attempts"]')
    attempts.locator("input").fill("0")  # the form edits the JSON, which is checked as it changes
    expect(attempts.locator(".policy-form-error")).to_have_text("must be >= 1")
    expect(page.locator("#content-live-check")).to_contain_text("defaults.max_attempts: must be >= 1")
    expect(editor).to_have_attribute("aria-invalid", "true")
    assert '"max_attempts": 0' in editor.input_value()
    assert page.url.endswith("/admin/policies/policy/add/")  # nothing saved yet
    page.screenshot(path=str(IMAGES / "admin-policy-editor.png"), full_page=True)

    attempts.locator("input").fill("2")
    expect(page.locator("#content-live-check")).to_contain_text("Valid content")
    expect(attempts.locator(".policy-form-error")).to_have_text("")
    page.click("input[name=_save]")
    expect(page.locator("#result_list")).to_contain_text("fewer retries")


def test_activate_shows_the_diff_and_the_preview_and_acts_only_after_confirming(page):
    from playwright.sync_api import expect

    page.goto("/admin/policies/policy/?policy_id=uns-default")
    # At 1,440 px the wide list scrolls inside its box: the page itself never scrolls sideways.
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    assert page.evaluate("getComputedStyle(document.querySelector('#changelist .results')).overflowX") == "auto"
    page.locator("#result_list a.activate-link").first.click()
    expect(page.locator("h1")).to_have_text("Activate policy versions?")
    expect(page.locator("pre.activation-diff .diff-sub")).to_contain_text(['"max_attempts": 3'])
    expect(page.locator("pre.activation-diff .diff-add")).to_contain_text(['"max_attempts": 2'])
    expect(page.locator(".activation-summary")).to_contain_text("2 of 2 recent requests would resolve differently")
    expect(page.locator("table.activation-preview tbody tr")).to_have_count(2)
    page.screenshot(path=str(IMAGES / "admin-activate.png"), full_page=True)

    page.get_by_role("link", name="No, take me back").click()  # leaving changes nothing
    expect(page.locator("#result_list")).to_contain_text("DRAFT")

    page.locator("#result_list a.activate-link").first.click()
    page.get_by_role("button", name="Yes, activate").click()
    expect(page.locator(".messagelist")).to_contain_text(re.compile(r"Activated: uns-default v2 \(revision 2\)"))


def test_the_history_lists_the_revisions_with_their_authors(page):
    from playwright.sync_api import expect

    page.goto("/admin/policies/policysnapshot/")
    rows = page.locator("#result_list tbody tr")
    expect(rows).to_have_count(2)
    expect(rows.nth(0)).to_contain_text(ADMIN)
    expect(rows.nth(0)).to_contain_text("uns-default v1 -> v2")
    expect(rows.nth(1)).to_contain_text("uns-bootstrap")
    rows.nth(0).locator("th a").click()
    expect(page.locator("pre.revision-diff .diff-add").first).to_be_visible()


def test_the_compare_page_aligns_each_header_over_its_side(page):
    """Compares the two versions of uns-default the tests above made."""
    page.goto("/admin/policies/policy/?policy_id=uns-default")
    page.locator("#result_list input.action-select").nth(0).check()
    page.locator("#result_list input.action-select").nth(1).check()
    page.select_option("select[name=action]", "compare_selected")
    page.click("button[name=index]")
    page.wait_for_selector("table.diff")
    headers = page.locator("table.diff thead th.diff_header")
    first_row = page.locator("table.diff tbody tr").first.locator("td.diff_header")
    for side in (0, 1):  # each side's header starts where its line numbers do
        assert abs(headers.nth(side).bounding_box()["x"] - first_row.nth(side).bounding_box()["x"]) < 1
