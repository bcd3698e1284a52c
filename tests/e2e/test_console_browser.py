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

from .axe import assert_accessible
from .stack import BASE_DIR, COMMAND_TIMEOUT, Stack, policy_content, wait_for

# About a minute of real browser time: scripts/test.sh runs it (like every e2e test) in the
# PostgreSQL leg only. The /ui read models themselves are tested on both databases (tests/console).
pytestmark = [pytest.mark.e2e]

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]
ARTIFACTS = BASE_DIR / "test-artifacts" / "console"
CHANNEL = "console-e2e-hook"
PASSWORD = "correct horse battery staple"
PEOPLE = {"olga": "operator", "rita": "responder", "rob": "console", "paula": "policy_admin,console",
          "ada": "operator,responder,policy_admin"}  # ada sees every control (the accessibility check)
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


# Notifications from source "replica" escalate to the in-app channel (two levels, long waits: the
# chain's copies come from Escalate, not from a deadline); production deploys need an approval.
REPLICA = "replica"


def console_policy() -> dict:
    body = policy_content()
    body["rules"] = [{"name": "replica-escalates", "match": {"source": [REPLICA]}, "set": {
        "require_ack": True,
        "escalation": {"levels": [{"channels": ["console"], "wait_seconds": 3600},
                                  {"channels": ["console"], "wait_seconds": 3600}]}}}]
    body["governance"] = {"approval": {"channels": ["console"], "timeout_seconds": 3600}, "rules": [
        {"name": "prod-deploys-need-a-human", "match": {"action": "deploy.*", "resource": "prod/*"},
         "decision": "REQUIRE_APPROVAL"}]}
    return body


def add_person(stack: Stack, name: str, groups: str) -> None:
    done = subprocess.run([sys.executable, "manage.py", "uns_user", "--skip-checks", "create", name, "--groups", groups,
                           "--password-stdin"], cwd=BASE_DIR, env=stack.env, input=PASSWORD + "\n",
                          capture_output=True, text=True, timeout=COMMAND_TIMEOUT)
    assert done.returncode == 0, done.stderr


def console_stack(tmp_path_factory, name: str, receiver, *, secret: str, tokens: dict[str, str],
                  people: dict[str, str], policy: dict | None = None):
    """The console's stack for a browser test module (a generator for a module-scoped fixture:
    ``yield from console_stack(...)``): ``uns_serve`` with the embedded worker on a fresh
    database under ``tmp_path_factory.mktemp(name)``, the webhook channel ``CHANNEL`` at
    ``receiver.url`` signing with ``secret``, API ``tokens`` (name -> groups), console ``people``
    (name -> comma-separated groups, password ``PASSWORD``), ``policy`` (default: the bootstrap
    policy) in place before the first intake, static files collected. Fails when the console is
    not built; on teardown, asserts every process exited cleanly."""
    if not (BASE_DIR / "frontend" / "dist" / "index.html").is_file():
        pytest.fail("the console is not built: run `npm install && npx --no vite build` in frontend/ "
                    "(scripts/test.sh and `make run` do)")
    s = Stack(tmp_path_factory.mktemp(name), receiver.url, secret=secret)
    try:
        if policy is not None:
            (s.workdir / "policy.json").write_text(json.dumps(policy))
        s.env["UNS_STATIC_ROOT"] = str(s.workdir / "static")
        s.prepare(tokens, CHANNEL)
        s.manage("collectstatic", "--no-input", "-v", "0")
        with ThreadPoolExecutor(max(1, len(people))) as pool:  # one manage.py process each, side by side
            list(pool.map(lambda person: add_person(s, *person), people.items()))
        s.server = s.serve(UNS_EMBEDDED_WORKER="true")
    except BaseException:
        s.close()
        raise
    yield s
    codes = s.close()
    assert all(rc == 0 for rc in codes.values()), f"unclean exit {codes}\n{s.logs()}"


