"""What a management command imports before it runs: the servers (Twisted, Daphne), Django REST
framework's serializers, the API and the runtime load only where they are used (the URLconf, the
ASGI application, the command that needs them), never at start-up. Asserted on ``sys.modules``
of a fresh process, not on a time."""
import json
import os
import subprocess
import sys
from pathlib import Path

from django.apps import apps
from django.core.management import get_commands

ROOT = Path(__file__).resolve().parents[2]

# Run a command with Django's own entry point, then print the names of the loaded modules.
PROBE = """
import contextlib, io, json, sys
from django.core.management import execute_from_command_line
with contextlib.redirect_stdout(io.StringIO()):
    execute_from_command_line(["manage.py", *sys.argv[1:]])
{after}
print(json.dumps(sorted(sys.modules)))
"""

#: Module prefixes no command loads at start-up.
NOT_AT_START_UP = (
    "twisted", "autobahn", "daphne.server", "rest_framework.serializers", "rest_framework.parsers",
    "knox.auth", "httpx", "notifications.api", "notifications.runtime", "notifications.admin",
    "policies.admin", "uns_project.urls", "uns_project.asgi",
)


def loaded_modules(*argv: str, after: str = "") -> set[str]:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "uns_project.settings"}
    out = subprocess.run([sys.executable, "-c", PROBE.format(after=after), *argv], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=120, check=True).stdout
    return set(json.loads(out.splitlines()[-1]))


def test_help_loads_no_server_no_api_and_no_runtime():
    modules = loaded_modules("help")
    assert "django.core.management" in modules  # the probe ran the command
    assert sorted(m for m in modules if m.startswith(NOT_AT_START_UP)) == []


def test_the_admin_check_still_discovers_every_admin_module():
    after = ("from django.contrib import admin\nfrom notifications.models import Channel\n"
             "from policies.models import Policy\n"
             "assert admin.site.is_registered(Channel) and admin.site.is_registered(Policy)")
    modules = loaded_modules("check", "--tag", "admin", after=after)
    assert {"notifications.admin", "policies.admin"} <= modules


def test_runserver_is_daphnes_and_daphne_is_listed_before_staticfiles():
    labels = [config.label for config in apps.get_app_configs()]
    assert labels.index("daphne") < labels.index("staticfiles")
    assert get_commands()["runserver"] == "daphne"
