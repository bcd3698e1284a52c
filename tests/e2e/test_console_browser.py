"""The operator console in a real browser: Debian's Chromium driven by Playwright for Python
(never ``playwright install``) against ``manage.py uns_serve`` (uvicorn with the worker loops
in-process, live events over /ws/timeline/) on a fresh database, with a real webhook receiver.

People log in with passwords made by ``manage.py uns_user``; the producer is a machine token.
A screenshot of each view lands in ``test-artifacts/console/``. Static files are collected first,
as ``make run`` does (into a temporary ``UNS_STATIC_ROOT``), so WhiteNoise serves them as it does there.

Playwright's sync API keeps an asyncio loop marked as running in this thread while it is open,
which Django would take for an async context, so the browser lives in module-scoped fixtures
(closed when this module ends) and nothing here touches the ORM: setup goes through management
commands and HTTP, as an operator's would.
"""
import json
import os
import re
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from pytest_httpserver import HTTPServer
from werkzeug.wrappers import Response

from .stack import BASE_DIR, COMMAND_TIMEOUT, Stack, wait_for

# About a minute of real browser time: scripts/test.sh runs it (like every e2e test) in the
# PostgreSQL leg only. The /ui read models themselves are tested on both databases (tests/console).
pytestmark = [pytest.mark.e2e]

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]
ARTIFACTS = BASE_DIR / "test-artifacts" / "console"
CHANNEL = "console-e2e-hook"
PASSWORD = "correct horse battery staple"
PEOPLE = {"olga": "operator", "rita": "responder", "rob": "console", "paula": "policy_admin,console"}
UI_TIMEOUT_MS = 20_000