@pytest.fixture(scope="module")
def stack(tmp_path_factory, receiver):
    yield from console_stack(
        tmp_path_factory, "console", receiver, secret="console-e2e-signing-secret", policy=console_policy(),
        tokens={"console-producer": "producer", "other-responder": "responder", "olga-token": "operator"},
        people=PEOPLE)


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
    for view in ("#/inbox", f"#/notifications/{pending}", "#/dlq", f"#/notifications/{dead}", "#/policies", "#/channels"):
        go(page, view)
        page.locator("main h1").first.wait_for()
        page.wait_for_load_state("networkidle")
        names = [b.inner_text() for b in page.locator("main button").all()]
        mutations = [n for n in names if n.split()[0] in
                     ("Acknowledge", "Dismiss", "Snooze", "Escalate…", "Replay", "Resolve…", "Approve", "Deny",
                      "Activate", "Retire", "Clone", "Test", "Enable", "Disable…")]
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
    # the bulk actions sit behind the selection: one primary (Replay), Resolve styled as destructive
    bar = page.get_by_test_id("selection-bar")
    assert "2 selected" in bar.inner_text()
    assert bar.get_by_role("button", name="Resolve selected (2)…").get_attribute("class") == "btn-danger"
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
    assert page.get_by_role("button", name="Replay all matching…").count() == 0  # only behind a selection
    page.get_by_label("Select all shown").check()
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
    shot(page, "17-channels-reason")


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


def escalate(stack, nid: str, reason: str) -> str:
    with stack.client("other-responder") as client:
        response = client.post(f"/api/v1/notifications/{nid}/escalate", json={"reason": reason})
    assert response.status_code == 202, response.text
    return response.json()["escalation"]["id"]


def test_an_escalation_leaves_the_inbox_when_its_chain_is_acknowledged(page, stack):
    """Two levels of a chain page the in-app channel; Rita acknowledges level 2 from the inbox, and
    level 1's copy leaves her inbox live (closed with the chain, her ACK on its timeline)."""
    nid = submit(stack, source=REPLICA, title="Replica lag 300 s", channels=["console"], require_ack=True)
    wait_state(stack, nid, "awaiting ACK", lambda d: d["ack_status"] == "PENDING")
    first = escalate(stack, nid, "the lead is paged")
    second = escalate(stack, nid, "and the manager")
    for copy in (first, second):  # the escalations are uns-escalation's: a console reader reads them
        stack.wait_state(copy, "escalation awaiting ACK", lambda d: d["ack_status"] == "PENDING", "olga-token")
    login(page, "rita")
    nav(page, "Inbox")
    rows = {c: page.locator(f"li[data-notification-id='{c}']") for c in (first, second)}
    for row in rows.values():
        row.wait_for()
        assert "ESCALATED: Replica lag 300 s" in row.inner_text()
    page.locator("[data-live-state=live]").wait_for()
    shot(page, "15-inbox-escalations")
    rows[second].get_by_role("button", name="Acknowledge ESCALATED: Replica lag 300 s").click()
    rows[second].wait_for(state="detached")
    rows[first].wait_for(state="detached")  # closed with the chain, without a reload
    closed = stack.detail(first, "olga-token")
    assert (closed["ack_status"], closed["actor"]) == ("ACKED", "rita")
    assert closed["response_metadata"] == {"escalation_closed": "ESCALATION_STOPPED", "responded_on": second,
                                           "escalated_from": nid}
    assert [e["kind"] for e in closed["timeline"]][-1] == "ACKED"
    go(page, f"#/notifications/{first}")
    page.get_by_role("heading", name="ESCALATED: Replica lag 300 s").wait_for()
    fact = page.get_by_test_id("response-fact")
    assert fact.inner_text().startswith("with the escalation chain, acknowledged by rita")
    assert page.locator("dt", has=page.get_by_text("Closed", exact=True)).count() == 1
    page.get_by_role("button", name="ACK").wait_for(state="detached")
    shot(page, "16-escalation-closed-with-its-chain")


MUTATION_WORDS = ("ACK", "Acknowledge", "Dismiss", "Snooze", "Escalate…", "Approve", "Deny")


