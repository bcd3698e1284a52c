"""The base of UNS's short operational commands (``uns_token``, ``uns_policy``, ``uns_channel``,
``uns_maintain``, ``uns_user``, ``uns_ui_schema``)."""
from django.core.management.base import BaseCommand


class OperationalCommand(BaseCommand):
    """A command scripts call many times: it skips Django's system checks (about 1.5 s a call;
    they belong to the serving commands, ``migrate`` and ``manage.py check``, which CI runs with
    ``--deploy``). ``--skip-checks`` is still accepted, and changes nothing."""

    def execute(self, *args, **options):
        options["skip_checks"] = True
        return super().execute(*args, **options)
