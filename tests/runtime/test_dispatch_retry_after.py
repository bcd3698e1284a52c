"""A provider's ``Retry-After`` sets the earliest next attempt: the next attempt is
``max(backoff, min(Retry-After, UNS_RETRY_AFTER_MAX_SECONDS))`` after the settle, and the attempt
counts against ``max_attempts`` as any other, so the cycle's attempts are never spent faster
than the backoff would spend them. On the fake clock; the last test goes through a real local
HTTP receiver and the real webhook adapter."""
from datetime import datetime, timezone
from email.utils import format_datetime

import pytest
from werkzeug.wrappers import Response

from notifications.adapters.base import DeliveryResult
from notifications.models import Channel
from notifications.runtime import Runtime
from rthelpers import only_event, request, row, timeline

pytestmark = pytest.mark.django_db


def asks(seconds: float | None, error: str = "HTTP 429") -> DeliveryResult:
    return DeliveryResult(False, retryable=True, error=error, metadata={"status_code": 429}, retry_after=seconds)


def test_a_provider_asking_for_60s_is_not_dead_lettered_by_the_30s_schedule(rt, clock, webhook, channel):
    n = rt.accept("alice", request()).notification  # bootstrap: GUARANTEED, 5 attempts, backoff 2, 4, 8, 16 s
    t0, started = clock.now, []
    for attempt in range(1, 6):
        clock.now = max(clock.now, row(n.id).next_attempt)
        webhook.script.append(asks(60.0))
        started.append(clock.now - t0)
        [report] = rt.dispatch()
        if attempt < 5:
            assert (report.status, row(n.id).next_attempt) == ("PENDING", clock.now + 60.0)
            clock.advance(59.9)
            assert rt.dispatch() == []  # not due before the provider said
    assert started == [0.0, 60.0, 120.0, 180.0, 240.0]  # the backoff alone: 0, 2, 6, 14, 30
    r = row(n.id)
    assert (r.status, r.dead_letter, r.cycle_attempts) == ("FAILED", True, 5)  # the same 5 attempts
    metadata = [e.payload["metadata"] for e in timeline(n.id, "CHANNEL_ATTEMPT_RESULT")]
    assert [m["retry_after_seconds"] for m in metadata] == [60.0] * 5


def test_still_pending_after_the_backoff_schedule_would_have_dead_lettered(rt, clock, webhook, channel):
    n = rt.accept("alice", request()).notification
    t0 = clock.now
    for _ in range(3):
        clock.now = max(clock.now, row(n.id).next_attempt)
        webhook.script.append(asks(60.0))
        rt.dispatch()
    clock.now = t0 + 31.0  # past the ~30 s the backoff alone takes to spend 5 attempts
    assert rt.dispatch() == []
    r = row(n.id)
    assert (r.status, r.dead_letter, r.cycle_attempts) == ("PENDING", False, 3)


def test_a_shorter_retry_after_never_speeds_the_backoff_up(rt, clock, webhook, channel):
    n = rt.accept("alice", request()).notification
    delays = []
    for _ in range(4):
        clock.now = max(clock.now, row(n.id).next_attempt)
        webhook.script.append(asks(3.0))
        rt.dispatch()
        delays.append(row(n.id).next_attempt - clock.now)
    assert delays == [3.0, 4.0, 8.0, 16.0]


def test_the_wait_is_capped_by_the_setting(rt, clock, webhook, channel, make_runtime):
    n = rt.accept("alice", request()).notification
    webhook.script.append(asks(86_400.0))
    rt.dispatch()
    assert row(n.id).next_attempt == clock.now + 3600.0  # UNS_RETRY_AFTER_MAX_SECONDS default
    assert only_event(n.id, "CHANNEL_ATTEMPT_RESULT").payload["metadata"]["retry_after_seconds"] == 86_400.0

    short = make_runtime(retry_after_max_seconds=120.0)
    clock.now = row(n.id).next_attempt
    webhook.script.append(asks(86_400.0))
    short.dispatch()
    assert row(n.id).next_attempt == clock.now + 120.0


def test_a_permanent_failure_is_not_held_back_by_retry_after(rt, clock, webhook, channel):
    n = rt.accept("alice", request()).notification
    webhook.script.append(DeliveryResult(False, retryable=False, error="HTTP 400", retry_after=60.0))
    assert [r.status for r in rt.dispatch()] == ["FAILED"]
    assert row(n.id).dead_letter is True


def test_the_longest_wait_any_failed_channel_asked_for_wins(rt, clock, webhook, channel):
    Channel.objects.create(name="second-hook", kind="webhook", config={"url": "http://127.0.0.1:9/two"})
    n = rt.accept("alice", request(channels=["ops-hook", "second-hook"])).notification
    webhook.script.extend([asks(30.0), asks(90.0, error="HTTP 503")])
    rt.dispatch()
    assert row(n.id).next_attempt == clock.now + 90.0


def http_date(epoch: float) -> str:
    return format_datetime(datetime.fromtimestamp(epoch, timezone.utc), usegmt=True)


def test_a_real_receiver_answering_retry_after_then_200(clock, httpserver):
    """The runtime's default adapters (the real webhook adapter on the fake clock) against a
    local HTTP server: ``429 Retry-After: 30``, then ``503 Retry-After: <HTTP-date 45 s on>``,
    then 200. Each attempt starts no earlier than the previous answer asked."""
    answers = [
        lambda: Response(status=429, headers={"Retry-After": "30"}),
        lambda: Response(status=503, headers={"Retry-After": http_date(clock.now + 45)}),
        lambda: Response("{}", status=200, content_type="application/json"),
    ]
    seen = []

    def handler(req):
        seen.append(clock.now)
        return answers[len(seen) - 1]()

    httpserver.expect_request("/hook", method="POST").respond_with_handler(handler)
    Channel.objects.create(name="ops-hook", kind="webhook", config={"url": httpserver.url_for("/hook")})
    rt = Runtime(clock=clock, callback=None, concurrency=1, rng=lambda: 0.5)
    nid = rt.accept("alice", request()).notification.id

    for _ in range(120):  # step the fake clock a second at a time: dispatch whenever due
        rt.dispatch()
        if row(nid).status != "PENDING":
            break
        clock.advance(1.0)
    assert row(nid).status == "DELIVERED"
    assert [b - a for a, b in zip(seen, seen[1:])] == [30.0, 45.0]  # on the second: as early as allowed
    started = [e.at for e in timeline(nid, "CHANNEL_ATTEMPT_STARTED")]
    assert started == seen
    asked = [e.payload["metadata"].get("retry_after_seconds") for e in timeline(nid, "CHANNEL_ATTEMPT_RESULT")]
    assert asked == [30.0, 45.0, None]