def test_an_approval_shows_what_it_gates_and_only_approve_or_deny_settles_it(page, stack):
    """An approval in the inbox and on its page says what it gates (action, resource, risk, who
    asked) and offers Approve and Deny only; "Acknowledge all matching" and the ACK key skip it;
    Approve settles the decision."""
    with stack.client("console-producer") as client:
        response = client.post("/api/v1/governance/decisions", json={
            "action": "deploy.release", "resource": "prod/api", "risk": "high", "agent_id": "deploy-bot",
            "reason": "ship 1.2 tonight", "context": {"version": "1.2"}})
    assert response.status_code in (200, 201), response.text
    decision = response.json()
    assert decision["state"] == "pending"
    [approval] = decision["approval_notification_ids"]
    wait_state(stack, approval, "approval awaiting a decision", lambda d: d["ack_status"] == "PENDING")
    plain = awaiting_ack(stack, "Approval-day backup check")  # matches the same filter
    login(page, "rita")
    nav(page, "Inbox")
    page.get_by_label("Title or source contains").fill("Approval")
    page.get_by_role("button", name="Filter").click()
    row = page.locator(f"li[data-notification-id='{approval}']")
    row.wait_for()
    page.locator(f"li[data-notification-id='{plain}']").wait_for()
    line = row.get_by_test_id("approval-line").inner_text()
    for said in ("deploy.release", "prod/api", "high risk", "agent deploy-bot", "asked by console-producer"):
        assert said in line, line
    names = [b.inner_text().strip() for b in row.get_by_role("button").all()]
    assert sorted(n.split()[0] for n in names if n.split()[0] in MUTATION_WORDS) == ["Approve", "Deny"], names
    shot(page, "17-inbox-approval")

    # "Acknowledge all matching" (behind a selection: the approval has no checkbox): the dialog
    # says approvals are skipped, and the server skips it.
    page.get_by_label("Select all shown").check()
    page.get_by_role("button", name="Acknowledge all matching…").click()
    dialog = page.get_by_role("alertdialog", name="Acknowledge all 2 matching?")
    assert "Approvals among them are skipped" in dialog.inner_text()
    dialog.get_by_role("button", name="Acknowledge 2").click()
    results = page.get_by_test_id("bulk-results")
    results.locator("li").nth(1).wait_for()
    assert results.locator("li[data-ok=true]").count() == 1
    assert "Approval needed: deploy.release" in results.locator("li[data-ok=false]").inner_text()
    assert wait_state(stack, plain, "bulk-acknowledged", lambda d: d["ack_status"] == "ACKED")["actor"] == "rita"
    assert notification_state(stack, approval)["ack_status"] == "PENDING"

    # The ACK key on the approval's row does not approve it either: it sends nothing, says why
    # and puts the focus on the row's Approve button.
    row.focus()
    page.keyboard.press("a")
    page.get_by_test_id("flash").filter(has_text="is an approval: decide it with Approve or Deny").wait_for()
    assert page.evaluate("document.activeElement.dataset.action") == "approve"
    assert row.evaluate("(li, el) => li.contains(el)", page.evaluate_handle("document.activeElement"))
    assert notification_state(stack, approval)["ack_status"] == "PENDING"

    # Its page: what it gates, and Approve / Deny as its only answers.
    go(page, f"#/notifications/{approval}")
    card = page.get_by_test_id("approval")
    card.wait_for()
    facts = card.inner_text()
    for said in ("deploy.release", "prod/api", "high", "deploy-bot", "console-producer", "ship 1.2 tonight"):
        assert said in facts, facts
    names = [b.inner_text().strip() for b in page.locator("main button").all()]
    assert sorted(n.split()[0] for n in names if n.split()[0] in MUTATION_WORDS) == ["Approve", "Deny"], names
    shot(page, "18-approval-detail")
    card.get_by_role("button", name="Approve").click()
    page.locator(".badges .badge-acked").wait_for()
    with stack.client("console-producer") as client:
        settled = client.get(f"/api/v1/governance/decisions/{decision['id']}").json()
    assert settled["state"] == "approved"
    assert notification_state(stack, approval)["actor"] == "rita"

# --- accessibility and visual weight --------------------------------------------------------------

FOCUS_RING = """() => { const el = document.activeElement; if (!el || el === document.body) return null;
    const s = getComputedStyle(el);
    return {what: el.tagName + (el.textContent ? ' ' + el.textContent.trim().slice(0, 40) : ''),
            ring: s.outlineStyle !== 'none' && parseFloat(s.outlineWidth) >= 2}; }"""


def tab_through(page, stops: int = 30) -> list[str]:
    """Press Tab ``stops`` times from the top of the page; the focused elements that show no focus
    ring (an outline of at least 2 px) are returned."""
    page.locator("body").focus()
    unringed = []
    for _ in range(stops):
        page.keyboard.press("Tab")
        seen = page.evaluate(FOCUS_RING)
        if seen and not seen["ring"]:
            unringed.append(seen["what"])
    return unringed


