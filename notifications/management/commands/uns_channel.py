"""``manage.py uns_channel``: named channel configurations, through ``runtime.channels`` (the
one channel service the admin and ``/api/v1/channels`` use too).

    uns_channel [--actor WHO] create NAME --kind webhook (--url URL | --url-stdin | --url-file PATH)
                    [--secret-stdin | --secret-file PATH] [--timeout SECONDS] [--disabled]
    uns_channel create NAME --kind console
    uns_channel create NAME --kind email --to ADDR [--to ADDR ...] [--from ADDR] [--smtp-host H]
                    [--smtp-port P] [--smtp-security starttls|tls|none] [--smtp-user U]
                    [--secret-stdin | --secret-file PATH  (the SMTP password)] [--timeout SECONDS]
    uns_channel create NAME --kind apprise (--secret-stdin | --secret-file PATH) [--timeout SECONDS]
    uns_channel update NAME [--url URL | --url-stdin | --url-file PATH] [--timeout S | --default-timeout]
                    [--to ADDR ...] [--from ADDR] [--smtp-host H] [--smtp-port P] [--smtp-security S] [--smtp-user U]
    uns_channel rotate-secret NAME (--secret-stdin | --secret-file PATH | --clear)
    uns_channel enable NAME | disable NAME | test NAME | list

The secret (webhook: signing key; email: SMTP password; apprise: the Apprise URLs, separated
by spaces on its one line, since they carry the services' credentials) is never taken on the
command line (``ps`` and shell history would show it): ``--secret-stdin`` reads the first line
of standard input (a no-echo prompt on a terminal), ``--secret-file`` the first line of a file
(``notifications.management.secret_input``, the rule ``uns_user`` and ``mcp_server`` follow
too). ``--secret VALUE`` is refused. A webhook ``--url`` that carries credentials (userinfo, a
``?token=``-like parameter: whatever ``redaction.mask_string`` would mask) is refused on the
command line too: give it with ``--url-stdin`` or ``--url-file``. ``list`` says where each
channel delivers (webhook URL, email recipients, the Apprise URLs' schemes only) and masks URL
credentials with the redaction the logs and ``/ui`` use. ``test`` sends one test message
through the channel's real adapter and prints the provider's answer (HTTP status and first
bytes, SMTP reply, Apprise result), masked; it exits non-zero when the send failed.
``disable`` of a channel the ACTIVE policy routes to is refused (``channel_routed``). Every
change is audited in ``channel_audit_records`` as ``--actor`` (default ``cli:<user>``).
"""
import argparse
import getpass

from django.core.management.base import CommandError

from notifications.management.base import OperationalCommand
from core import channel_kinds
from core.errors import UNSError
from notifications.adapters import email as email_channel
from notifications.adapters.base import MAX_TIMEOUT_SECONDS, check_timeout
from notifications.apps import runtime
from notifications.management.secret_input import RefuseOnArgv, read_secret
from notifications.models import Channel
from notifications.redaction import mask_string
from notifications.runtime import channels
from notifications.selectors import channel_delivers_to


def _seconds(text: str) -> float:
    """``--timeout``: ``adapters.base.check_timeout``, as an argparse type."""
    try:
        return check_timeout(float(text))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _default_actor() -> str:
    try:
        return f"cli:{getpass.getuser()}"
    except Exception:  # noqa: BLE001 - no login name in some containers
        return "cli"


def _secret_options(parser, required_help: str = "") -> None:
    parser.add_argument("--secret-stdin", action="store_true",
                        help="read the channel secret (webhook signing key, SMTP password, Apprise URLs) "
                             "from standard input (first line)" + required_help)
    parser.add_argument("--secret-file", metavar="PATH", help="read the channel secret from a file (first line)")
    parser.add_argument("--secret", action=RefuseOnArgv, instead="--secret-stdin or --secret-file PATH")


def _settings_options(parser, *, update: bool) -> None:
    parser.add_argument("--url", help="webhook URL (one with credentials: use --url-stdin or --url-file)")
    parser.add_argument("--url-stdin", action="store_true", help="read the webhook URL from standard input")
    parser.add_argument("--url-file", metavar="PATH", help="read the webhook URL from a file (first line)")
    parser.add_argument("--timeout", type=_seconds, default=None,
                        help=f"seconds, more than 0 and at most {MAX_TIMEOUT_SECONDS:g} and half UNS_LEASE_SECONDS")
    if update:
        parser.add_argument("--default-timeout", action="store_true", help="drop the channel's own timeout")
    email = parser.add_argument_group("email channels (SMTP settings default to Django's EMAIL_*)")
    email.add_argument("--to", action="append", default=[], help="recipient (repeat for several)")
    email.add_argument("--from", dest="from_addr", help="sender (default DEFAULT_FROM_EMAIL)")
    email.add_argument("--smtp-host")
    email.add_argument("--smtp-port", type=int)
    email.add_argument("--smtp-security", choices=email_channel.SECURITY)
    email.add_argument("--smtp-user")


