"""A fresh process hydrates the persisted policy by itself: after an activation, a new
``manage.py`` process accepts under the new revision, with nothing restarted or notified. Needs a
database other processes can open (PostgreSQL, or a SQLite test database in a file)."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection

from policies import store
from policies.content import DEFAULT_POLICY_ID
from policyhelpers import content

pytestmark = pytest.mark.django_db(transaction=True)

ROOT = Path(settings.BASE_DIR)
ACCEPT = """
import json
from notifications.runtime import Runtime
res = Runtime(callback=None).accept("proc", {"source": "proc", "title": "from a new process"})
print("RESULT " + json.dumps(res.notification.notification["metadata"]["uns_resolution"]))
"""


def database_url() -> str:
    s = connection.settings_dict
    if connection.vendor == "postgresql":
        auth = s["USER"] + (f":{s['PASSWORD']}" if s.get("PASSWORD") else "")
        return f"postgres://{auth}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}"
    if connection.vendor == "sqlite" and not connection.is_in_memory_db():
        return f"sqlite:///{s['NAME']}"
    pytest.skip("needs PostgreSQL or a file-backed SQLite test database (UNS_SQLITE_TEST_NAME): the test "
                "database lives in this process's memory, where a new process cannot open it")


def manage(*args) -> str:
    env = {**os.environ, "DATABASE_URL": database_url(), "UNS_BOOTSTRAP_POLICY_FILE": ""}
    done = subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_a_new_process_after_activation_resolves_under_the_new_revision(rt):
    url = database_url()  # skips before any work when no other process can see the database
    assert url
    rt.accept("here", {"source": "here", "title": "before"})
    draft = store.create_draft(DEFAULT_POLICY_ID, content(max_attempts=3, delivery_mode="BEST_EFFORT"), actor="admin")
    store.activate(DEFAULT_POLICY_ID, draft.version, actor="admin")

    out = manage("shell", "-c", ACCEPT)
    frozen = json.loads(out.split("RESULT ", 1)[1])
    assert (frozen["revision"], frozen["policy_version"]) == (2, 2)
    assert frozen["effective"]["max_attempts"] == 3 and frozen["effective"]["delivery_mode"] == "BEST_EFFORT"
    assert json.loads(manage("uns_policy", "current", "--json"))["revision"] == 2

    # And the other way round: an activation made by another process is seen here at once.
    draft = store.create_draft(DEFAULT_POLICY_ID, content(max_attempts=4), actor="admin")
    manage("uns_policy", "--actor", "ops", "activate", DEFAULT_POLICY_ID, str(draft.version))
    here = rt.accept("here", {"source": "here", "title": "after"}).notification
    assert here.notification["metadata"]["uns_resolution"]["revision"] == 3
    assert here.notification["metadata"]["uns_resolution"]["effective"]["max_attempts"] == 4