def test_every_view_has_no_serious_accessibility_violation_with_data_on_screen(page, stack, receiver):
    """axe-core (tests/e2e/axe.py) on the login page and every console view with data on screen,
    as a user who sees every control (the selection bar open where there is one): 0 critical, 0
    serious. Tabbing through a view shows a focus ring on every stop."""
    dead = dead_letter(stack, receiver, "a11y", "Checkout webhook unreachable")
    resolved = dead_letter(stack, receiver, "a11y-resolved", "Nightly export failed")
    with stack.client("olga-token") as client:
        assert client.post(f"/api/v1/dlq/{resolved}/resolve", json={}).status_code == 200
    pending = awaiting_ack(stack, "Replica lag above 300 s")
    failures: list[str] = []
    milder: dict[str, list] = {}  # moderate and minor findings, kept as an artifact to read, not failed on

    def check(what: str) -> None:
        page.wait_for_load_state("networkidle")
        try:
            milder[what] = [{"id": v["id"], "impact": v["impact"], "targets": [n["target"] for n in v["nodes"]]}
                            for v in assert_accessible(page, context=what)]
        except AssertionError as exc:
            failures.append(str(exc))

    page.goto("/console/")
    page.get_by_role("button", name="Log in").wait_for()
    check("the login page")
    login(page, "ada")

    page.get_by_role("heading", name="Overview").wait_for()
    page.locator("[data-live-state=live]").wait_for()
    check("the overview")

    nav(page, "Inbox")
    row = page.locator(f"li[data-notification-id='{pending}']")
    row.wait_for()
    assert row.get_by_role("button", name="Acknowledge Replica lag above 300 s").get_attribute("class") == "btn-primary"
    assert row.get_by_role("button", name="Dismiss Replica lag above 300 s").get_attribute("class") == "btn-secondary"
    assert page.get_by_test_id("selection-bar").count() == 0  # no bulk action before a selection
    assert page.get_by_role("button", name="Filter").get_attribute("class") is None  # a plain (secondary) button
    unringed = tab_through(page)
    assert not unringed, f"inbox: focused without a visible focus ring: {unringed}"
    row.get_by_label("Select Replica lag above 300 s").check()
    page.get_by_test_id("selection-bar").wait_for()
    check("the inbox with a pending ACK selected")
    shot(page, "18-inbox-selection")

    nav(page, "DLQ")
    row = page.locator(f"li[data-notification-id='{dead}']")
    row.wait_for()
    assert row.locator(".badge-info").inner_text() == "info"  # severity on every row
    row.get_by_label("Select Checkout webhook unreachable").check()
    check("the DLQ with a dead letter selected")
    shot(page, "19-dlq-selection")

    nav(page, "All")
    page.locator(f"tr[data-notification-id='{resolved}'] .badge-resolved").wait_for()
    assert page.locator(f"tr[data-notification-id='{dead}'] .badge-dlq").inner_text() == "DLQ"
    check("all notifications")

    for nid, heading, what in ((dead, "Checkout webhook unreachable", "a dead letter's detail"),
                               (resolved, "Nightly export failed", "a resolved dead letter's detail"),
                               (pending, "Replica lag above 300 s", "a pending ACK's detail")):
        go(page, f"#/notifications/{nid}")
        page.get_by_role("heading", name=heading).wait_for()
        page.get_by_test_id("timeline").locator("li").first.wait_for()
        if nid == resolved:  # settled on purpose: neutral, with who did it, not a live failure
            page.get_by_test_id("resolved-by").filter(has_text="Resolved by olga-token").wait_for()
            assert page.locator(".badges .badge-resolved").inner_text() == "RESOLVED"
            assert page.locator(".badges .badge-failed, .badges .badge-dlq").count() == 0
            shot(page, "22-notification-resolved")
        check(what)

    nav(page, "Channels")
    page.get_by_test_id(f"channel-{CHANNEL}").wait_for()
    check("the channels view")
    nav(page, "Audit")
    page.locator("table tbody tr").first.wait_for()
    check("the audit view")
    nav(page, "Policies")
    page.locator("table tbody tr").first.wait_for()
    check("the policies view")

    (ARTIFACTS / "axe-milder.json").write_text(json.dumps(milder, indent=1))
    assert not failures, "\n\n".join(failures)


