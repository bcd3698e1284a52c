"""Shared plumbing for the UNS benchmarks: a throwaway database, Django setup, percentiles.

``throwaway_database(kind)`` creates a fresh database (a temporary SQLite file, or a new
PostgreSQL database on the server named by ``--pg-url`` / ``DATABASE_URL``), points Django at it,
runs the migrations programmatically and drops it on exit. The database named in the URL is
only used to connect; nothing is written to it.
"""
import argparse
import contextlib
import math
import os
import platform
import shutil
import sys
import tempfile
import time
import uuid
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_PG_URL = "postgres://postgres@127.0.0.1:5432/postgres"


def base_parser(description: str) -> argparse.ArgumentParser:
    env_url = os.environ.get("DATABASE_URL", "")
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--database", choices=("sqlite", "postgres"),
                        default="postgres" if env_url.startswith("postgres") else "sqlite",
                        help="sqlite (a temp WAL file) or postgres (a fresh database, dropped afterwards); "
                             "default: postgres when DATABASE_URL names PostgreSQL, else sqlite")
    parser.add_argument("--pg-url", default=env_url if env_url.startswith("postgres") else DEFAULT_PG_URL,
                        help="PostgreSQL server to create the throwaway database on (default: DATABASE_URL "
                             f"or {DEFAULT_PG_URL})")
    parser.add_argument("--synchronous-commit", choices=("on", "off"), default="on",
                        help="PostgreSQL synchronous_commit for the throwaway database (default on; off shows "
                             "how much of the time is WAL flushes at commit)")
    return parser


def _with_dbname(url: str, name: str) -> str:
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, "/" + name, parts.query, parts.fragment))


@contextlib.contextmanager
def throwaway_database(kind: str, pg_url: str = DEFAULT_PG_URL, synchronous_commit: str = "on"):
    """Yield after Django is set up on a fresh, migrated database; remove it afterwards."""
    os.environ["DJANGO_SETTINGS_MODULE"] = "uns_project.settings"
    os.environ.setdefault("UNS_LOG_LEVEL", "WARNING")
    os.environ["UNS_CALLBACK_URL"] = ""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    tmpdir, pg_name, admin_conninfo = None, None, None
    if kind == "sqlite":
        tmpdir = tempfile.mkdtemp(prefix="uns-bench-")
        os.environ["DATABASE_URL"] = f"sqlite:///{tmpdir}/bench.sqlite3"
    else:
        import psycopg

        pg_name = f"uns_bench_{uuid.uuid4().hex[:12]}"
        admin_conninfo = _with_dbname(pg_url, "postgres")
        with psycopg.connect(admin_conninfo, autocommit=True) as admin:
            admin.execute(f'CREATE DATABASE "{pg_name}"')
            if synchronous_commit != "on":
                admin.execute(f'ALTER DATABASE "{pg_name}" SET synchronous_commit = {synchronous_commit}')
        os.environ["DATABASE_URL"] = _with_dbname(pg_url, pg_name)
    try:
        import django
        from django.core.management import call_command

        django.setup()
        call_command("migrate", verbosity=0, interactive=False)
        yield
    finally:
        try:
            from django.db import connections

            connections.close_all()
        except Exception:  # noqa: BLE001 - cleanup must go on
            pass
        if tmpdir:
            shutil.rmtree(tmpdir, ignore_errors=True)
        if pg_name:
            import psycopg

            with psycopg.connect(admin_conninfo, autocommit=True) as admin:
                admin.execute(f'DROP DATABASE IF EXISTS "{pg_name}" WITH (FORCE)')


def environment() -> str:
    """One line describing the machine and the database under test."""
    from django.db import connection

    with connection.cursor() as cur:
        if connection.vendor == "postgresql":
            cur.execute("SHOW server_version")
            db = f"PostgreSQL {cur.fetchone()[0]} (synchronous_commit="
            cur.execute("SHOW synchronous_commit")
            db += f"{cur.fetchone()[0]})"
        else:
            import sqlite3

            cur.execute("PRAGMA journal_mode")
            mode = cur.fetchone()[0]
            cur.execute("PRAGMA synchronous")
            db = f"SQLite {sqlite3.sqlite_version} (journal_mode={mode}, synchronous={cur.fetchone()[0]})"
    return (f"{os.cpu_count()} CPU(s), Python {platform.python_version()} on {platform.system()} "
            f"{platform.release()}, {db}, {loadavg()}")


def loadavg() -> str:
    """The 1/5/15-minute load averages (other work on the machine skews every figure)."""
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f}"


def pct(values, p: float) -> float:
    """The ``p``-th percentile (nearest rank) of ``values``."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    rank = max(1, min(len(ordered), math.ceil(p / 100.0 * len(ordered))))
    return ordered[rank - 1]


def fmt_latency(seconds_list) -> str:
    return f"p50 {pct(seconds_list, 50) * 1000:7.2f} ms  p99 {pct(seconds_list, 99) * 1000:7.2f} ms"


class Stopwatch:
    def __enter__(self):
        self.start = time.perf_counter()
        return self

    def __exit__(self, *exc):
        self.seconds = time.perf_counter() - self.start


def append_results(started, heading: list[str], header: str, rows) -> None:
    """Print a results table and append it to ``bench/results/<UTC date of started>.md``:
    ``heading`` lines (title, command, machine), then the ``header`` row (``| a | b |``), its
    separator, and ``rows`` (tuples of cell texts)."""
    cells = header.count("|") - 1
    lines = heading + [header, "|" + "---|" * cells] + [f"| {' | '.join(r)} |" for r in rows]
    text = "\n".join(lines) + "\n"
    out = ROOT / "bench" / "results" / f"{started:%Y-%m-%d}.md"
    out.parent.mkdir(exist_ok=True)
    with open(out, "a") as f:
        f.write(text + "\n")
    print("\n" + text + f"(appended to {out.relative_to(ROOT)})")
