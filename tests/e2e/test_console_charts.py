"""The console's charts in Debian's Chromium against ``uns_serve`` (worker loops in-process) on a
database of this module's own: a burst of notifications and permanent failures shows on the
overview's charts within seconds (live refresh; waits on conditions, no fixed sleeps), a click on
the failure spike opens exactly the dead letters of that bucket, axe-core finds no critical or
serious violation on the overview with the charts drawn, and the channels view draws one chart
per channel. Screenshots of both views during the storm go to docs/images/."""
import re
from concurrent.futures import ThreadPoolExecutor

import pytest

from .axe import assert_accessible
from .test_console_browser import (  # noqa: F401  (fixtures)
    ARTIFACTS, CHANNEL, DOC_IMAGES, UI_TIMEOUT_MS, browser, console_stack, go, login, page, receiver,
)

pytestmark = [pytest.mark.e2e]

OK, DEAD = 24, 9


@pytest.fixture(scope="module")
def stack(tmp_path_factory, receiver):
    yield from console_stack(tmp_path_factory, "charts", receiver, secret="console-charts-signing-secret",
                             tokens={"charts-producer": "producer", "charts-reader": "console"},
                             people={"olga": "operator"})


def burst(stack, bodies: list[dict]) -> list[str]:
    with stack.client("charts-producer") as client, ThreadPoolExecutor(4) as pool:
        answers = list(pool.map(lambda b: client.post("/api/v1/notifications", json={"channels": [CHANNEL], **b}),
                                bodies))
    assert all(a.status_code == 202 for a in answers), [a.text for a in answers if a.status_code != 202]
    return [a.json()["id"] for a in answers]


def shot(page, name: str) -> None:
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True, timeout=60_000)
    page.screenshot(path=str(DOC_IMAGES / f"{name}.png"), timeout=60_000)


def test_the_overview_charts_a_burst_and_its_failure_spike_opens_those_dead_letters(page, stack, receiver):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    receiver.answer("charts-dead", 410)  # permanent: dead-lettered on the first attempt
    login(page, "olga")
    go(page, "#/")
    throughput = page.get_by_test_id("chart-throughput-summary")
    failures = page.get_by_test_id("chart-failures-summary")
    failures.wait_for()
    page.locator("[data-testid=chart-failures] .u-over").wait_for()  # uPlot drew the plot
    page.locator("[data-live-state=live]").wait_for()
    assert "0 dead-lettered" in failures.inner_text()

    dead = burst(stack, [{"source": "charts-dead", "title": f"Chart dead {i}"} for i in range(DEAD)])
    burst(stack, [{"source": "charts-ok", "title": f"Chart ok {i}"} for i in range(OK)])
    # The charts follow the burst on their own (live refresh): no reload, no click.
    page.get_by_test_id("chart-failures-summary").filter(has_text=f"{DEAD} dead-lettered").wait_for(
        timeout=UI_TIMEOUT_MS)
    page.get_by_test_id("chart-throughput-summary").filter(has_text=f"{OK + DEAD} accepted").wait_for(
        timeout=UI_TIMEOUT_MS)
    assert "delivered" in throughput.inner_text()
    assert_accessible(page, context="the overview with its charts after a burst")
    shot(page, "console-overview-charts")

    # The spike: the bucket holding the most dead letters (two when the burst crossed a minute).
    with stack.client("charts-reader") as client:
        body = client.get("/ui/series", params={"window": "1h"}).json()
    counts = body["counts"]["dead_lettered"]
    i = max(range(len(counts)), key=lambda k: counts[k])
    assert sum(counts) == DEAD and counts[i] > 0
    box = page.locator("[data-testid=chart-failures] .u-over").bounding_box()
    first, last = body["buckets"][0], body["buckets"][-1]
    x = box["x"] + box["width"] * (body["buckets"][i] - first) / (last - first)
    page.mouse.move(min(x, box["x"] + box["width"] - 1), box["y"] + box["height"] / 2)
    page.mouse.click(min(x, box["x"] + box["width"] - 1), box["y"] + box["height"] / 2)
    page.wait_for_function("() => window.location.hash.startsWith('#/dlq?')", timeout=UI_TIMEOUT_MS)
    since, until = body["buckets"][i], body["buckets"][i] + body["step_seconds"]
    assert f"failed_since={int(since)}&failed_until={int(until)}" in page.evaluate("window.location.hash")
    page.get_by_test_id("dlq-time-range").wait_for()
    page.get_by_test_id("dlq-count").filter(has_text=f"of {counts[i]} dead letters").wait_for(timeout=UI_TIMEOUT_MS)
    shown = page.locator("li[data-notification-id]")
    ids = {shown.nth(k).get_attribute("data-notification-id") for k in range(shown.count())}
    assert ids and ids <= set(dead) and len(ids) == counts[i]
    assert 0 < since <= until


def test_the_channels_view_draws_attempts_and_failures_per_channel(page, stack, receiver):
    receiver.answer("charts-dead", 410)
    burst(stack, [{"source": "charts-dead", "title": f"Channel dead {i}"} for i in range(3)])
    login(page, "olga")
    go(page, "#/channels")
    summary = page.get_by_test_id(f"chart-channel-{CHANNEL}-summary")
    summary.wait_for(timeout=UI_TIMEOUT_MS)
    page.locator(f"[data-testid=chart-channel-{CHANNEL}] .u-over").wait_for()
    # The hour's totals, not the latest minute's: the burst may sit in the minute before it.
    hour = re.compile(r"(\d+) attempts and (\d+) failures in the last hour")
    page.get_by_test_id(f"chart-channel-{CHANNEL}-summary").filter(
        has_text=re.compile(r"and [1-9]\d* failures in the last hour")).wait_for(timeout=UI_TIMEOUT_MS)
    attempts, failures = map(int, hour.search(summary.inner_text()).groups())
    assert attempts >= failures >= 3, summary.inner_text()
    shot(page, "console-channels-charts")
