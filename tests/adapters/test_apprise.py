"""The ``apprise`` channel end to end against a local HTTP receiver (Apprise's ``json://`` and
``ntfy://`` forms pointed at 127.0.0.1), through the runtime's dispatch: each URL is a provider
attempt with its own lease check and CHANNEL_ATTEMPT_RESULT; a failure is retried (only the URL
that failed) and then delivered; Apprise's own retries never run; no URL password reaches the
logs, the events or /ui."""
import logging

import pytest

from notifications.adapters.apprise import AppriseAdapter, provider_key, secret_fragments, validate_urls
from notifications.adapters.base import AttemptContext, ChannelTarget
from notifications.models import Channel, Event, Notification
from notifications.runtime import Runtime

pytestmark = pytest.mark.django_db

PASSWORD = "Apr1se-Pa55-QX7"


@pytest.fixture
def ap_runtime(clock):
    return Runtime(clock=clock, adapters={"apprise": AppriseAdapter()}, callback=None, concurrency=1,
                   rng=lambda: 0.5)


def urls(port, json_query=""):
    return [f"json://uns:{PASSWORD}@127.0.0.1:{port}/hook{json_query}",
            f"ntfy://uns:{PASSWORD}@127.0.0.1:{port}/ops-alerts"]


def make_channel(secret_urls):
    return Channel.objects.create(name="chat", kind="apprise", secret="\n".join(secret_urls), config={"timeout": 5})


def send(rt, **fields):
    request = {"source": "billing", "title": "disk full 💥", "body": "db-1 at 99 %", "severity": "error",
               "channels": ["chat"], **fields}
    return rt.accept("alice", request).notification


def events(notification_id, *kinds):
    qs = Event.objects.filter(notification_id=notification_id, kind__in=kinds).order_by("at", "id")
    return [(e.kind, e.payload) for e in qs]


def test_every_url_is_a_provider_attempt_with_its_own_lease_check(ap_runtime, http_receiver):
    make_channel(urls(http_receiver.port))
    n = send(ap_runtime)

    [report] = ap_runtime.dispatch()

    assert report.status == "DELIVERED"
    json_req, ntfy_req = http_receiver.receiver.requests
    assert json_req["path"] == "/hook"
    assert json_req["json"]["title"] == "[ERROR] disk full 💥" and "db-1 at 99 %" in json_req["json"]["message"]
    assert json_req["json"]["type"] == "failure"
    assert ntfy_req["json"]["topic"] == "ops-alerts" and ntfy_req["json"]["title"] == "[ERROR] disk full 💥"
    assert json_req["headers"]["Authorization"].startswith("Basic ")  # the URL's credentials were used

    timeline = events(n.id, "CHANNEL_ATTEMPT_STARTED", "CHANNEL_ATTEMPT_RESULT")
    assert [k for k, _ in timeline] == ["CHANNEL_ATTEMPT_STARTED", "CHANNEL_ATTEMPT_RESULT"] * 2
    token = Notification.objects.get(id=n.id)  # settled: the token is cleared, read it off the events
    assert len({p["lease_token"] for _, p in timeline}) == 1 and token.lease_token is None
    first, second = (p for k, p in timeline if k == "CHANNEL_ATTEMPT_RESULT")
    assert set(first) == {"lease_token", "attempt", "cycle", "cycle_attempt", "channel", "success", "message_id",
                          "error", "metadata", "provider_observed_at"}
    assert (first["channel"], first["success"], first["metadata"]["provider_attempt"],
            first["metadata"]["service"]) == ("chat", True, 1, "JSON")
    assert (second["metadata"]["provider_attempt"], second["metadata"]["provider_attempts"],
            second["metadata"]["service"]) == (2, 2, "ntfy")
    assert first["metadata"]["provider_key"] != second["metadata"]["provider_key"]


def test_a_failed_url_is_retried_alone_and_delivered(ap_runtime, http_receiver, clock):
    make_channel(urls(http_receiver.port, json_query="?retry=3"))  # Apprise's retries stay off
    http_receiver.receiver.statuses.append(500)
    n = send(ap_runtime)

    [first] = ap_runtime.dispatch()

    assert first.status == "PENDING"
    assert [r["status"] for r in http_receiver.receiver.requests] == [500, 200]  # no Apprise retry
    failed, ok = (p for k, p in events(n.id, "CHANNEL_ATTEMPT_RESULT"))
    assert (failed["success"], failed["metadata"]["retryable"], failed["metadata"]["status_code"]) == (False, True, 500)
    assert failed["error"].startswith("JSON: ") and ok["success"] is True
    row = Notification.objects.get(id=n.id)
    assert row.outcome["channels_failed"] == ["chat"] and "1 of 2 Apprise URL(s) failed" in row.outcome["error_message"]

    clock.advance(row.next_attempt - clock.now)
    [second] = ap_runtime.dispatch()

    assert (second.status, second.attempt) == ("DELIVERED", 2)
    assert [r["path"] for r in http_receiver.receiver.requests] == ["/hook", "/", "/hook"]  # ntfy not sent twice
    retried = [p for k, p in events(n.id, "CHANNEL_ATTEMPT_RESULT") if p["attempt"] == 2]
    assert [(p["metadata"]["provider_attempt"], p["success"]) for p in retried] == [(1, True)]


