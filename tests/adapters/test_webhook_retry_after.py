"""The webhook adapter reads ``Retry-After`` on 429 and 503 (RFC 9110 section 10.2.3:
delta-seconds or an HTTP-date) as the wait the provider asks for, on the runtime's clock."""
from datetime import datetime, timezone
from email.utils import format_datetime

import httpx
import pytest

from notifications.adapters.base import AttemptContext, ChannelTarget
from notifications.adapters.webhook import WebhookAdapter, parse_retry_after

NOW = 1_800_000_000.0  # the tests' fake clock (tests/conftest.T0)


def http_date(epoch: float) -> str:
    return format_datetime(datetime.fromtimestamp(epoch, timezone.utc), usegmt=True)


JAN_15_2027 = datetime(2027, 1, 15, 8, 0, 0, tzinfo=timezone.utc).timestamp()


@pytest.mark.parametrize("value,now,seconds", [
    ("120", NOW, 120.0),
    (" 7 ", NOW, 7.0),
    ("0", NOW, 0.0),
    ("9" * 400, NOW, 1e9),                                  # absurd: bounded; the settle caps it far lower
    (http_date(NOW + 90), NOW, 90.0),                       # IMF-fixdate
    ("Friday, 15-Jan-27 08:00:30 GMT", JAN_15_2027, 30.0),  # obsolete RFC 850 form
    ("Fri Jan 15 08:00:45 2027", JAN_15_2027, 45.0),        # obsolete asctime form (GMT)
    (http_date(NOW - 30), NOW, 0.0),                        # a date in the past: no wait
    (None, NOW, None), ("", NOW, None), ("-5", NOW, None), ("1.5", NOW, None), ("soon", NOW, None),
    ("\u0663", NOW, None),                                  # a non-ASCII digit is not delta-seconds
])
def test_parse_retry_after(value, now, seconds):
    assert parse_retry_after(value, now) == seconds


def send(response: httpx.Response, clock=lambda: NOW):
    adapter = WebhookAdapter(transport=httpx.MockTransport(lambda request: response), clock=clock)
    target = ChannelTarget("hook", "webhook", {"url": "http://127.0.0.1:9/hook"})
    return adapter.send({"id": "n1", "source": "s", "title": "t", "severity": "info"}, target,
                        AttemptContext("n1", 1, 1, 1, "lease"))


@pytest.mark.parametrize("code", [429, 503])
def test_429_and_503_report_the_wait_asked_for(code):
    result = send(httpx.Response(code, headers={"Retry-After": "60"}))
    assert (result.success, result.retryable, result.retry_after) == (False, True, 60.0)
    dated = send(httpx.Response(code, headers={"Retry-After": http_date(NOW + 300)}))
    assert dated.retry_after == 300.0  # measured on the adapter's (the runtime's) clock


@pytest.mark.parametrize("code", [500, 502, 408, 301, 404])
def test_other_statuses_ignore_retry_after(code):
    assert send(httpx.Response(code, headers={"Retry-After": "60"})).retry_after is None


def test_no_or_bad_header_means_the_backoff_decides():
    assert send(httpx.Response(429)).retry_after is None
    assert send(httpx.Response(503, headers={"Retry-After": "later"})).retry_after is None


def test_transport_errors_do_not_record_url_credentials():
    def refuse(request):
        raise httpx.ConnectError(f"cannot connect to {request.url}")

    adapter = WebhookAdapter(transport=httpx.MockTransport(refuse))
    target = ChannelTarget("hook", "webhook", {"url": "http://bot:pa55word@127.0.0.1:9/hook?token=t0ken123"})
    result = adapter.send({"id": "n1", "source": "s", "title": "t", "severity": "info"}, target,
                          AttemptContext("n1", 1, 1, 1, "lease"))
    assert result.retryable and "ConnectError" in result.error
    assert "pa55word" not in result.error and "t0ken123" not in result.error