def test_keyboard_only_bulk_replay_and_live_updates_do_not_steal_focus(page, stack, receiver):
    """The DLQ worked from the keyboard alone: select a row, open the selection bar's Replay,
    confirm; and a live update (a new item in the inbox) is announced in the polite count without
    moving the focus."""
    dead = dead_letter(stack, receiver, "keyboard", "Keyboard-only replay")
    receiver.answer("keyboard", 200)
    login(page, "ada", keyboard=True)
    nav(page, "DLQ")
    page.get_by_label("Source is").fill("keyboard")
    page.get_by_label("Source is").press("Enter")
    row = page.locator(f"li[data-notification-id='{dead}']")
    row.wait_for()
    row.get_by_label("Select Keyboard-only replay").focus()
    page.keyboard.press("Space")
    replay = page.get_by_test_id("selection-bar").get_by_role("button", name="Replay selected (1)…")
    replay.focus()
    page.keyboard.press("Enter")
    dialog = page.get_by_role("alertdialog", name="Replay all 1 selected?")
    assert dialog.get_by_role("button", name="Replay 1").evaluate("b => b === document.activeElement")
    page.keyboard.press("Enter")
    page.get_by_test_id("bulk-results").locator("li[data-ok=true]").wait_for()
    wait_state(stack, dead, "delivered after a keyboard replay", lambda d: d["status"] == "DELIVERED")

    nav(page, "Inbox")
    count = page.get_by_test_id("inbox-count")
    count.wait_for()
    before = count.inner_text()
    assert count.get_attribute("role") == "status"  # a polite live region
    field = page.get_by_label("Title or source contains")
    field.focus()
    awaiting_ack(stack, "Arrives while the operator types")
    page.get_by_text("Arrives while the operator types").wait_for()
    page.wait_for_function("before => document.querySelector('[data-testid=inbox-count]').innerText !== before", arg=before)
    assert field.evaluate("el => el === document.activeElement"), "a live update moved the focus"


def test_operator_tests_disables_and_enables_a_channel_from_the_console(page, stack, receiver):
    """Test / Disable… / Enable on the channels view (the /api/v1 channel endpoints), a failing
    channel highlighted and a disabled one neutral; a reader sees no such control (the read-only test)."""
    name = "console-e2e-spare"
    with stack.client("olga-token") as client:
        created = client.post("/api/v1/channels", json={"name": name, "kind": "webhook", "config": {"url": receiver.url}})
        assert created.status_code == 201, created.text
    receiver.answer("spare-refused", 503)  # every answer of the spare channel is a failure: 100 %
    nid = submit(stack, source="spare-refused", title="Spare hook refused", channels=[name])
    wait_state(stack, nid, "dead-lettered", lambda d: d["status"] == "FAILED" and d["dead_letter"])
    receiver.answer("uns-channel-test", 503)
    login(page, "olga")
    nav(page, "Channels")
    row = page.get_by_test_id(f"channel-{name}")
    row.wait_for()
    assert row.get_attribute("data-health") == "failing"
    assert "channel-failing" in row.get_attribute("class")
    assert row.locator(".health-failing").inner_text() == "Failing"
    assert "100%" in page.get_by_test_id(f"rate-{name}").inner_text()
    shot(page, "17-channels")

    row.get_by_role("button", name=f"Test {name}").click()
    page.get_by_test_id(f"channel-result-{name}").filter(has_text="Test message failed").wait_for()
    row.get_by_role("button", name=f"Disable {name}").click()
    dialog = row.get_by_role("alertdialog", name=f"Disable channel {name}?")
    shot(page, "20-channels-disable-confirm")
    dialog.get_by_role("button", name="Disable").click()
    page.get_by_test_id(f"channel-result-{name}").filter(has_text="Disabled").wait_for()
    row.locator(".badge-neutral").filter(has_text="disabled").wait_for()
    # disabled on purpose: a neutral state, no longer highlighted as failing, nothing red
    assert "channel-failing" not in row.get_attribute("class")
    assert row.locator(".health-failing, .badge-failed").count() == 0
    shot(page, "21-channels-disabled")
    row.get_by_role("button", name=f"Enable {name}").click()
    row.get_by_role("button", name=f"Disable {name}").wait_for()
    with stack.client("olga-token") as client:
        assert client.get(f"/api/v1/channels/{name}").json()["enabled"] is True


