"""``manage.py uns_channel``: the signing secret comes from standard input or a file, never from
argv (``ps`` shows every process's arguments), by the rule ``uns_user`` and
``mcp_server`` share (``notifications.management.secret_input``)."""
import io
import sys

import pytest
from django.core.management import CommandError, call_command

from notifications.models import Channel

pytestmark = pytest.mark.django_db

SECRET = "whsec_ZGVtby1zaWduaW5nLWtleQ=="
URL = "http://127.0.0.1:9/hook"


def run(*args, stdin=""):
    out, old = io.StringIO(), sys.stdin
    sys.stdin = io.StringIO(stdin)
    try:
        call_command("uns_channel", *args, stdout=out)
    finally:
        sys.stdin = old
    return out.getvalue()


def test_secret_from_stdin_is_its_first_line():
    out = run("create", "hook", "--kind", "webhook", "--url", URL, "--secret-stdin", stdin=f"{SECRET}\r\nignored\n")
    assert "created channel hook (webhook)" in out and SECRET not in out
    assert Channel.objects.get(name="hook").secret == SECRET


def test_secret_from_a_file(tmp_path):
    path = tmp_path / "hook.secret"
    path.write_text(SECRET + "\n")
    run("create", "hook", "--kind", "webhook", "--url", URL, "--secret-file", str(path))
    assert Channel.objects.get(name="hook").secret == SECRET


def test_no_secret_makes_an_unsigned_channel():
    run("create", "hook", "--kind", "webhook", "--url", URL)
    assert Channel.objects.get(name="hook").secret == ""


@pytest.mark.parametrize("args,stdin,message", [
    (("--secret", SECRET), "", "--secret is not accepted"),
    (("--secret-stdin",), "\n", "the secret is empty"),
    (("--secret-stdin", "--secret-file", "/dev/null"), SECRET, "not both"),
    (("--secret-file", "/nonexistent/hook.secret"), "", "cannot read the secret file"),
])
def test_refusals_write_nothing_and_never_echo_the_secret(args, stdin, message):
    with pytest.raises(CommandError, match=message) as caught:
        run("create", "hook", "--kind", "webhook", "--url", URL, *args, stdin=stdin)
    assert SECRET not in str(caught.value)
    assert not Channel.objects.filter(name="hook").exists()


def test_list_masks_url_credentials():
    run("create", "hook", "--kind", "webhook", "--url-stdin", stdin="https://bot:pa55word@hooks.example/in?token=t0ken123&x=1\n")
    listed = run("list")
    assert "pa55word" not in listed and "t0ken123" not in listed
    assert "https://***@hooks.example/in?token=***&x=1" in listed


@pytest.mark.parametrize("kind,extra", [("webhook", ("--url", URL)), ("apprise", ("--secret-stdin",)),
                                        ("email", ("--to", "ops@example.com"))])
@pytest.mark.parametrize("timeout", ["-5", "0", "nan", "inf", "1e9", "soon"])
def test_a_timeout_that_is_not_sane_seconds_is_refused_for_every_kind(kind, extra, timeout):
    """One rule (``adapters.base.check_timeout``): -5 used to be stored and then failed every
    attempt until the dead letter, 0 was dropped silently, nan was an IntegrityError."""
    with pytest.raises(CommandError, match="timeout"):
        run("create", "c", "--kind", kind, *extra, "--timeout", timeout, stdin="json://127.0.0.1:9/x\n")
    assert not Channel.objects.filter(name="c").exists()


def test_a_sane_timeout_is_stored():
    run("create", "hook", "--kind", "webhook", "--url", URL, "--timeout", "2.5")
    assert Channel.objects.get(name="hook").config["timeout"] == 2.5


@pytest.mark.parametrize("url", ["http://receiver:8080/hook", "https://hooks.example/in", "http://[::1]:9/x"])
def test_single_label_and_ip_hosts_are_urls(url):
    run("create", "hook", "--kind", "webhook", "--url", url)
    assert Channel.objects.get(name="hook").config["url"] == url


@pytest.mark.parametrize("url", ["ftp://x/y", "http://", "not a url", "http://bad host/", "/relative"])
def test_what_is_not_an_http_url_is_refused(url):
    with pytest.raises(CommandError, match="not an http"):
        run("create", "hook", "--kind", "webhook", "--url", url)
    assert not Channel.objects.filter(name="hook").exists()
