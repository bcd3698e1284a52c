"""``manage.py uns_user``: people who log in to the console.

    uns_user create NAME --groups operator,responder [--password-stdin]
    uns_user list

``create`` makes the user NAME (or updates an existing one), puts it in the groups (producer,
responder, operator, policy_admin, console) and, with ``--password-stdin``, sets the password
read from the first line of standard input (never from the command line, where ``ps`` and shell
history would show it). Without it the password is prompted for when a terminal is attached.
The rule is ``notifications.management.secret_input``'s, shared with ``uns_channel`` and
``mcp_server``.
"""
from django.contrib.auth import get_user_model, password_validation
from django.contrib.auth.models import Group
from django.core.exceptions import ValidationError
from django.core.management.base import CommandError

from notifications.management.base import OperationalCommand
from notifications.management.secret_input import RefuseOnArgv, read_secret


class Command(OperationalCommand):
    help = "Create or list console users (people who log in with a password)."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True)
        create = sub.add_parser("create", help="create or update a user", allow_abbrev=False)
        create.add_argument("name")
        create.add_argument("--groups", default="console",
                            help="comma-separated groups (producer, responder, operator, policy_admin, console)")
        create.add_argument("--password-stdin", action="store_true", help="read the password from standard input")
        create.add_argument("--password", action=RefuseOnArgv, instead="--password-stdin")
        sub.add_parser("list", help="list users and their groups")

    def handle(self, *args, action, **opts):
        User = get_user_model()
        if action == "list":
            for user in User.objects.order_by("username").prefetch_related("groups"):
                groups = ",".join(sorted(g.name for g in user.groups.all()))
                state = "active" if user.is_active else "inactive"
                self.stdout.write(f"{user.username}\t{state}\t{groups}")
            return
        names = [g.strip() for g in opts["groups"].split(",") if g.strip()]
        groups = list(Group.objects.filter(name__in=names))
        missing = sorted(set(names) - {g.name for g in groups})
        if missing:
            known = ", ".join(Group.objects.order_by("name").values_list("name", flat=True))
            raise CommandError(f"unknown group(s): {', '.join(missing)} (known: {known})")
        password = self._password(opts["password_stdin"])
        user = User.objects.filter(username=opts["name"]).first() or User(username=opts["name"])
        try:
            password_validation.validate_password(password, user)
        except ValidationError as exc:
            raise CommandError(" ".join(exc.messages))
        created = user.pk is None
        user.set_password(password)
        user.save()
        user.groups.add(*groups)
        verb = "created" if created else "updated"
        self.stdout.write(f"{verb} user {user.username} (groups: {', '.join(sorted(g.name for g in user.groups.all()))})")

    def _password(self, from_stdin: bool) -> str:
        return read_secret(what="password", stdin=from_stdin, prompt=True, confirm=True,
                           hint="give --password-stdin (or run on a terminal to be prompted)")
