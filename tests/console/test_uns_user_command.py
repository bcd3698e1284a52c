"""``manage.py uns_user``: console users with groups and a password read from stdin."""
import io

import pytest
from django.contrib.auth import authenticate, get_user_model
from django.core.management import CommandError, call_command

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _fast_hasher(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def run(*args, stdin="a long enough password\n"):
    out = io.StringIO()
    import sys

    old = sys.stdin
    sys.stdin = io.StringIO(stdin)
    try:
        call_command("uns_user", *args, stdout=out)
    finally:
        sys.stdin = old
    return out.getvalue()


def test_create_with_groups_and_password_from_stdin():
    out = run("create", "olga", "--groups", "operator,responder", "--password-stdin")
    assert "created user olga" in out and "operator" in out
    user = authenticate(username="olga", password="a long enough password")
    assert user is not None
    assert sorted(user.groups.values_list("name", flat=True)) == ["operator", "responder"]
    assert user.has_perm("notifications.operate_dlq") and user.has_perm("notifications.respond_notification")


def test_create_again_updates_password_and_adds_groups():
    run("create", "olga", "--groups", "console", "--password-stdin")
    out = run("create", "olga", "--groups", "operator", "--password-stdin", stdin="another long password\n")
    assert "updated user olga" in out
    assert authenticate(username="olga", password="another long password") is not None
    assert get_user_model().objects.get(username="olga").groups.count() == 2


@pytest.mark.parametrize("args,stdin,message", [
    (("--groups", "wizards", "--password-stdin"), "a long enough password\n", "unknown group"),
    (("--password-stdin",), "\n", "empty"),
    (("--password-stdin",), "short\n", "too short"),
    ((), "", "--password-stdin"),
    (("--password", "a long enough password"), "", "--password is not accepted"),  # argv shows in ps
])
def test_refusals(args, stdin, message):
    with pytest.raises(CommandError, match=message):
        run("create", "olga", *args, stdin=stdin)
    assert not get_user_model().objects.filter(username="olga").exists()


def test_list():
    run("create", "olga", "--groups", "operator", "--password-stdin")
    assert "olga\tactive\toperator" in run("list")
