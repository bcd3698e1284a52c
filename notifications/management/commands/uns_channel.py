"""``manage.py uns_channel``: named channel configurations.

    uns_channel create NAME --kind webhook --url URL [--secret-stdin | --secret-file PATH] [--timeout SECONDS]
    uns_channel create NAME --kind console
    uns_channel list
    uns_channel disable NAME

The signing secret is never taken on the command line (``ps`` and shell history would show
it): ``--secret-stdin`` reads the first line of standard input (a no-echo prompt on a terminal),
``--secret-file`` the first line of a file (``notifications.management.secret_input``, the rule
``uns_user`` and ``mcp_server`` follow too). ``--secret VALUE`` is refused. ``list`` masks URL
credentials with the redaction the logs and ``/ui`` use.
"""
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError
from django.core.validators import URLValidator

from notifications.management.secret_input import RefuseOnArgv, read_secret
from notifications.models import Channel
from notifications.redaction import mask_string


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
                            help="read the webhook signing secret from standard input (first line)")
        create.add_argument("--secret-file", metavar="PATH", help="read the webhook signing secret from a file (first line)")
        create.add_argument("--secret", action=RefuseOnArgv, instead="--secret-stdin or --secret-file PATH")
        create.add_argument("--timeout", type=float, default=None, help="seconds")
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
                    URLValidator(schemes=["http", "https"])(opts["url"])
                except ValidationError:
                    raise CommandError(f"not an http(s) URL: {mask_string(opts['url'])!r}")
                config["url"] = opts["url"]
                if opts["timeout"]:
                    config["timeout"] = opts["timeout"]
            secret = read_secret(what="secret", stdin=opts["secret_stdin"], path=opts["secret_file"], required=False)
            channel = Channel(name=opts["name"], kind=opts["kind"], config=config, secret=secret)
            try:
                channel.full_clean()
            except ValidationError as exc:
                raise CommandError("; ".join(f"{k}: {' '.join(v)}" for k, v in exc.message_dict.items()))
            channel.save()
            self.stdout.write(f"created channel {channel.name} ({channel.kind})")
        elif action == "list":
            for ch in Channel.objects.all():
                where = ch.config.get("url", "") if ch.kind == Channel.KIND_WEBHOOK else ""
                state = "enabled" if ch.enabled else "disabled"
                self.stdout.write(f"{ch.name}\t{ch.kind}\t{state}\t{mask_string(where)}")
        elif action == "disable":
            if not Channel.objects.filter(name=opts["name"]).update(enabled=False):
                raise CommandError(f"no channel {opts['name']!r}")
            self.stdout.write(f"disabled {opts['name']}")

