"""``manage.py uns_channel``: named channel configurations.

    uns_channel create NAME --kind webhook --url URL [--secret-stdin | --secret-file PATH] [--timeout SECONDS]
    uns_channel create NAME --kind console
    uns_channel create NAME --kind email --to ADDR [--to ADDR ...] [--from ADDR] [--smtp-host H]
                    [--smtp-port P] [--smtp-security starttls|tls|none] [--smtp-user U]
                    [--secret-stdin | --secret-file PATH  (the SMTP password)] [--timeout SECONDS]
    uns_channel create NAME --kind apprise (--secret-stdin | --secret-file PATH) [--timeout SECONDS]
    uns_channel list
    uns_channel disable NAME

The secret (webhook: signing key; email: SMTP password; apprise: the Apprise URLs, separated
by spaces on its one line, since they carry the services' credentials) is never taken on the
command line (``ps`` and shell history would show it): ``--secret-stdin`` reads the first line
of standard input (a no-echo prompt on a terminal), ``--secret-file`` the first line of a file
(``notifications.management.secret_input``, the rule ``uns_user`` and ``mcp_server`` follow
too). ``--secret VALUE`` is refused. ``list`` says where each channel delivers (webhook URL,
email recipients, the Apprise URLs' schemes only) and masks URL credentials with the redaction
the logs and ``/ui`` use. Email config and Apprise URLs are checked by their adapter modules'
``validate_config`` / ``validate_urls``, a webhook URL by ``webhook.validate_url``, every
``--timeout`` by ``adapters.base.check_timeout``.
"""
import argparse

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from notifications.adapters import apprise as apprise_channel
from notifications.adapters import email as email_channel
from notifications.adapters import webhook as webhook_channel
from notifications.adapters.base import MAX_TIMEOUT_SECONDS, check_timeout
from notifications.management.secret_input import RefuseOnArgv, read_secret
from notifications.models import Channel
from notifications.redaction import mask_string


def _seconds(text: str) -> float:
    """``--timeout``: ``adapters.base.check_timeout``, as an argparse type."""
    try:
        return check_timeout(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


class Command(BaseCommand):
    help = "Create, list or disable delivery channels."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True)
        # No prefix matching: "--secret X" must hit the refusal, not be read as another option.
        create = sub.add_parser("create", allow_abbrev=False)
        create.add_argument("name")
        create.add_argument("--kind", choices=[k for k, _ in Channel.KINDS], required=True)
        create.add_argument("--url")
        create.add_argument("--secret-stdin", action="store_true",
                            help="read the channel secret (webhook signing key, SMTP password, Apprise URLs) "
                                 "from standard input (first line)")
        create.add_argument("--secret-file", metavar="PATH", help="read the channel secret from a file (first line)")
        create.add_argument("--secret", action=RefuseOnArgv, instead="--secret-stdin or --secret-file PATH")
        create.add_argument("--timeout", type=_seconds, default=None,
                            help=f"seconds, more than 0 and at most {MAX_TIMEOUT_SECONDS:g}")
        email = create.add_argument_group("email channels (SMTP settings default to Django's EMAIL_*)")
        email.add_argument("--to", action="append", default=[], help="recipient (repeat for several)")
        email.add_argument("--from", dest="from_addr", help="sender (default DEFAULT_FROM_EMAIL)")
        email.add_argument("--smtp-host")
        email.add_argument("--smtp-port", type=int)
        email.add_argument("--smtp-security", choices=email_channel.SECURITY)
        email.add_argument("--smtp-user")
        sub.add_parser("list")
        disable = sub.add_parser("disable")
        disable.add_argument("name")

    def handle(self, *args, action, **opts):
        if action == "create":
            config = {}
            if opts["kind"] == Channel.KIND_WEBHOOK:
                if not opts["url"]:
                    raise CommandError("--url is required for a webhook channel")
                try:
                    config["url"] = webhook_channel.validate_url(opts["url"])
                except ValueError as exc:
                    raise CommandError(str(exc))
                if opts["timeout"] is not None:
                    config["timeout"] = opts["timeout"]
            secret = read_secret(what="secret", stdin=opts["secret_stdin"], path=opts["secret_file"], required=False)
            if opts["kind"] == Channel.KIND_EMAIL:
                try:
                    config = email_channel.validate_config({
                        "to": opts["to"], "from": opts["from_addr"], "host": opts["smtp_host"],
                        "port": opts["smtp_port"], "security": opts["smtp_security"],
                        "username": opts["smtp_user"], "timeout": opts["timeout"],
                    })
                except ValueError as exc:
                    raise CommandError(str(exc))
            elif opts["kind"] == Channel.KIND_APPRISE:
                try:  # the URLs are the channel secret: they hold the services' credentials
                    apprise_channel.validate_urls(secret)
                except ValueError as exc:
                    raise CommandError(str(exc))
                if opts["timeout"] is not None:
                    config["timeout"] = opts["timeout"]
            channel = Channel(name=opts["name"], kind=opts["kind"], config=config, secret=secret)
            try:
                channel.full_clean()
            except ValidationError as exc:
                raise CommandError("; ".join(f"{k}: {' '.join(v)}" for k, v in exc.message_dict.items()))
            channel.save()
            self.stdout.write(f"created channel {channel.name} ({channel.kind})")
        elif action == "list":
            for ch in Channel.objects.all():
                where = describe(ch)
                state = "enabled" if ch.enabled else "disabled"
                self.stdout.write(f"{ch.name}\t{ch.kind}\t{state}\t{mask_string(where)}")
        elif action == "disable":
            if not Channel.objects.filter(name=opts["name"]).update(enabled=False):
                raise CommandError(f"no channel {opts['name']!r}")
            self.stdout.write(f"disabled {opts['name']}")


def describe(ch: Channel) -> str:
    """Where a channel delivers, without its secret."""
    if ch.kind == Channel.KIND_WEBHOOK:
        return ch.config.get("url", "")
    if ch.kind == Channel.KIND_EMAIL:
        return ", ".join(ch.config.get("to", []))
    if ch.kind == Channel.KIND_APPRISE:
        schemes = [u.split("://", 1)[0] for u in apprise_channel.parse_urls(ch.secret)]
        return f"{len(schemes)} Apprise URL(s): " + ", ".join(f"{s}://" for s in schemes)
    return ""
