"""``manage.py uns_token``: API tokens for machine principals (hashed by django-rest-knox).

    uns_token create NAME [--groups producer,responder,operator] [--expires-days N]
    uns_token list
    uns_token revoke NAME

``create`` makes (or reuses) the user NAME, puts it in the groups and prints a new token once;
only its hash is stored.
"""
from datetime import timedelta

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management.base import CommandError
from knox.models import AuthToken

from notifications.management.base import OperationalCommand


class Command(OperationalCommand):
    help = "Create, list or revoke API tokens for machine principals."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True)
        create = sub.add_parser("create", help="create a token (printed once)")
        create.add_argument("name")
        create.add_argument("--groups", default="producer", help="comma-separated groups (producer, responder, "
                            "operator, policy_admin, console)")
        create.add_argument("--expires-days", type=float, default=None)
        sub.add_parser("list", help="list principals with tokens")
        revoke = sub.add_parser("revoke", help="revoke every token of a principal")
        revoke.add_argument("name")

    def handle(self, *args, action, **opts):
        User = get_user_model()
        if action == "create":
            names = [g.strip() for g in opts["groups"].split(",") if g.strip()]
            groups = list(Group.objects.filter(name__in=names))
            missing = sorted(set(names) - {g.name for g in groups})
            if missing:
                known = ", ".join(Group.objects.order_by("name").values_list("name", flat=True))
                raise CommandError(f"unknown group(s): {', '.join(missing)} (known: {known})")
            user, created = User.objects.get_or_create(username=opts["name"])
            if created:
                user.set_unusable_password()
                user.save()
            user.groups.add(*groups)
            ttl = timedelta(days=opts["expires_days"]) if opts["expires_days"] else None
            _, token = AuthToken.objects.create(user=user, expiry=ttl)
            self.stdout.write(token)
        elif action == "list":
            for user in User.objects.filter(auth_token_set__isnull=False).distinct().order_by("username"):
                groups = ",".join(user.groups.order_by("name").values_list("name", flat=True))
                self.stdout.write(f"{user.username}\t{user.auth_token_set.count()} token(s)\t{groups}")
        elif action == "revoke":
            count, _ = AuthToken.objects.filter(user__username=opts["name"]).delete()
            if not count:
                raise CommandError(f"no tokens for {opts['name']!r}")
            self.stdout.write(f"revoked {count} token(s)")
