"""The console during an alert storm, in Debian's Chromium against ``uns_serve`` with
the worker loops in-process, on a database of this module's own (the storm would crowd the other
browser tests' lists):

- a producer sends 10 notifications/s for 20 s; the DLQ and the inbox keep re-reading (counted:
  the ``/ui`` requests the page makes), and a row replayed or ACKed leaves the screen at once;
- keyboard-only triage of three inbox items;
- a reload keeps the session (an HttpOnly, SameSite=Strict cookie no script can read);
- with 500 dead letters and 500 pending acknowledgements the last item of each list is reachable
  and a selection of row 150 survives a live event.

Screenshots land in ``test-artifacts/console/``. Timing assertions are about cadence and use
generous bounds (the machine may be loaded): see each test.
"""
import statistics
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from .test_console_browser import (  # noqa: F401  (fixtures)
    ARTIFACTS, CHANNEL, UI_TIMEOUT_MS, browser, console_stack, go, login, page, receiver, shot,
    submit, wait_state,
)

pytestmark = [pytest.mark.e2e]

PEOPLE = {"olga": "operator", "rita": "responder", "oscar": "operator,responder"}


@pytest.fixture(scope="module")
def stack(tmp_path_factory, receiver):
    yield from console_stack(
        tmp_path_factory, "storm", receiver, secret="console-storm-signing-secret", people=PEOPLE,
        tokens={"console-producer": "producer", "storm-operator": "operator", "storm-responder": "responder"})


def submit_many(stack, bodies: list[dict], threads: int = 4) -> list[str]:
    """POST every body (as the producer, a few connections side by side); the ids in order."""
    local = threading.local()

    def one(body):
        if not hasattr(local, "client"):
            local.client = stack.client("console-producer")
        response = local.client.post("/api/v1/notifications", json={"channels": [CHANNEL], **body})
        assert response.status_code == 202, response.text
        return response.json()["id"]

    with ThreadPoolExecutor(threads) as pool:
        return list(pool.map(one, bodies))


def count_where(stack, principal: str, path: str, predicate, want: int, timeout: float = 180, **query) -> None:
    """Poll a paged /api/v1 list (with ``query``) until ``want`` items match."""
    deadline = time.monotonic() + timeout
    while True:
        seen, cursor = 0, None
        with stack.client(principal) as client:
            while True:
                params = {**query, "limit": 500, **({"cursor": cursor} if cursor else {})}
                body = client.get(path, params=params).json()
                seen += sum(1 for i in body["items"] if predicate(i))
                cursor = body["next"]
                if not cursor:
                    break
        if seen >= want:
            return
        assert time.monotonic() < deadline, f"{path}: {seen} of {want} after {timeout}s"
        time.sleep(1)


class Producer(threading.Thread):
    """10 notifications/s for ``seconds`` (delivered by the webhook receiver: a stream of events)."""

    def __init__(self, stack, seconds: float = 20, rate: float = 10):
        super().__init__(daemon=True)
        self.stack, self.seconds, self.rate = stack, seconds, rate
        self.sent = 0
        self.started_at = self.ended_at = None

    def run(self):
        with self.stack.client("console-producer") as client:
            self.started_at = time.time()  # epoch: compared with the browser's resource timings
            while (now := time.time()) < self.started_at + self.seconds:
                due = self.started_at + self.sent / self.rate
                if now < due:
                    time.sleep(due - now)
                response = client.post("/api/v1/notifications", json={
                    "source": "storm", "title": f"storm {self.sent}", "channels": [CHANNEL]})
                assert response.status_code == 202, response.text
                self.sent += 1
            self.ended_at = time.time()


def watch_reads(page) -> None:
    """Keep every resource timing entry of the page (the browser's own clock, so the Python side
    being busy or asleep cannot skew the measurement); call after the app loaded."""
    page.evaluate("() => performance.setResourceTimingBufferSize(100000)")


def page_reads(page, path: str) -> tuple[list[float], list[float]]:
    """(start times in epoch seconds, durations in seconds) of the page's requests to ``path``
    exactly (the list itself, not ``path/groups``), from the Resource Timing entries."""
    entries = page.evaluate("""(path) => performance.getEntriesByType("resource")
        .filter(e => new URL(e.name).pathname === path)
        .map(e => [(performance.timeOrigin + e.startTime) / 1000, e.duration / 1000])""", path)
    return [e[0] for e in entries], [e[1] for e in entries]


