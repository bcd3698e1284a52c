"""How commands take a secret: never from the command line (``ps`` and shell history show argv).

The one rule, shared by ``uns_channel`` (channel signing secret), ``uns_user`` (password) and
``mcp_server`` (API token): a secret comes from standard input, from a file, from an
environment variable or from a no-echo prompt on a terminal, and it is the **first line of what
is read, without its line ending** (``\\n`` or ``\\r\\n``; other whitespace is kept, a password
may contain it). An empty secret is refused.
"""
import argparse
import getpass
import os
import sys

from django.core.management.base import CommandError


def read_secret(*, what: str, stdin: bool = False, path: str | None = None, env: str | None = None,
                prompt: bool = False, confirm: bool = False, required: bool = True,
                hint: str = "") -> str:
    """The secret from the first source given, in this order:

    - ``stdin``: the first line of standard input (on a terminal, a no-echo prompt instead);
    - ``path``: the first line of that file (UTF-8);
    - ``env``: the value of that environment variable, when set and not empty;
    - ``prompt``: a no-echo prompt when standard input is a terminal (``confirm``: asked twice).

    ``what`` names the secret in prompts and errors (``"password"``); ``hint`` says in errors how
    to give it (``"give --password-stdin"``). Returns the secret (``str``), or ``""`` when no
    source gave one and ``required`` is false. Raises ``CommandError`` when both ``stdin`` and
    ``path`` are given, when the file cannot be read, when the two prompted entries differ, or
    when the secret is empty (or missing and ``required``)."""
    if stdin and path:
        raise CommandError(f"give the {what} on standard input or in a file, not both")
    given = stdin or bool(path)
    if stdin:
        if sys.stdin.isatty():
            secret = _prompt(what, confirm)
        else:
            secret = first_line(sys.stdin.readline())
    elif path:
        try:
            with open(path, encoding="utf-8") as fh:
                secret = first_line(fh.readline())
        except OSError as exc:
            raise CommandError(f"cannot read the {what} file {path!r}: {exc.strerror}")
    elif env and os.environ.get(env):
        secret = first_line(os.environ[env])
    elif prompt and sys.stdin.isatty():
        given, secret = True, _prompt(what, confirm)
    else:
        secret = ""
    if not secret and (given or required):
        raise CommandError(f"the {what} is empty" if given else f"no {what} given{': ' + hint if hint else ''}")
    return secret


def first_line(text: str) -> str:
    """``text`` up to its first line ending (``\n`` or ``\r\n``), without it."""
    return text.split("\n", 1)[0].removesuffix("\r")


def _prompt(what: str, confirm: bool) -> str:
    secret = getpass.getpass(f"{what.capitalize()}: ")
    if confirm and getpass.getpass(f"{what.capitalize()} (again): ") != secret:
        raise CommandError(f"the {what}s differ")
    return secret


class RefuseOnArgv(argparse.Action):
    """An option that exists only to refuse a secret given on the command line, with a message
    naming the safe options, and without echoing the value (argparse's "unrecognized arguments"
    error would print it)."""

    def __init__(self, option_strings, dest, *, instead: str, **kwargs):
        self.instead = instead
        super().__init__(option_strings, dest, help=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        parser.error(f"{option_string} is not accepted: a secret on the command line is visible to every "
                     f"user (ps, shell history); use {self.instead}")