def test_silence_similar_from_a_notification_previews_and_holds_the_next_match(page, stack):
    """An operator opens a delivered notification, clicks "Silence similar…": the form is
    pre-filled from its source and severity, the live preview counts it, one click creates the
    silence; the next matching notification is accepted but held (SILENCED, never attempted),
    while one that does not match is delivered; the Silences view lists it (axe-checked) and
    "Expire now", once confirmed, ends it."""
    first = submit(stack, source="db-silence", title="replica lag", severity="critical", require_ack=True)
    wait_state(stack, first, "awaiting ACK", lambda d: d["ack_status"] == "PENDING")
    login(page, "olga")
    go(page, f"#/notifications/{first}")
    page.get_by_role("button", name="Silence similar…").click()
    form = page.get_by_test_id("silence-form")
    assert form.get_by_label("Matcher 1 field").input_value() == "source"
    assert form.get_by_label("Matcher 1 value").input_value() == "db-silence"
    assert form.get_by_label("Matcher 2 value").input_value() == "critical"
    page.get_by_test_id("silence-preview-count").filter(has_text="1").wait_for()
    form.get_by_label("Comment").fill("replica rebuild")
    form.get_by_role("button", name="Create silence").click()
    page.get_by_role("status").filter(has_text="Silence created").wait_for()
    shot(page, "silence-created")

    held = submit(stack, source="db-silence", title="replica lag again", severity="critical")
    other = submit(stack, source="web-silence", title="5xx", severity="critical")
    wait_state(stack, other, "delivered", lambda d: d["status"] == "DELIVERED")
    d = wait_state(stack, held, "silenced", lambda d: any(e["kind"] == "SILENCED" for e in d["timeline"]))
    assert d["status"] == "PENDING"
    assert not any(e["kind"] == "CHANNEL_ATTEMPT_STARTED" for e in d["timeline"])

    nav(page, "Silences")
    row = page.get_by_test_id("silences-active").locator("tr", has_text="replica rebuild")
    row.wait_for()
    assert 'source="db-silence"' in row.inner_text()
    assert_accessible(page, context="Silences view with an active silence")
    shot(page, "silences-view")
    row.get_by_role("button", name="Expire now").click()
    confirm = page.get_by_role("alertdialog", name='Expire the silence source="db-silence", severity="critical" now?')
    assert re.search(r"It has held [12] notifications?\.", confirm.inner_text())  # the next match, and maybe the first's ACK deadline
    confirm.get_by_role("button", name="Expire now").click()
    page.get_by_test_id("silences-expired").locator("tr", has_text="replica rebuild").wait_for()
    wait_state(stack, held, "delivered after the silence", lambda d: d["status"] == "DELIVERED")


def test_a_500_character_title_and_source_wrap_instead_of_widening_the_page(page, stack):
    """A notification whose title is one unbroken 500-character word (the most intake accepts)
    and whose source is one unbroken 255-character word: the Inbox, All and the notification page
    wrap them, nothing scrolls sideways, and the Inbox row's ACK button stays on screen."""
    title = "Unbroken" + "x" * 492
    source = "source-" + "y" * 248
    assert (len(title), len(source)) == (500, 255)
    nid = submit(stack, source=source, title=title, channels=["console"], require_ack=True)
    wait_state(stack, nid, "awaiting ACK", lambda d: d["ack_status"] == "PENDING")

    def fits(where: str) -> None:
        sizes = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
        assert sizes[0] <= sizes[1], f"{where} is {sizes[0]}px wide in a {sizes[1]}px window"

    login(page, "rita")
    nav(page, "Inbox")
    row = page.locator(f"li[data-notification-id='{nid}']")
    row.wait_for()
    fits("the Inbox")
    ack = row.get_by_role("button", name=f"Acknowledge {title}").bounding_box()
    width = page.evaluate("window.innerWidth")
    assert ack is not None and 0 <= ack["x"] and ack["x"] + ack["width"] <= width, f"ACK at {ack}, window {width}px"
    shot(page, "17-long-title-inbox", full_page=False)

    nav(page, "All")
    cell = page.locator(f"tr[data-notification-id='{nid}'] td.nowrap")
    cell.wait_for()
    fits("All")
    accepted = cell.bounding_box()
    assert accepted is not None and accepted["x"] + accepted["width"] <= width, f"Accepted at {accepted}"
    shot(page, "17-long-title-all", full_page=False)

    page.locator(f"tr[data-notification-id='{nid}'] td.title a").click()
    page.get_by_role("heading", name=title).wait_for()
    page.locator(".facts dd").first.wait_for()
    fits("the notification page")
    shot(page, "17-long-title-notification", full_page=False)