def wait_while(page, thread) -> None:
    """Wait for ``thread`` while pumping the page's events (never time.sleep with a page open)."""
    while thread.is_alive():
        page.wait_for_timeout(200)


def summary(took: list[float]) -> str:
    took = sorted(took)
    return f"reads took median {statistics.median(took):.2f}s, slowest {took[-1]:.2f}s" if took else "no reads"


def cadence(times: list[float], start: float, end: float) -> tuple[int, float, float]:
    """(requests in [start, end], median gap, largest gap) over that window, its edges included."""
    inside = [t for t in times if start <= t <= end]
    points = [start, *inside, end]
    gaps = [b - a for a, b in zip(points, points[1:])]
    return len(inside), statistics.median(gaps), max(gaps)


# --- the scenarios (in this order: the keyboard one needs an inbox of its own three) --------------

def test_keyboard_only_triage_of_three_inbox_items(page, stack):
    ids = submit_many(stack, [{"source": "kbd", "title": f"Keyboard item {i}", "channels": ["console"],
                               "require_ack": True} for i in range(3)], threads=1)
    for nid in ids:
        wait_state(stack, nid, "awaiting ACK", lambda d: d["ack_status"] == "PENDING")
    login(page, "rita", keyboard=True)
    go(page, "#/inbox")
    for nid in ids:
        page.locator(f"li[data-notification-id='{nid}']").wait_for()
    page.locator("main h1").click()  # nothing focused in a field; from here only keys
    page.keyboard.press("?")
    page.get_by_role("dialog", name="Keyboard shortcuts").wait_for()
    shot(page, "storm-01-keyboard-help")
    page.keyboard.press("Escape")
    order = page.evaluate("() => [...document.querySelectorAll('ul.rows li')].map(li => li.dataset.notificationId)")
    assert sorted(order) == sorted(ids)
    page.keyboard.press("j")
    focused = "() => document.activeElement && document.activeElement.dataset.notificationId"
    assert page.evaluate(focused) == order[0]
    for i, nid in enumerate(order):
        page.keyboard.press("a")
        page.locator(f"li[data-notification-id='{nid}']").wait_for(state="detached")
        if i + 1 < len(order):  # focus moved on to the next row by itself
            page.wait_for_function(f"() => document.activeElement && document.activeElement.dataset.notificationId === '{order[i + 1]}'")
    page.get_by_text("Nothing is waiting for a response.").wait_for()
    shot(page, "storm-02-keyboard-triaged")
    for nid in ids:
        assert wait_state(stack, nid, "acked", lambda d: d["ack_status"] == "ACKED")["actor"] == "rita"


def test_a_reload_keeps_the_session_and_no_script_can_read_it(page, stack):
    login(page, "olga")
    page.get_by_role("heading", name="Overview").wait_for()
    cookie = next(c for c in page.context.cookies() if c["name"] == "sessionid")
    assert cookie["httpOnly"] is True and cookie["sameSite"] == "Strict"
    page.reload()
    page.get_by_test_id("who").filter(has_text="olga").wait_for()
    assert page.get_by_role("button", name="Log in").count() == 0
    page.locator("[data-live-state=live]").wait_for()  # the socket authenticates with the cookie too
    leftovers = page.evaluate("JSON.stringify([localStorage.length, sessionStorage.length, document.cookie])")
    assert leftovers in ('[0,0,""]', '[1,0,""]'), leftovers  # at most the (non-secret) notification choice
    shot(page, "storm-03-after-reload")
    page.get_by_role("button", name="Log out").click()
    page.get_by_role("button", name="Log in").wait_for()
    page.reload()
    page.get_by_role("button", name="Log in").wait_for()
    assert not [c for c in page.context.cookies() if c["name"] == "sessionid" and c["value"]]