def _url(opts) -> str | None:
    """The webhook URL from ``--url`` (refused when it holds credentials), ``--url-stdin`` or
    ``--url-file``; None when none is given."""
    given = [o for o in ("url", "url_stdin", "url_file") if opts.get(o)]
    if len(given) > 1:
        raise CommandError("give the URL once: --url, --url-stdin or --url-file")
    if opts.get("url_stdin") and opts.get("secret_stdin"):
        raise CommandError("standard input can carry the URL or the secret, not both: use --url-file or --secret-file")
    if opts.get("url"):
        if mask_string(opts["url"]) != opts["url"]:
            raise CommandError(f"the URL {mask_string(opts['url'])!r} carries credentials, which the command line "
                               "shows to every user (ps, shell history): give it with --url-stdin or --url-file PATH")
        return opts["url"]
    if opts.get("url_stdin") or opts.get("url_file"):
        return read_secret(what="URL", stdin=opts.get("url_stdin"), path=opts.get("url_file"))
    return None


def _settings(opts) -> dict:
    """The config members the options name (absent options: absent members)."""
    found = {"url": _url(opts), "timeout": opts.get("timeout"), "to": opts.get("to") or None,
             "from": opts.get("from_addr"), "host": opts.get("smtp_host"), "port": opts.get("smtp_port"),
             "security": opts.get("smtp_security"), "username": opts.get("smtp_user")}
    return {k: v for k, v in found.items() if v is not None}


class Command(OperationalCommand):
    help = "Create, update, rotate the secret of, enable, disable, test or list delivery channels."

    def add_arguments(self, parser):
        parser.add_argument("--actor", default=None, help="recorded in the audit trail (default cli:<user>)")
        sub = parser.add_subparsers(dest="action", required=True)
        # No prefix matching: "--secret X" must hit the refusal, not be read as another option.
        create = sub.add_parser("create", allow_abbrev=False)
        create.add_argument("name")
        create.add_argument("--kind", choices=channel_kinds.KINDS, required=True)
        create.add_argument("--disabled", action="store_true", help="create it disabled")
        _secret_options(create)
        _settings_options(create, update=False)
        update = sub.add_parser("update", allow_abbrev=False, help="change settings (not the kind, not the secret)")
        update.add_argument("name")
        _settings_options(update, update=True)
        update.add_argument("--secret", action=RefuseOnArgv, instead="rotate-secret NAME --secret-stdin")
        rotate = sub.add_parser("rotate-secret", allow_abbrev=False, help="replace the channel secret")
        rotate.add_argument("name")
        _secret_options(rotate)
        rotate.add_argument("--clear", action="store_true", help="remove the secret (webhook: unsigned)")
        sub.add_parser("list")
        for verb in ("enable", "disable", "test"):
            sub.add_parser(verb).add_argument("name")

    def handle(self, *args, action, **opts):
        actor = opts.pop("actor") or _default_actor()
        try:
            getattr(self, f"do_{action.replace('-', '_')}")(actor, opts)
        except UNSError as exc:
            errors = "".join(f"\n  {e.get('field')}: {e.get('message')}" for e in exc.extra.get("errors", [])
                             if f"{e.get('field')}: {e.get('message')}" != exc.detail)
            raise CommandError(f"{exc.code}: {exc.detail}{errors}")

    def do_create(self, actor, opts):
        config = _settings(opts)
        secret = read_secret(what="secret", stdin=opts["secret_stdin"], path=opts["secret_file"], required=False)
        channel = channels.create(opts["name"], opts["kind"], config, secret, actor=actor,
                                  enabled=not opts["disabled"])
        self.stdout.write(f"created channel {channel.name} ({channel.kind})")

    def do_update(self, actor, opts):
        changes = _settings(opts)
        if opts["default_timeout"]:
            if "timeout" in changes:
                raise CommandError("give --timeout or --default-timeout, not both")
            changes["timeout"] = None
        if not changes:
            raise CommandError("nothing to change: give a setting (see uns_channel update --help)")
        channel = channels.update(opts["name"], changes, actor=actor)
        self.stdout.write(f"updated channel {channel.name}: {mask_string(describe(channel))}")

    def do_rotate_secret(self, actor, opts):
        if opts["clear"]:
            if opts["secret_stdin"] or opts["secret_file"]:
                raise CommandError("give a new secret or --clear, not both")
            secret = ""
        else:
            secret = read_secret(what="secret", stdin=opts["secret_stdin"], path=opts["secret_file"],
                                 hint="give --secret-stdin, --secret-file PATH or --clear")
        channel = channels.rotate_secret(opts["name"], secret, actor=actor)
        self.stdout.write(f"{'cleared' if not secret else 'rotated'} the secret of channel {channel.name}")

    def do_enable(self, actor, opts):
        channels.enable(opts["name"], actor=actor)
        self.stdout.write(f"enabled {opts['name']}")

    def do_disable(self, actor, opts):
        channels.disable(opts["name"], actor=actor)
        self.stdout.write(f"disabled {opts['name']}")

    def do_test(self, actor, opts):
        result = channels.send_test(opts["name"], adapters=runtime().adapters, actor=actor)
        self.stdout.write(f"{'ok' if result.success else 'FAILED'}: {result.answer or '(no answer)'}")
        if not result.success:
            raise CommandError(f"test of channel {opts['name']} failed: {result.error}")

    def do_list(self, actor, opts):
        for ch in Channel.objects.all():
            state = "enabled" if ch.enabled else "disabled"
            self.stdout.write(f"{ch.name}\t{ch.kind}\t{state}\t{mask_string(describe(ch))}")


def describe(ch: Channel) -> str:
    """Where a channel delivers, without its secret (``selectors.channel_delivers_to``)."""
    return channel_delivers_to(ch)
