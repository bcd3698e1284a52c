"""The ``email`` channel against a real SMTP server (aiosmtpd), through the runtime's dispatch:
the message arrives and parses back intact (UTF-8 subject and both parts from one template,
Message-ID, recipients); a 4xx is retried and delivered on the next attempt with the same
Message-ID; a 5xx dead-letters a GUARANTEED notification at once; the password stays secret."""
import logging

import pytest

from notifications.adapters.base import AttemptContext, ChannelTarget
from notifications.adapters.email import EmailAdapter, validate_config
from notifications.models import Channel, Event, Notification
from notifications.runtime import Runtime

pytestmark = pytest.mark.django_db

TITLE = "💥 ディスク満杯 𝄞 disk <full> & café"
BODY = "Node db-1 is at 99 %.\nSecond line with 中文 and 🚀 (astral: 𝔘𝔑𝔖)."
TO = ["oncall@example.com", "Ops Team <ops@example.org>"]


@pytest.fixture
def mail_runtime(clock):
    return Runtime(clock=clock, adapters={"email": EmailAdapter()}, callback=None, concurrency=1, rng=lambda: 0.5)


@pytest.fixture
def mail_channel(db, smtp_server):
    return Channel.objects.create(name="oncall-mail", kind="email", config=validate_config({
        "to": TO, "from": "UNS <uns@alerts.example.net>", "host": "127.0.0.1", "port": smtp_server.port,
        "security": "none", "timeout": 5,
    }))


def send(rt, **fields):
    request = {"source": "billing", "title": TITLE, "body": BODY, "severity": "critical",
               "channels": ["oncall-mail"], **fields}
    return rt.accept("alice", request).notification


def results(notification_id):
    return [e.payload for e in Event.objects.filter(notification_id=notification_id,
                                                    kind="CHANNEL_ATTEMPT_RESULT").order_by("at", "id")]


def test_message_arrives_and_parses_back_intact(mail_runtime, mail_channel, smtp_server):
    n = send(mail_runtime, metadata={"host": "db-1", "region": "eu-west-1"})
    [report] = mail_runtime.dispatch()

    assert report.status == "DELIVERED"
    [(rcpts, msg)] = smtp_server.inbox.delivered
    assert rcpts == ["oncall@example.com", "ops@example.org"]
    assert msg["Subject"] == f"[CRITICAL] {TITLE}"
    assert msg["From"] == "UNS <uns@alerts.example.net>"
    assert [str(a) for a in msg["To"].addresses] == ["oncall@example.com", "Ops Team <ops@example.org>"]
    assert msg["Message-ID"] == f"<uns.{n.id}.1@alerts.example.net>"
    assert msg["X-UNS-Notification-Id"] == n.id and msg["X-UNS-Attempt"] == "1"
    assert msg["Auto-Submitted"] == "auto-generated"
    assert msg.get_content_type() == "multipart/alternative"
    text = msg.get_body(("plain",)).get_content()
    html = msg.get_body(("html",)).get_content()
    assert msg.get_body(("plain",)).get_content_charset() == "utf-8"
    for part in (text, html):  # one template, two renderings of the same facts
        assert "99 %" in part and "中文" in part and "🚀" in part and "𝔘𝔑𝔖" in part
        assert "region" in part and "eu-west-1" in part and n.id in part
    assert "Created: 2027-01-15T08:00:00Z" in text  # created_at (epoch seconds) as ISO-8601 UTC
    assert f"[CRITICAL] {TITLE}" in text  # the text part is not HTML-escaped
    assert "disk &lt;full&gt; &amp; café" in html and "<full>" not in html  # the HTML part is
    assert "<table" in html and "<" not in text.replace("<full>", "")

    [result] = results(n.id)
    assert result["success"] is True and result["message_id"] == msg["Message-ID"]
    assert result["metadata"] == {"recipients": 2, "retryable": False}


def test_4xx_is_retried_and_delivered_next_attempt_with_the_same_message_id(mail_runtime, mail_channel,
                                                                            smtp_server, clock):
    smtp_server.inbox.data_replies.append("451 4.3.0 Mailbox temporarily unavailable")
    n = send(mail_runtime)

    [first] = mail_runtime.dispatch()
    assert first.status == "PENDING"
    [failed] = results(n.id)
    assert failed["success"] is False and failed["metadata"]["retryable"] is True
    assert failed["metadata"]["smtp_code"] == 451 and "451" in failed["error"]

    assert mail_runtime.dispatch() == []  # backing off
    clock.advance(Notification.objects.get(id=n.id).next_attempt - clock.now)
    [second] = mail_runtime.dispatch()
    assert second.status == "DELIVERED" and second.attempt == 2

    (_, refused_msg, _), (_, delivered_msg, _) = smtp_server.inbox.received
    assert refused_msg["Message-ID"] == delivered_msg["Message-ID"] == f"<uns.{n.id}.1@alerts.example.net>"
    assert (refused_msg["X-UNS-Attempt"], delivered_msg["X-UNS-Attempt"]) == ("1", "2")
    assert [r["success"] for r in results(n.id)] == [False, True]