def test_dlq_keeps_refreshing_under_a_stream_and_a_replayed_row_leaves_at_once(page, stack, receiver):
    receiver.answer("storm-dead", 410)  # permanent: dead-lettered on the first attempt
    dead = submit_many(stack, [{"source": "storm-dead", "title": f"Storm dead {i}"} for i in range(3)], threads=1)
    for nid in dead:
        wait_state(stack, nid, "dead-lettered", lambda d: d["dead_letter"])
    login(page, "olga")
    watch_reads(page)
    go(page, "#/dlq")
    for nid in dead:
        page.locator(f"li[data-notification-id='{nid}']").wait_for()
    page.locator("[data-live-state=live]").wait_for()
    producer = Producer(stack)
    producer.start()
    page.wait_for_timeout(8000)
    # Mid-stream: replay one from this page, one from elsewhere (the API, another operator).
    receiver.answer("storm-dead", 200)
    page.locator(f"li[data-notification-id='{dead[0]}']").get_by_role("button", name="Replay").click()
    page.locator(f"li[data-notification-id='{dead[0]}']").wait_for(state="detached", timeout=2_000)
    t0 = time.monotonic()
    with stack.client("storm-operator") as client:
        assert client.post(f"/api/v1/dlq/{dead[1]}/replay", json={}).status_code in (200, 202)
    page.locator(f"li[data-notification-id='{dead[1]}']").wait_for(state="detached", timeout=UI_TIMEOUT_MS)
    elsewhere = time.monotonic() - t0
    wait_while(page, producer)
    assert producer.sent >= 150, producer.sent  # the stream really was about 10/s
    shot(page, "storm-04-dlq-after-stream")
    times, took = page_reads(page, "/ui/dlq")
    n, median, largest = cadence(times, producer.started_at, producer.ended_at)
    (ARTIFACTS / "storm-dlq-cadence.txt").write_text(
        f"{n} /ui/dlq reads in {producer.ended_at - producer.started_at:.1f}s of a {producer.sent}-notification stream;"
        f" median gap {median:.2f}s, largest {largest:.2f}s; a replay from elsewhere left the page in {elsewhere:.2f}s;"
        f" {summary(took)}\n")
    # At least every 2 s on average and in the typical gap (the scheduler aims at 1 s); the largest gap
    # only bounded loosely, since one slow read on a loaded machine delays the next.
    assert n >= 10 and median <= 2.0, (n, median, largest, summary(took))
    assert largest <= 6.0, (n, median, largest, summary(took))
    assert elsewhere <= 5.0, elsewhere  # the event takes it off; the re-read is the backstop
    assert page.locator(f"li[data-notification-id='{dead[2]}']").count() == 1
    assert page.locator("[data-lagging=true]").count() == 0


def test_inbox_keeps_refreshing_under_a_stream_and_an_acked_row_leaves_at_once(page, stack):
    ids = submit_many(stack, [{"source": "storm-ack", "title": f"Storm ack {i}", "channels": ["console"],
                               "require_ack": True} for i in range(3)], threads=1)
    for nid in ids:
        wait_state(stack, nid, "awaiting ACK", lambda d: d["ack_status"] == "PENDING")
    login(page, "rita")
    watch_reads(page)
    go(page, "#/inbox")
    for nid in ids:
        page.locator(f"li[data-notification-id='{nid}']").wait_for()
    page.locator("[data-live-state=live]").wait_for()
    producer = Producer(stack)
    producer.start()
    page.wait_for_timeout(8000)
    row = page.locator(f"li[data-notification-id='{ids[0]}']")
    row.get_by_role("button", name="Acknowledge Storm ack 0").click()
    row.wait_for(state="detached", timeout=2_000)
    t0 = time.monotonic()
    with stack.client("storm-responder") as client:
        assert client.post(f"/api/v1/notifications/{ids[1]}/ack", json={}).status_code == 200
    page.locator(f"li[data-notification-id='{ids[1]}']").wait_for(state="detached", timeout=UI_TIMEOUT_MS)
    elsewhere = time.monotonic() - t0
    wait_while(page, producer)
    shot(page, "storm-05-inbox-after-stream")
    times, took = page_reads(page, "/ui/inbox")
    n, median, largest = cadence(times, producer.started_at, producer.ended_at)
    (ARTIFACTS / "storm-inbox-cadence.txt").write_text(
        f"{n} /ui/inbox reads in {producer.ended_at - producer.started_at:.1f}s of a {producer.sent}-notification stream;"
        f" median gap {median:.2f}s, largest {largest:.2f}s; an ACK from elsewhere left the page in {elsewhere:.2f}s;"
        f" {summary(took)}\n")
    assert n >= 10 and median <= 2.0, (n, median, largest, summary(took))
    assert largest <= 6.0, (n, median, largest, summary(took))
    assert elsewhere <= 5.0, elsewhere
    assert page.locator(f"li[data-notification-id='{ids[2]}']").count() == 1


