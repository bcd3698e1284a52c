"""``uns_channel update | rotate-secret | enable | disable | test``: the channel service's verbs
on the command line, audited as ``--actor``; URLs with credentials and secrets never on argv;
``test`` prints the provider's real answer without a secret."""
import io
import logging
import sys

import pytest
from django.core.management import CommandError, call_command

from channel_servers import SMTP_PASSWORD, SMTP_USER, start_http, start_smtp, stop_http
from notifications.models import Channel, ChannelAuditRecord

pytestmark = pytest.mark.django_db

SECRET = "whsec_Y29tbWFuZC10ZXN0LWtleQ=="
URL = "http://127.0.0.1:9/hook"


def run(*args, stdin=""):
    out, old = io.StringIO(), sys.stdin
    sys.stdin = io.StringIO(stdin)
    try:
        call_command("uns_channel", *args, stdout=out)
    finally:
        sys.stdin = old
    return out.getvalue()


def audit(name):
    return list(ChannelAuditRecord.objects.filter(channel=name).order_by("at", "id").values_list("action", "actor"))


def state(name):
    ch = Channel.objects.get(name=name)
    return ch.config, ch.secret, ch.enabled


@pytest.fixture
def hook():
    run("--actor", "ops:alice", "create", "hook", "--kind", "webhook", "--url", URL, "--secret-stdin",
        stdin=SECRET + "\n")
    return "hook"


def test_every_verb_with_its_audit_row(hook, tmp_path):
    assert "updated channel hook: http://127.0.0.1:9/other" in run("--actor", "ops:bob", "update", "hook", "--url",
                                                                    "http://127.0.0.1:9/other", "--timeout", "3")
    path = tmp_path / "new.secret"
    path.write_text("whsec_bmV3LWtleQ==\n")
    out = run("--actor", "ops:bob", "rotate-secret", "hook", "--secret-file", str(path))
    assert out == "rotated the secret of channel hook\n"
    assert "disabled hook" in run("--actor", "ops:bob", "disable", "hook")
    assert "enabled hook" in run("--actor", "ops:bob", "enable", "hook")
    assert run("--actor", "ops:bob", "update", "hook", "--default-timeout")
    assert state("hook") == ({"url": "http://127.0.0.1:9/other"}, "whsec_bmV3LWtleQ==", True)
    assert audit("hook") == [("CREATE", "ops:alice"), ("UPDATE", "ops:bob"), ("ROTATE_SECRET", "ops:bob"),
                             ("DISABLE", "ops:bob"), ("ENABLE", "ops:bob"), ("UPDATE", "ops:bob")]


def test_the_default_actor_names_the_login():
    run("create", "box", "--kind", "console")
    assert ChannelAuditRecord.objects.get(channel="box").actor.startswith("cli")


@pytest.mark.parametrize("args,message", [
    (("update", "hook", "--url", "ftp://x/y"), "not an http"),
    (("update", "hook", "--timeout", "-5"), "timeout"),
    (("update", "hook", "--timeout", "nan"), "timeout"),
    (("update", "hook"), "nothing to change"),
    (("update", "hook", "--to", "ops@example.com"), "unknown field"),
    (("update", "nope", "--timeout", "3"), "channel_not_found"),
    (("enable", "nope"), "channel_not_found"),
    (("disable", "nope"), "channel_not_found"),
    (("test", "nope"), "channel_not_found"),
    (("rotate-secret", "nope", "--secret-stdin"), "channel_not_found"),
    (("rotate-secret", "hook"), "no secret given"),
    (("rotate-secret", "hook", "--secret", SECRET), "--secret is not accepted"),
    (("update", "hook", "--secret", SECRET), "--secret is not accepted"),
    (("disable", "console"), "channel_routed"),
])
def test_bad_input_is_refused_and_changes_nothing(hook, args, message):
    before = {n: state(n) for n in ("hook", "console")}
    with pytest.raises(CommandError, match=message) as caught:
        run(*args, stdin="whsec_b3RoZXI=\n")
    assert SECRET not in str(caught.value)
    assert {n: state(n) for n in ("hook", "console")} == before
    assert audit("hook") == [("CREATE", "ops:alice")] and audit("console") == []


def test_disabling_a_routed_channel_says_where_it_is_routed():
    with pytest.raises(CommandError, match=r"uns-default v1 \(defaults\.channels\)"):
        run("disable", "console")