def test_5xx_is_permanent_and_dead_letters_at_once(mail_runtime, mail_channel, smtp_server):
    smtp_server.inbox.data_replies.append("550 5.7.1 Message rejected as spam")
    n = send(mail_runtime)

    [report] = mail_runtime.dispatch()

    assert (report.status, report.dead_letter) == ("FAILED", True)
    row = Notification.objects.get(id=n.id)
    assert row.cycle_attempts == 1 and row.dead_letter is True
    [result] = results(n.id)
    assert result["metadata"]["retryable"] is False and result["metadata"]["smtp_code"] == 550
    assert "550" in row.outcome["error_message"]


def context(attempt=1):
    return AttemptContext("0190a000-0000-7000-8000-000000000001", attempt, 1, attempt, "lease")


def notification():
    return {"id": "0190a000-0000-7000-8000-000000000001", "source": "s", "title": "t", "severity": "info"}


def target(port, **config):
    return ChannelTarget("m", "email", {"to": ["a@example.com", "b@example.com"], "host": "127.0.0.1",
                                        "port": port, "security": "none", **config})


@pytest.mark.parametrize("reply, retryable", [("450 4.2.1 Try later", True), ("550 5.1.1 No such user", False)])
def test_recipients_refused_follow_the_reply_class(smtp_server, reply, retryable):
    smtp_server.inbox.rcpt_replies = {"a@example.com": reply, "b@example.com": reply}
    result = EmailAdapter().send(notification(), target(smtp_server.port), context())
    assert (result.success, result.retryable) == (False, retryable)
    assert reply[:3] in result.error and smtp_server.inbox.received == []


def test_some_recipients_refused_is_a_failure_naming_them(smtp_server):
    smtp_server.inbox.rcpt_replies = {"b@example.com": "550 5.1.1 No such user"}
    result = EmailAdapter().send(notification(), target(smtp_server.port), context())
    assert (result.success, result.retryable) == (False, False)
    assert "1 of 2" in result.error and "b@example.com: 550" in result.error
    assert [rcpts for rcpts, _ in smtp_server.inbox.delivered] == [["a@example.com"]]


def test_connection_refused_is_retryable():
    from channel_servers import free_port

    result = EmailAdapter().send(notification(), target(free_port(), timeout=2), context())
    assert (result.success, result.retryable) == (False, True)
    assert "ConnectionRefusedError" in result.error


def test_login_uses_the_channel_secret_and_never_shows_it(mail_runtime, smtp_server, caplog, api):
    caplog.set_level(logging.DEBUG)
    Channel.objects.create(name="oncall-mail", kind="email", secret=smtp_server.password, config=validate_config({
        "to": ["oncall@example.com"], "host": "127.0.0.1", "port": smtp_server.port, "security": "none",
        "username": "uns"}))
    n = send(mail_runtime)
    [report] = mail_runtime.dispatch()

    assert report.status == "DELIVERED" and smtp_server.inbox.logins == ["uns"]
    detail = api(groups=("operator", "console")).get(f"/ui/notifications/{n.id}")
    assert detail.status_code == 200
    assert smtp_server.password not in caplog.text
    assert smtp_server.password not in detail.content.decode()
    assert not Event.objects.filter(payload__icontains=smtp_server.password).exists()


def test_a_wrong_password_is_permanent(smtp_server):
    result = EmailAdapter().send(notification(), ChannelTarget(
        "m", "email", {"to": ["a@example.com"], "host": "127.0.0.1", "port": smtp_server.port, "security": "none",
                       "username": "uns"}, secret="wrong-password"), context())
    assert (result.success, result.retryable) == (False, False)
    assert "535" in result.error and "wrong-password" not in result.error


@pytest.mark.parametrize("config, message", [
    ({}, "at least one recipient"),
    ({"to": ["not-an-address"]}, "not an email address"),
    ({"to": ["a@example.com"], "port": "smtp"}, "port must be an integer"),
    ({"to": ["a@example.com"], "security": "ssl"}, "security must be one of"),
])
def test_validate_config_names_the_bad_field(config, message):
    with pytest.raises(ValueError, match=message):
        validate_config(config)


def test_validate_config_normalises():
    assert validate_config({"to": "a@example.com, b@example.com", "port": "2525", "extra": 1}) == {
        "to": ["a@example.com", "b@example.com"], "port": 2525}