class Receiver:
    """A webhook endpoint that answers ``status[source]`` (default 200)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.status: dict[str, int] = {}
        self.url = None

    def __call__(self, request):
        source = json.loads(request.get_data())["source"]
        with self.lock:
            code = self.status.get(source, 200)
        return Response("{}", status=code, content_type="application/json")

    def answer(self, source: str, code: int) -> None:
        with self.lock:
            self.status[source] = code


@pytest.fixture(scope="module")
def receiver():
    server = HTTPServer(host="127.0.0.1", port=0, threaded=True)
    server.start()
    rec = Receiver()
    server.expect_request("/hook", method="POST").respond_with_handler(rec)
    rec.url = server.url_for("/hook")
    yield rec
    server.clear()
    server.stop()


def add_person(stack: Stack, name: str, groups: str) -> None:
    done = subprocess.run([sys.executable, "manage.py", "uns_user", "--skip-checks", "create", name, "--groups", groups,
                           "--password-stdin"], cwd=BASE_DIR, env=stack.env, input=PASSWORD + "\n",
                          capture_output=True, text=True, timeout=COMMAND_TIMEOUT)
    assert done.returncode == 0, done.stderr


@pytest.fixture(scope="module")
def stack(tmp_path_factory, receiver):
    if not (BASE_DIR / "frontend" / "dist" / "index.html").is_file():
        pytest.fail("the console is not built: run `npm install && npx --no vite build` in frontend/ "
                    "(scripts/test.sh and `make run` do)")
    s = Stack(tmp_path_factory.mktemp("console"), receiver.url, secret="console-e2e-signing-secret")
    try:
        s.env["UNS_STATIC_ROOT"] = str(s.workdir / "static")
        s.prepare({"console-producer": "producer", "other-responder": "responder", "olga-token": "operator"}, CHANNEL)
        s.manage("collectstatic", "--no-input", "-v", "0")
        with ThreadPoolExecutor(len(PEOPLE)) as pool:  # one manage.py process each, side by side
            list(pool.map(lambda person: add_person(s, *person), PEOPLE.items()))
        s.server = s.serve(UNS_EMBEDDED_WORKER="true")
    except BaseException:
        s.close()
        raise
    yield s
    codes = s.close()
    assert all(rc == 0 for rc in codes.values()), f"unclean exit {codes}\n{s.logs()}"


@pytest.fixture(scope="module")
def browser():
    if not os.access(CHROMIUM, os.X_OK):
        pytest.fail(f"{CHROMIUM} is missing: apt-get install -y chromium (scripts/test.sh does)")
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        yield b
        b.close()


@pytest.fixture
def page(browser, stack):
    """A fresh context per test, in Tokyo time so "the browser's zone" is visibly not UTC."""
    context = browser.new_context(base_url=stack.base_url, viewport={"width": 1280, "height": 900},
                                  timezone_id="Asia/Tokyo", locale="en-US")
    context.set_default_timeout(UI_TIMEOUT_MS)
    pg = context.new_page()
    errors = []
    pg.on("pageerror", lambda exc: errors.append(str(exc)))
    yield pg
    context.close()
    assert not errors, f"uncaught errors in the page: {errors}"


# The shots the tutorial's first console session shows (docs/tutorial/console.md): taken here, so
# the pictures are of the console as it is.
DOC_IMAGES = Path(__file__).resolve().parents[2] / "docs" / "images"
DOC_SHOTS = {"02-overview": "console-overview", "03-dlq": "console-dlq",
             "05-notification-delivered": "console-notification", "06-inbox": "console-inbox",
             "20-oncall": "console-oncall", "21-oncall-calendar": "console-oncall-calendar"}


def shot(page, name: str, *, full_page: bool = True) -> None:
    """Save a screenshot artifact (and, for ``DOC_SHOTS``, the documentation's picture of that view,
    the viewport only). ``full_page=False`` keeps only the viewport: a full-page shot of a 500-row
    list is tens of thousands of pixels tall and took Chromium over 20 s on a busy machine."""
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=full_page, timeout=60_000)
    if name in DOC_SHOTS:
        page.screenshot(path=str(DOC_IMAGES / f"{DOC_SHOTS[name]}.png"), timeout=60_000)


def login(page, username: str, *, keyboard: bool = False) -> None:
    page.goto("/console/")
    if keyboard:  # the whole form is reachable and operable from the keyboard
        page.get_by_label("Username").focus()
        page.keyboard.type(username)
        page.keyboard.press("Tab")
        page.keyboard.type(PASSWORD)
        page.keyboard.press("Tab")
        page.keyboard.press("Enter")
    else:
        page.get_by_label("Username").fill(username)
        page.get_by_label("Password").fill(PASSWORD)
        page.get_by_role("button", name="Log in").click()
    page.get_by_test_id("who").filter(has_text=username).wait_for()


def nav(page, name: str) -> None:
    page.get_by_role("navigation", name="Main").get_by_role("link", name=name, exact=True).click()


def go(page, hash_route: str) -> None:
    page.evaluate("h => { window.location.hash = h; }", hash_route)


def submit(stack, **fields) -> str:
    body = {"source": "e2e", "title": "disk full", "channels": [CHANNEL], **fields}
    with stack.client("console-producer") as client:
        response = client.post("/api/v1/notifications", json=body)
    assert response.status_code == 202, response.text
    return response.json()["id"]


def notification_state(stack, nid) -> dict:
    # The producer may read what it sent (console readers may read everything).
    return stack.detail(nid, "console-producer")


def wait_state(stack, nid, what, predicate) -> dict:
    return stack.wait_state(nid, what, predicate, "console-producer")


def dead_letter(stack, receiver, source: str, title: str) -> str:
    receiver.answer(source, 503)
    nid = submit(stack, source=source, title=title)
    wait_state(stack, nid, "dead-lettered", lambda d: d["status"] == "FAILED" and d["dead_letter"])
    return nid


def awaiting_ack(stack, title: str) -> str:
    nid = submit(stack, source="web", title=title, channels=["console"], require_ack=True)
    wait_state(stack, nid, "awaiting ACK", lambda d: d["ack_status"] == "PENDING")
    return nid


# --- the scenarios ---------------------------------------------------------------------------------

def test_operator_replays_a_dead_letter_and_watches_it_deliver_live(page, stack, receiver):
    nid = dead_letter(stack, receiver, "payments", "Card processor unreachable")
    page.goto("/console/")
    shot(page, "01-login")
    login(page, "olga", keyboard=True)

    # Overview: the DLQ is not empty.
    page.get_by_role("heading", name="Overview").wait_for()
    page.locator("[data-live-state=live]").wait_for()
    assert int(page.get_by_test_id("dlq-depth").inner_text()) >= 1
    shot(page, "02-overview")

    # DLQ: the item, and why it failed.
    page.get_by_role("link", name="Triage the DLQ").click()
    row = page.locator(f"li[data-notification-id='{nid}']")
    row.wait_for()
    assert "HTTP 503" in row.locator(".reason").inner_text()
    assert "cycle 1, 3 of 3 attempts" in row.inner_text()
    shot(page, "03-dlq")

    # Detail: the reason in words, the channel attempts, times in the browser's zone.
    row.get_by_role("link", name="Card processor unreachable").click()
    page.get_by_role("heading", name="Card processor unreachable").wait_for()
    assert "HTTP 503" in page.get_by_test_id("failure-reason").inner_text()
    stamp = page.locator("time").first
    assert "GMT+9" in stamp.inner_text() and stamp.get_attribute("title").endswith(")")
    assert "Z (UTC" in stamp.get_attribute("title")
    page.locator("[data-live-state=live]").wait_for()  # the live socket, not the polling fallback
    shot(page, "04-notification-dead-letter")

    # The endpoint recovers; replay, and watch the timeline reach DELIVERED without reloading.
    receiver.answer("payments", 200)
    url_before = page.url
    page.get_by_role("button", name="Replay").click()
    page.get_by_role("status").filter(has_text="Replay requested").wait_for()
    page.locator("[data-testid=timeline] li[data-kind=REPLAY_REQUESTED]").wait_for()
    page.locator("[data-testid=timeline] li[data-kind=DELIVERY_RESULT][data-status=DELIVERED]").wait_for()
    page.locator(".badges .badge-delivered").wait_for()
    assert page.url == url_before
    assert page.get_by_role("button", name="Replay").count() == 0
    assert wait_state(stack, nid, "delivered", lambda d: d["status"] == "DELIVERED")["cycle"] == 2
    shot(page, "05-notification-delivered")


def test_responder_acks_from_the_inbox_and_sees_the_state_change(page, stack):
    nid = awaiting_ack(stack, "Primary database failover")
    login(page, "rita")
    nav(page, "Inbox")
    row = page.locator(f"li[data-notification-id='{nid}']")
    row.wait_for()
    assert "Deadline" in row.inner_text()
    shot(page, "06-inbox")
    row.get_by_role("button", name="Acknowledge Primary database failover").click()
    flash = page.get_by_test_id("flash")
    flash.filter(has_text="Acknowledgement status is now ACKED").wait_for()
    assert "Primary database failover" in flash.inner_text()
    row.wait_for(state="detached")
    shot(page, "07-inbox-after-ack")
    done = notification_state(stack, nid)
    assert (done["ack_status"], done["actor"]) == ("ACKED", "rita")


def test_a_conflicting_ack_shows_the_conflict(page, stack):
    nid = awaiting_ack(stack, "Certificate expires today")
    login(page, "rita")
    go(page, f"#/notifications/{nid}")
    page.get_by_role("heading", name="Certificate expires today").wait_for()

    # Another responder's ACK lands just before Rita's (deterministically: as her request leaves).
    def other_acks_first(route):
        with stack.client("other-responder") as client:
            assert client.post(f"/api/v1/notifications/{nid}/ack", json={}).status_code == 200
        route.continue_()

    page.route(f"**/api/v1/notifications/{nid}/ack", other_acks_first)
    page.get_by_role("button", name="ACK").click()
    alert = page.get_by_role("alert")
    alert.filter(has_text="Someone else already responded: the notification is ACKED.").wait_for()
    assert alert.get_attribute("data-code") == "ack_conflict"
    # The refusal re-reads the notification: it now shows who won, and offers no more ACK.
    page.locator(".badges .badge-acked").wait_for()
    page.get_by_role("button", name="ACK").wait_for(state="detached")
    assert alert.is_visible()
    shot(page, "08-ack-conflict")
    assert notification_state(stack, nid)["actor"] == "other-responder"


def test_read_only_user_sees_no_mutation_controls_and_a_forced_mutation_is_403(page, stack, receiver):
    pending = awaiting_ack(stack, "Read-only view of a pending ACK")
    dead = dead_letter(stack, receiver, "ledger", "Ledger export failed")
    login(page, "rob")

    nav(page, "Inbox")
    page.locator(f"li[data-notification-id='{pending}']").wait_for()
    nav(page, "DLQ")
    page.locator(f"li[data-notification-id='{dead}']").wait_for()
    shot(page, "09-read-only-dlq")
    go(page, f"#/notifications/{dead}")
    page.get_by_role("heading", name="Ledger export failed").wait_for()
    for view in ("#/inbox", f"#/notifications/{pending}", "#/dlq", f"#/notifications/{dead}", "#/policies"):
        go(page, view)
        page.locator("main h1").first.wait_for()
        page.wait_for_load_state("networkidle")
        names = [b.inner_text() for b in page.locator("main button").all()]
        mutations = [n for n in names if n.split()[0] in
                     ("ACK", "Dismiss", "Snooze", "Escalate…", "Replay", "Resolve", "Activate", "Retire", "Clone")]
        assert not mutations, f"{view}: {mutations}"
        assert page.locator("main input[type=checkbox].select").count() == 0
    shot(page, "10-read-only-notification")

    # The server enforces it anyway: a mutation forced from the page, with Rob's own session and
    # its CSRF token.
    statuses = page.evaluate("""async ([pending, dead, password]) => {
        const login = await fetch("/api/v1/auth/login", {method: "POST", headers: {"Content-Type": "application/json"},
            body: JSON.stringify({username: "rob", password})});
        const {csrf_token} = await login.json();
        const call = async (method, path) => {
            const r = await fetch(path, {method, headers: {"Content-Type": "application/json",
                "X-CSRFToken": csrf_token}, body: method === "DELETE" ? undefined : "{}"});
            return [r.status, (await r.json()).code];
        };
        return [
            await call("POST", `/api/v1/notifications/${pending}/ack`),
            await call("POST", `/api/v1/dlq/${dead}/replay`),
            await call("POST", `/api/v1/dlq/${dead}/resolve`),
            await call("POST", "/ui/overview"),
        ];
    }""", [pending, dead, PASSWORD])
    assert statuses == [[403, "permission_denied"], [403, "permission_denied"], [403, "permission_denied"],
                        [405, "method_not_allowed"]]
    assert notification_state(stack, pending)["ack_status"] == "PENDING"
    after = notification_state(stack, dead)
    assert (after["status"], after["dead_letter"]) == ("FAILED", True)


def test_bulk_replay_of_a_selection_asks_first_and_reports_each_item(page, stack, receiver):
    ids = [dead_letter(stack, receiver, "bulk", f"Bulk item {i}") for i in range(2)]
    receiver.answer("bulk", 200)
    login(page, "olga")
    nav(page, "DLQ")
    page.get_by_label("Source is").fill("bulk")
    page.get_by_role("button", name="Filter").click()
    for nid in ids:
        page.locator(f"li[data-notification-id='{nid}']").wait_for()
    page.get_by_label("Select all shown").check()
    page.get_by_role("button", name="Replay selected (2)…").click()
    page.get_by_role("alertdialog", name="Replay all 2 selected?").get_by_role("button", name="Replay 2").click()
    results = page.get_by_test_id("bulk-results")
    results.locator("li[data-ok=true]").nth(1).wait_for()
    assert results.locator("li").count() == 2
    shot(page, "11-dlq-bulk-replay")
    for nid in ids:
        wait_state(stack, nid, "delivered after bulk replay", lambda d: d["status"] == "DELIVERED")


BULK_N = 300


def test_replay_all_matching_a_300_item_filter_settles_all_300(page, stack, receiver):
    """"Replay all matching" on a 300-item filter settles all 300, each
    with its result, after a confirmation showing N, through the server-side bulk action."""
    receiver.answer("storm", 410)  # permanent: each one is dead-lettered on its first attempt
    with stack.client("console-producer") as client:
        for i in range(BULK_N):
            response = client.post("/api/v1/notifications", json={
                "source": "storm", "title": f"Connection refused {i}", "channels": [CHANNEL]})
            assert response.status_code == 202, response.text

    def dead_lettered():
        with stack.client("olga-token") as client:
            body = client.get("/ui/bulk-actions/preview", params={"action": "replay", "source": "storm"}).json()
        return body["matched"] == BULK_N

    wait_for(dead_lettered, f"{BULK_N} dead letters", timeout=180)
    receiver.answer("storm", 200)
    login(page, "olga")
    nav(page, "DLQ")
    page.get_by_label("Source is").fill("storm")
    page.get_by_role("button", name="Filter").click()
    page.locator("li[data-notification-id]").first.wait_for()
    page.get_by_role("button", name="Replay all matching…").click()
    dialog = page.get_by_role("alertdialog", name=f"Replay all {BULK_N} matching?")
    dialog.wait_for()
    shot(page, "13-dlq-replay-all-confirm")
    dialog.get_by_role("button", name=f"Replay {BULK_N}").click()
    results = page.get_by_test_id("bulk-results")
    results.locator("li").nth(BULK_N - 1).wait_for(timeout=120_000)
    # the live view empties as the replays go through; the results stay on screen meanwhile
    page.get_by_text("No dead-lettered notifications match.").wait_for(timeout=120_000)
    assert results.locator("li").count() == BULK_N
    assert results.locator("li[data-ok=true]").count() == BULK_N
    page.get_by_role("heading", name=f"Bulk replay: {BULK_N} of {BULK_N} settled").wait_for()
    shot(page, "14-dlq-replay-all-results")

    def replayed():
        with stack.client("olga-token") as client:
            body = client.get("/ui/bulk-actions/preview", params={"action": "replay", "source": "storm"}).json()
        return body["matched"] == 0

    wait_for(replayed, "every storm item out of the DLQ", timeout=120)


def test_overview_policies_and_audit_views_and_phone_width(page, stack):
    awaiting_ack(stack, "Something for the audit")  # the first intake also initialises the policy store
    login(page, "paula")
    nav(page, "Policies")
    page.get_by_role("heading", name="Policies").wait_for()
    page.locator("table tbody tr").first.wait_for()
    # A policy admin's lifecycle: clone the active version, compare, activate the draft.
    page.get_by_role("button", name="Clone to draft uns-default v1").click()
    page.get_by_role("status").filter(has_text="Clone to draft: uns-default v1 done.").wait_for()
    page.get_by_role("button", name="Activate uns-default v2").wait_for()
    page.get_by_label("Compare version").select_option("1")
    page.get_by_label("with").select_option("2")
    page.get_by_role("button", name="Show diff").click()
    page.get_by_text("v1 and v2 have identical content.").wait_for()
    page.get_by_role("button", name="Activate uns-default v2").click()
    confirm = page.get_by_role("alertdialog", name="Activate uns-default v2?")
    confirm.get_by_test_id("simulation-summary").wait_for()  # the diff and the simulation come first
    shot(page, "12-policies-activate-confirm")
    confirm.get_by_role("button", name="Activate v2").click()
    page.get_by_text("active: v2").wait_for()
    assert page.get_by_role("button", name="Activate uns-default v2").count() == 0
    assert page.get_by_role("button", name="Retire uns-default v1").count() == 0  # retired by the activation
    shot(page, "12-policies")
    nav(page, "Audit")
    page.locator("table tbody tr").first.wait_for()
    shot(page, "13-audit")
    # Phone width: nothing scrolls sideways and the navigation still works.
    page.set_viewport_size({"width": 390, "height": 844})
    for route, name in (("#/", "14-phone-overview"), ("#/inbox", "15-phone-inbox"), ("#/dlq", "16-phone-dlq")):
        go(page, route)
        page.locator("main .grid, main .rows li, main .empty").first.wait_for()
        overflow = page.evaluate("document.scrollingElement.scrollWidth - window.innerWidth")
        assert overflow <= 1, f"{route} scrolls sideways by {overflow}px at phone width"
        shot(page, name)
    page.get_by_role("button", name="Log out").click()
    page.get_by_role("button", name="Log in").wait_for()
    assert "logged out" in page.get_by_role("status").inner_text()
    # Nothing a script can read: the session and CSRF cookies are HttpOnly, the CSRF token was in memory.
    leftovers = page.evaluate("JSON.stringify([localStorage, sessionStorage, document.cookie])")
    assert leftovers == '[{},{},""]'


def test_channels_view_shows_the_failing_hook_and_its_reason_without_secrets(page, stack, receiver):
    dead_letter(stack, receiver, "channels-view", "Hook refused")
    login(page, "olga")
    nav(page, "Channels")
    page.get_by_role("heading", name="Channels").wait_for()
    row = page.get_by_test_id(f"channel-{CHANNEL}")
    page.get_by_test_id(f"reason-{CHANNEL}").filter(has_text="HTTP 503").wait_for()
    assert "Webhook" in row.inner_text()
    assert re.search(r"\d+% \(\d+ of \d+\)", page.get_by_test_id(f"rate-{CHANNEL}").inner_text())
    assert "console-e2e-signing-secret" not in page.content()
    shot(page, "17-channels")


def test_the_admin_loads_its_stylesheet(page, stack):
    """The admin is styled under ``make run``: /static/admin/css/base.css is served."""
    stack.manage("createsuperuser", "--skip-checks", "--no-input", "--username", "root", "--email", "root@example.com",
                 env={**stack.env, "DJANGO_SUPERUSER_PASSWORD": PASSWORD})
    page.goto("/admin/")
    page.get_by_label("Username").fill("root")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.get_by_role("heading", name="Site administration").wait_for()
    sheets = page.evaluate("() => [...document.styleSheets].map(s => ({href: s.href, rules: s.cssRules.length}))")
    base = [s for s in sheets if s["href"] and re.search(r"/static/admin/css/base\.[0-9a-f]{12}\.css$", s["href"])]
    assert base and base[0]["rules"] > 50, sheets  # hashed (collected) and applied
    header = page.evaluate("() => { const s = getComputedStyle(document.getElementById('header'));"
                           " return {background: s.backgroundColor, display: s.display}; }")
    assert header["background"] not in ("rgba(0, 0, 0, 0)", "transparent"), header  # the browser default
    assert header["display"] == "flex", header  # base.css's header layout, not a block's default
    shot(page, "admin-styled")
    # The console's bundle from the same server: Brotli or gzip, as the browser accepts.
    bundle = re.search(r'src="(/console/assets/[^"]+\.js)"', (BASE_DIR / "frontend" / "dist" / "index.html").read_text())[1]
    with stack.client(None) as client:
        for encoding in ("br", "gzip"):
            response = client.get(bundle, headers={"Accept-Encoding": encoding})
            assert response.status_code == 200 and response.headers["Content-Encoding"] == encoding
            assert "immutable" in response.headers["Cache-Control"]
