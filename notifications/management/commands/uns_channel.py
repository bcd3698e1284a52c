"""``manage.py uns_channel``: named channel configurations.

    uns_channel create NAME --kind webhook --url URL [--secret S] [--timeout SECONDS]
    uns_channel create NAME --kind console
    uns_channel list
    uns_channel disable NAME
"""
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError
from django.core.validators import URLValidator

from notifications.models import Channel


class Command(BaseCommand):
    help = "Create, list or disable delivery channels."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True)
        create = sub.add_parser("create")
        create.add_argument("name")
        create.add_argument("--kind", choices=[k for k, _ in Channel.KINDS], required=True)
        create.add_argument("--url")
        create.add_argument("--secret", default="")
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
                    raise CommandError(f"not an http(s) URL: {opts['url']!r}")
                config["url"] = opts["url"]
                if opts["timeout"]:
                    config["timeout"] = opts["timeout"]
            channel = Channel(name=opts["name"], kind=opts["kind"], config=config, secret=opts["secret"])
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
                self.stdout.write(f"{ch.name}\t{ch.kind}\t{state}\t{redact(where)}")
        elif action == "disable":
            if not Channel.objects.filter(name=opts["name"]).update(enabled=False):
                raise CommandError(f"no channel {opts['name']!r}")
            self.stdout.write(f"disabled {opts['name']}")


def redact(url: str) -> str:
    """Hide credentials in a URL's userinfo."""
    if "@" in url and "://" in url:
        scheme, rest = url.split("://", 1)
        return f"{scheme}://***@{rest.split('@', 1)[1]}"
    return url
