"""``uns_channel create --kind email|apprise``: config checked by the adapter's own validator,
the Apprise URLs kept as the secret, and ``list`` naming where each delivers without secrets."""
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from notifications.models import Channel

pytestmark = pytest.mark.django_db


def run(*args):
    out = StringIO()
    call_command("uns_channel", *args, stdout=out)
    return out.getvalue()


@pytest.fixture
def secret_file(tmp_path):
    """``secret_file(text) -> path`` of a file holding ``text`` (the command's --secret-file)."""
    def write(text):
        path = tmp_path / "secret"
        path.write_text(text + "\n")
        return str(path)
    return write


def test_create_email_channel(secret_file):
    out = run("create", "oncall-mail", "--kind", "email", "--to", "oncall@example.com", "--to", "ops@example.org",
              "--from", "UNS <uns@example.net>", "--smtp-host", "smtp.example.net", "--smtp-port", "587",
              "--smtp-security", "starttls", "--smtp-user", "uns", "--secret-file", secret_file("smtp-password-1"))
    assert "created channel oncall-mail (email)" in out
    ch = Channel.objects.get(name="oncall-mail")
    assert ch.config == {"to": ["oncall@example.com", "ops@example.org"], "from": "UNS <uns@example.net>",
                         "host": "smtp.example.net", "port": 587, "security": "starttls", "username": "uns"}
    assert ch.secret == "smtp-password-1"
    listing = run("list")
    assert "oncall-mail\temail\tenabled\toncall@example.com, ops@example.org" in listing
    assert "smtp-password-1" not in listing


def test_email_channel_needs_a_valid_recipient():
    with pytest.raises(CommandError, match="at least one recipient"):
        run("create", "m", "--kind", "email")
    with pytest.raises(CommandError, match="not an email address"):
        run("create", "m", "--kind", "email", "--to", "nobody")
    assert not Channel.objects.filter(name__in=["m", "chat"]).exists()


def test_create_apprise_channel_keeps_the_urls_secret(secret_file):
    urls = "json://uns:pw-Secret-9@127.0.0.1:8099/hook ntfy://127.0.0.1:8099/ops"
    out = run("create", "chat", "--kind", "apprise", "--secret-file", secret_file(urls), "--timeout", "5")
    assert "created channel chat (apprise)" in out
    ch = Channel.objects.get(name="chat")
    assert ch.secret == urls and ch.config == {"timeout": 5.0}
    listing = run("list")
    assert "chat\tapprise\tenabled\t2 Apprise URL(s): json://, ntfy://" in listing
    assert "pw-Secret-9" not in listing


def test_apprise_channel_refuses_a_bad_url_without_echoing_it(secret_file):
    with pytest.raises(CommandError, match=r"#1 \(nosuch://\.\.\.\)") as err:
        run("create", "chat", "--kind", "apprise", "--secret-file", secret_file("nosuch://user:pw-Secret-9@host"))
    assert "pw-Secret-9" not in str(err.value)
    with pytest.raises(CommandError, match="at least one Apprise URL"):
        run("create", "chat", "--kind", "apprise")
    assert not Channel.objects.filter(name__in=["m", "chat"]).exists()