def test_the_lease_is_checked_before_each_url(ap_runtime, http_receiver, clock):
    """The first URL's answer comes after the lease expired: the second URL is never sent, the
    first one's result is kept and the worker records LEASE_LOST."""
    make_channel(urls(http_receiver.port))
    n = send(ap_runtime)
    original_statuses = http_receiver.receiver.statuses

    class SlowFirst:  # the receiver pops a status per request: take the time then
        def __bool__(self):
            return True

        def popleft(self):
            clock.advance(61)  # beyond the 60 s lease
            http_receiver.receiver.statuses = original_statuses
            return 200

    http_receiver.receiver.statuses = SlowFirst()

    [report] = ap_runtime.dispatch()

    assert report.status == "LEASE_LOST"
    assert [r["path"] for r in http_receiver.receiver.requests] == ["/hook"]
    kinds = [k for k, _ in events(n.id, "CHANNEL_ATTEMPT_STARTED", "CHANNEL_ATTEMPT_RESULT", "LEASE_LOST")]
    assert kinds == ["CHANNEL_ATTEMPT_STARTED", "CHANNEL_ATTEMPT_RESULT", "LEASE_LOST"]


def test_no_url_password_in_logs_events_or_ui(ap_runtime, http_receiver, clock, caplog, api):
    caplog.set_level(logging.DEBUG)
    path_token_url = f"json://127.0.0.1:{http_receiver.port}/t/{PASSWORD}Path"
    make_channel(urls(http_receiver.port) + [path_token_url])
    http_receiver.receiver.statuses.extend([500, 200, 500, 500])  # attempt 2: #1 fails again, #3 succeeds
    n = send(ap_runtime, metadata={"runbook": path_token_url})  # a producer quoting a channel URL
    ap_runtime.dispatch()
    clock.advance(Notification.objects.get(id=n.id).next_attempt - clock.now)
    ap_runtime.dispatch()

    assert len(http_receiver.receiver.requests) >= 4
    assert "127.0.0.1" in caplog.text  # the test saw Apprise's and urllib3's DEBUG lines
    assert PASSWORD not in caplog.text
    assert not Event.objects.filter(payload__icontains=PASSWORD).exists()
    detail = api(groups=("operator", "console")).get(f"/ui/notifications/{n.id}")
    assert detail.status_code == 200
    [chat] = detail.json()["channels"]
    # Attempt 2 ended on a URL that succeeded (the third) but the first failed again.
    assert chat["attempts"][-1]["success"] is True and chat["succeeded"] is False
    assert [a["provider_attempt"] for a in chat["attempts"]] == [1, 2, 3, 1, 3]
    assert PASSWORD not in detail.content.decode()


def test_outside_dispatch_the_adapter_sends_every_url():
    result = AppriseAdapter().send(
        {"id": "n-1", "source": "s", "title": "t", "severity": "info"},
        ChannelTarget("chat", "apprise", {"timeout": 2}, secret="json://127.0.0.1:9/closed"),
        AttemptContext("n-1", 1, 1, 1, "lease"))
    assert (result.success, result.retryable) == (False, True)  # connection refused: retryable
    assert result.metadata == {"urls": 1, "succeeded": 0, "skipped": 0}


def test_validate_urls_names_a_bad_url_by_position_only():
    assert validate_urls(f"json://uns:{PASSWORD}@127.0.0.1:1/a\n ntfy://127.0.0.1:2/t ") == [
        f"json://uns:{PASSWORD}@127.0.0.1:1/a", "ntfy://127.0.0.1:2/t"]
    with pytest.raises(ValueError, match="at least one"):
        validate_urls("  ")
    with pytest.raises(ValueError, match=r"#2 \(nosuchservice://\.\.\.\)") as err:
        validate_urls(f"json://127.0.0.1/a nosuchservice://uns:{PASSWORD}@x")
    assert PASSWORD not in str(err.value)


def test_secret_fragments_and_provider_key():
    fragments = secret_fragments("tgram://123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw/-100123456?token=tk_abcdef")
    assert {"AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw", "123456789", "tk_abcdef"} <= fragments
    assert "api.example.com" not in secret_fragments("json://u:pw-long@api.example.com/x")
    assert provider_key("json://a") == provider_key("json://a") != provider_key("json://b")
    assert len(provider_key("json://a")) == 16
