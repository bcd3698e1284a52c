"""Fresh, migrated databases for the end-to-end suites, without a migrate per database.

``manage.py migrate`` on an empty database costs 10 to 50 s of a loaded machine, and every
e2e module (and every MCP module) needs a database of its own. The first call in a test process
runs the real ``manage.py migrate`` subprocess once into a template (PostgreSQL: a database
``uns_tpl_<random>``; SQLite: a file in a temporary directory); every fresh database after that
is a copy of it (``CREATE DATABASE ... TEMPLATE``, or a file copy), exactly the state migrate
left. The template is dropped when the test process exits.
"""
import atexit
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import uuid
from pathlib import Path
from urllib.parse import quote

from django.conf import settings

BASE_DIR = Path(settings.BASE_DIR)
MIGRATE_TIMEOUT = 300.0  # seconds

_lock = threading.Lock()
_template: str | None = None  # PostgreSQL database name, or SQLite file path


def pg_admin():
    """An autocommit psycopg connection to the run's server (database ``postgres``)."""
    import psycopg

    db = settings.DATABASES["default"]
    return psycopg.connect(dbname="postgres", user=db.get("USER") or "postgres", password=db.get("PASSWORD") or None,
                           host=db.get("HOST") or "127.0.0.1", port=db.get("PORT") or 5432, autocommit=True)


def pg_url(name: str) -> str:
    """The ``DATABASE_URL`` of database ``name`` on the run's server."""
    db = settings.DATABASES["default"]
    user = quote(db.get("USER") or "postgres", safe="")
    password = f":{quote(db['PASSWORD'], safe='')}" if db.get("PASSWORD") else ""
    return f"postgres://{user}{password}@{db.get('HOST') or '127.0.0.1'}:{db.get('PORT') or 5432}/{name}"


def _migrate(database_url: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("UNS_", "REDIS_URL", "DJANGO_", "PYTEST_"))}
    env.update({"DATABASE_URL": database_url, "DJANGO_SETTINGS_MODULE": "uns_project.settings"})
    done = subprocess.run([sys.executable, "manage.py", "migrate", "--no-input", "-v", "0"], cwd=BASE_DIR, env=env,
                          capture_output=True, text=True, timeout=MIGRATE_TIMEOUT)
    assert done.returncode == 0, f"manage.py migrate failed ({done.returncode}):\n{done.stderr[-3000:]}"


def _ensure_template() -> str:
    global _template
    with _lock:
        if _template is not None:
            return _template
        if settings.IS_POSTGRES:
            name = f"uns_tpl_{uuid.uuid4().hex[:12]}"
            with pg_admin() as conn:
                conn.execute(f'CREATE DATABASE "{name}"')
            atexit.register(_drop_pg, name)
            _migrate(pg_url(name))
            _template = name
        else:
            tmp = tempfile.mkdtemp(prefix="uns-tpl-")
            atexit.register(shutil.rmtree, tmp, True)
            path = Path(tmp) / "uns.sqlite3"
            _migrate(f"sqlite:///{path}")
            _template = str(path)
        return _template


def _drop_pg(name: str) -> None:
    try:
        with pg_admin() as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    except Exception:  # the server may be gone at exit; a leftover template is harmless
        pass


def fresh_database(prefix: str, workdir: Path) -> tuple[str, str | None]:
    """A new migrated database: ``(DATABASE_URL, PostgreSQL name or None)``.

    PostgreSQL: ``<prefix>_<random>`` copied from the template (drop it with ``drop(name)``);
    SQLite: ``workdir/uns.sqlite3`` copied from the template file.
    """
    template = _ensure_template()
    if settings.IS_POSTGRES:
        name = f"{prefix}_{uuid.uuid4().hex[:12]}"
        with _lock, pg_admin() as conn:  # a copy needs the template free of other sessions
            conn.execute(f'CREATE DATABASE "{name}" TEMPLATE "{template}"')
        return pg_url(name), name
    target = Path(workdir) / "uns.sqlite3"
    with _lock:
        shutil.copyfile(template, target)
    return f"sqlite:///{target}", None


def drop(name: str | None) -> None:
    """Drop a PostgreSQL database made by ``fresh_database`` (no-op for None)."""
    if name:
        with pg_admin() as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