@pytest.mark.parametrize("verb", ["create", "update"])
@pytest.mark.parametrize("url", ["https://bot:pa55w0rd-Q@hooks.example/in", "https://hooks.example/in?token=t0ken-Q"])
def test_a_url_with_credentials_is_refused_on_argv(hook, verb, url):
    args = ("create", "other", "--kind", "webhook") if verb == "create" else ("update", "hook")
    with pytest.raises(CommandError, match="--url-stdin or --url-file") as caught:
        run(*args, "--url", url)
    assert "pa55w0rd-Q" not in str(caught.value) and "t0ken-Q" not in str(caught.value)
    assert not Channel.objects.filter(name="other").exists() and state("hook")[0] == {"url": URL}


def test_a_url_with_credentials_from_stdin_or_a_file(hook, tmp_path):
    url = "https://bot:pa55w0rd-Q@hooks.example/in"
    out = run("update", "hook", "--url-stdin", stdin=url + "\n")
    assert "pa55w0rd-Q" not in out and state("hook")[0]["url"] == url
    path = tmp_path / "url"
    path.write_text(url.replace("/in", "/two") + "\n")
    run("create", "other", "--kind", "webhook", "--url-file", str(path), "--secret-stdin", stdin=SECRET + "\n")
    assert Channel.objects.get(name="other").config["url"].endswith("/two")
    with pytest.raises(CommandError, match="not both"):
        run("create", "third", "--kind", "webhook", "--url-stdin", "--secret-stdin", stdin=url + "\n")


def test_test_prints_the_receivers_answer_without_the_secret(caplog):
    server = start_http()
    try:
        run("create", "live", "--kind", "webhook", "--url", f"http://127.0.0.1:{server.port}/hook", "--secret-stdin",
            stdin=SECRET + "\n")
        with caplog.at_level(logging.DEBUG):
            out = run("test", "live")
        assert out.startswith("ok: HTTP 200 {}"), out
        assert len(server.receiver.requests) == 1
    finally:
        stop_http(server)
    assert SECRET not in out and SECRET not in caplog.text


def test_a_failed_test_exits_non_zero_with_the_answer():
    server = start_http()
    try:
        server.receiver.statuses.append(503)
        run("create", "live", "--kind", "webhook", "--url", f"http://127.0.0.1:{server.port}/hook")
        out = io.StringIO()
        with pytest.raises(CommandError, match="HTTP 503"):
            call_command("uns_channel", "test", "live", stdout=out)
        assert "FAILED: HTTP 503 {}" in out.getvalue()
    finally:
        stop_http(server)


def test_test_of_an_email_channel_prints_the_smtp_reply(tmp_path):
    smtp = start_smtp()
    try:
        path = tmp_path / "pw"
        path.write_text(SMTP_PASSWORD + "\n")
        run("create", "mail", "--kind", "email", "--to", "ops@example.com", "--smtp-host", "127.0.0.1",
            "--smtp-port", str(smtp.port), "--smtp-security", "none", "--smtp-user", SMTP_USER,
            "--secret-file", str(path))
        out = run("test", "mail")
        assert out.startswith("ok: SMTP 250"), out
        assert SMTP_PASSWORD not in out
        assert len(smtp.inbox.delivered) == 1
    finally:
        smtp.stop()


def test_test_of_the_console_channel_writes_its_inbox_entry():
    from notifications.models import InboxMessage

    assert run("test", "console").startswith("ok: in-app inbox entry")
    assert InboxMessage.objects.filter(channel="console").count() == 1


def test_test_of_an_apprise_channel_prints_each_urls_result(caplog):
    server = start_http()
    try:
        urls = f"json://uns:pw-Apprise-7@127.0.0.1:{server.port}/a json://127.0.0.1:{server.port}/b"
        run("create", "chat", "--kind", "apprise", "--secret-stdin", stdin=urls + "\n")
        with caplog.at_level(logging.DEBUG):
            out = run("test", "chat")
        assert out.startswith("ok: Apprise: #1 JSON: SUCCESS; #2 JSON: SUCCESS"), out
        assert len(server.receiver.requests) == 2
    finally:
        stop_http(server)
    assert "pw-Apprise-7" not in out and "pw-Apprise-7" not in caplog.text