def load_to_the_end(page, count_test_id: str, total: int) -> None:
    """Press Load more until the list shows all ``total`` rows (each press: the next page)."""
    count = page.get_by_test_id(count_test_id)
    for _ in range(20):
        more = page.locator("main button", has_text="Load more")
        if more.count() == 0:
            break
        shown = page.locator("ul.rows li").count()
        more.click()
        try:
            page.wait_for_function("([id, n]) => document.querySelectorAll('ul.rows li').length > n",
                                   arg=[count_test_id, shown], timeout=60_000)
        except Exception:
            shot(page, f"storm-failed-load-more-{count_test_id}")
            alerts = page.get_by_role("alert").all_inner_texts()
            raise AssertionError(f"Load more did not add rows: {count.inner_text()!r}, alerts {alerts}") from None
    count.filter(has_text=f"Showing {total} of {total}").wait_for()


def test_500_dead_letters_and_500_pending_acks_are_all_reachable_and_a_selection_survives(page, stack, receiver):
    receiver.answer("bulk500", 410)
    dead = submit_many(stack, [{"source": "bulk500", "title": f"Bulk dead {i:03d}"} for i in range(500)])
    pending = submit_many(stack, [{"source": "inbox500", "title": f"Bulk pending {i:03d}", "channels": ["console"],
                                   "require_ack": True} for i in range(500)])
    count_where(stack, "storm-operator", "/api/v1/dlq", lambda i: i["source"] == "bulk500", 500)
    count_where(stack, "storm-operator", "/api/v1/notifications", lambda i: True, 500, source="inbox500", ack_status="PENDING")
    login(page, "oscar")

    # The DLQ: all 500 of the filter, the last one on screen, row 150 selected through a live event.
    go(page, "#/dlq")
    page.get_by_label("Source is").fill("bulk500")
    page.get_by_role("button", name="Filter").click()
    page.get_by_test_id("dlq-count").filter(has_text="of 500 dead letters").wait_for()
    load_to_the_end(page, "dlq-count", 500)
    rows = page.locator("ul.rows li")
    assert rows.count() == 500
    assert set(page.evaluate("() => [...document.querySelectorAll('ul.rows li')].map(li => li.dataset.notificationId)")) == set(dead)
    rows.nth(499).scroll_into_view_if_needed()
    assert rows.nth(499).is_visible()
    shot(page, "storm-06-dlq-last-of-500", full_page=False)
    row150 = rows.nth(150)
    row150.scroll_into_view_if_needed()
    row150.locator("input.select").check()
    scroll_before = page.evaluate("window.scrollY")
    watch_reads(page)
    sent = time.time()
    submit(stack, source="storm", title="a live event")
    deadline = time.monotonic() + 30
    while not [t for t in page_reads(page, "/ui/dlq")[0] if t > sent] and time.monotonic() < deadline:
        page.wait_for_timeout(200)
    assert [t for t in page_reads(page, "/ui/dlq")[0] if t > sent], "no re-read after a live event"
    page.wait_for_load_state("networkidle")
    assert rows.count() == 500
    assert rows.nth(150).locator("input.select").is_checked()
    assert page.get_by_role("button", name="Replay selected (1)").is_visible()
    assert abs(page.evaluate("window.scrollY") - scroll_before) < 50
    shot(page, "storm-07-dlq-selection-kept", full_page=False)

    # The inbox: all 500 pending of the filter, the last one on screen.
    go(page, "#/inbox")
    page.get_by_label("Title or source contains").fill("inbox500")
    page.get_by_role("button", name="Filter").click()
    page.get_by_test_id("inbox-count").filter(has_text="of 500 waiting").wait_for()
    load_to_the_end(page, "inbox-count", 500)
    assert set(page.evaluate("() => [...document.querySelectorAll('ul.rows li')].map(li => li.dataset.notificationId)")) == set(pending)
    last = page.locator("ul.rows li").nth(499)
    last.scroll_into_view_if_needed()
    assert last.is_visible()
    assert page.title() == "(500) Inbox · UNS"
    shot(page, "storm-08-inbox-last-of-500", full_page=False)
