"""Helpers for the worker stop and outage end-to-end tests (beside ``stack.py``).

- ``SlowReceiver``: a threaded local HTTP webhook receiver that answers 200 after ``delay``
  seconds, or holds requests while ``hang`` is set; it records every request's notification id
  and when it answered.
- ``ScriptedReceiver``: a local HTTP webhook receiver that gives scripted answers (status and
  headers, e.g. ``429`` with ``Retry-After``) to the first requests, then 200; it records when
  each request arrived and when it was answered (wall clock, epoch seconds).
- ``Rows``: reads ``uns_notifications`` / ``uns_events`` of a stack's database directly (SQLite
  file or PostgreSQL), cheap enough to poll.
- ``submit(stack, n, channel)``: accepts ``n`` notifications through the runtime in one
  ``manage.py shell`` subprocess; returns their ids.
- ``ThrowawayPostgres`` / ``ThrowawayRedis``: servers of our own on free ports that a test can
  stop and start again (fault injection by stopping real processes).
"""
import json
import os
import shutil
import sqlite3
import subprocess
import tempfile
import threading
import time
from collections import Counter
from glob import glob
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from .stack import Stack, free_port, wait_for


class SlowReceiver:
    """Answers each POST with 200 after ``delay`` seconds (``hang``: not until ``hang`` is
    cleared or ``close()``). ``received`` / ``answered``: notification ids in arrival / answer
    order."""

    def __init__(self, delay: float = 0.0):
        self.delay = delay
        self.hang = threading.Event()
        self._closing = threading.Event()
        self.lock = threading.Lock()
        self.received: list[str] = []
        self.answered: list[str] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))))
                with receiver.lock:
                    receiver.received.append(body["id"])
                while receiver.hang.is_set() and not receiver._closing.is_set():
                    time.sleep(0.05)
                if receiver.delay:
                    time.sleep(receiver.delay)  # the slow provider being simulated
                try:
                    self.send_response(200)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", "2")
                    self.end_headers()
                    self.wfile.write(b"{}")
                except OSError:
                    return  # the worker gave up on this request (its process exited)
                with receiver.lock:
                    receiver.answered.append(body["id"])

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def counts(self) -> Counter:
        """Requests per notification id."""
        with self.lock:
            return Counter(self.received)

    def answered_ids(self) -> set[str]:
        with self.lock:
            return set(self.answered)

    def close(self) -> None:
        self._closing.set()
        self.server.shutdown()
        self.server.server_close()


class ScriptedReceiver:
    """Answers the ``n``-th POST with ``script[n]()`` (``(status, headers)``, called when that
    request arrives, so an HTTP-date can be computed then), and every POST after the script
    with 200. ``requests``: one dict per POST, in arrival order: ``path``, ``headers``, ``id``
    (the notification), ``answer`` (``{"status", "headers"}`` sent), ``arrived`` and ``answered``
    (``time.time()``; ``answered`` is taken just before the answer is written, so the sender
    reads it later)."""

    def __init__(self, script):
        self.script = list(script)
        self.lock = threading.Lock()
        self.requests: list[dict] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                arrived = time.time()
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))))
                with receiver.lock:
                    n = len(receiver.requests)
                    seen = {"path": self.path, "headers": dict(self.headers), "id": body["id"], "arrived": arrived}
                    receiver.requests.append(seen)
                status, headers = receiver.script[n]() if n < len(receiver.script) else (200, {})
                seen["answer"] = {"status": status, "headers": headers}
                seen["answered"] = time.time()
                self.send_response(status)
                for name, value in {**headers, "content-length": "0"}.items():
                    self.send_header(name, value)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def seen(self) -> list[dict]:
        with self.lock:
            return [dict(r) for r in self.requests]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class Rows:
    """Direct reads of a stack's database (``database_url``: ``sqlite:///path`` or
    ``postgres://...``)."""

    def __init__(self, database_url: str):
        self.url = database_url

    def _query(self, sql: str, params=()):
        if self.url.startswith("sqlite:///"):
            conn = sqlite3.connect(self.url[len("sqlite:///"):], timeout=20)
            try:
                return conn.execute(sql.replace("%s", "?"), params).fetchall()
            finally:
                conn.close()
        import psycopg

        with psycopg.connect(self.url.replace("postgres://", "postgresql://", 1), connect_timeout=5) as conn:
            return conn.execute(sql, params).fetchall()

    def notifications(self) -> dict[str, dict]:
        """``{id: {status, lease_token, lease_until, attempts}}``."""
        rows = self._query("SELECT id, status, lease_token, lease_until, attempts FROM uns_notifications")
        return {r[0]: {"status": r[1], "lease_token": r[2], "lease_until": r[3], "attempts": r[4]} for r in rows}

    def statuses(self) -> Counter:
        return Counter(r["status"] for r in self.notifications().values())

    def attempts_started(self, nid: str) -> list[tuple[int, bool]]:
        """``(attempt, recovery_may_repeat_provider_effect)`` of each ATTEMPT_STARTED, in order."""
        rows = self._query("SELECT payload FROM uns_events WHERE notification_id = %s AND kind = %s ORDER BY at, id",
                           (nid, "ATTEMPT_STARTED"))
        payloads = [p if isinstance(p, dict) else json.loads(p) for (p,) in rows]
        return [(p["attempt"], p["recovery_may_repeat_provider_effect"]) for p in payloads]


def submit(stack, n: int, channel: str, source: str = "e2e-worker") -> list[str]:
    """Accept ``n`` notifications for ``channel`` (distinct titles) in one subprocess."""
    code = ("import json; from notifications.runtime import Runtime; rt = Runtime(callback=None); "
            f"print(json.dumps([rt.accept('e2e-producer', {{'source': {source!r}, 'title': f't{{i}}', "
            f"'channels': [{channel!r}]}}).notification.id for i in range({n})]))")
    out = stack.manage("shell", "-c", code, env={**stack.env, "UNS_EVENT_PUBLISHER": ""})
    ids = json.loads(out.strip().splitlines()[-1])
    assert len(ids) == n
    return ids


def _port_open(port: int) -> bool:
    import socket

    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


class ThrowawayPostgres:
    """A PostgreSQL cluster in a temp dir on a free port (``fsync=off``), run as the
    ``postgres`` user when we are root (initdb refuses root). ``stop()`` is ``pg_ctl stop -m
    fast``; ``start()`` starts it again on the same port; ``url`` names database ``uns``."""

    def __init__(self):
        bins = sorted(glob("/usr/lib/postgresql/*/bin"))
        if not bins:
            raise RuntimeError("PostgreSQL is not installed (scripts/services.sh installs it)")
        self.bin = Path(bins[-1])
        self.port = free_port()
        self.dir = Path(tempfile.mkdtemp(prefix="uns-pg-"))
        self.data = self.dir / "data"
        self._as_postgres = os.geteuid() == 0
        if self._as_postgres:
            shutil.chown(self.dir, "postgres")
        self._run("initdb", "--no-sync", "-A", "trust", "-U", "postgres", "-D", str(self.data))
        self.start()
        import psycopg

        with psycopg.connect(f"postgresql://postgres@127.0.0.1:{self.port}/postgres", autocommit=True) as conn:
            conn.execute('CREATE DATABASE "uns"')
        self.url = f"postgres://postgres@127.0.0.1:{self.port}/uns"

    def _run(self, tool: str, *args: str) -> None:
        cmd = [str(self.bin / tool), *args]
        if self._as_postgres:
            cmd = ["runuser", "-u", "postgres", "--", *cmd]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, f"{tool} failed ({done.returncode}): {done.stdout}{done.stderr}"

    def start(self) -> None:
        self._run("pg_ctl", "-s", "-w", "-D", str(self.data), "-l", str(self.dir / "log"), "-o",
                  f"-c listen_addresses=127.0.0.1 -c port={self.port} -c fsync=off "
                  f"-c unix_socket_directories={self.dir} -c max_connections=100", "start")

    def stop(self) -> None:
        self._run("pg_ctl", "-s", "-w", "-D", str(self.data), "-m", "fast", "stop")
        wait_for(lambda: not _port_open(self.port), f"PostgreSQL to leave port {self.port}")

    def close(self) -> None:
        try:
            if (self.data / "postmaster.pid").exists():
                self._run("pg_ctl", "-s", "-w", "-D", str(self.data), "-m", "immediate", "stop")
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)


class ThrowawayRedis:
    """A ``redis-server`` (no persistence) on a free port; ``stop()`` kills it, ``start()``
    starts a new one on the same port."""

    def __init__(self, log: Path):
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.log = log
        self.proc = None
        self.start()

    def start(self) -> None:
        out = open(self.log, "ab")
        self.proc = subprocess.Popen(["redis-server", "--bind", "127.0.0.1", "--port", str(self.port), "--save", "",
                                      "--appendonly", "no"], stdout=out, stderr=subprocess.STDOUT)
        out.close()
        wait_for(lambda: _port_open(self.port), f"redis-server on {self.port}")

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait(30)
        wait_for(lambda: not _port_open(self.port), f"Redis to leave port {self.port}")

    def close(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(30)


class OwnDatabaseStack(Stack):
    """A ``Stack`` on a throwaway PostgreSQL (``ThrowawayPostgres.url``) instead of the run's
    database; the test migrates it (``prepare``) and the whole cluster goes away with the test."""

    def __init__(self, workdir, receiver_url, *, secret, database_url):
        self._own_url = database_url
        super().__init__(workdir, receiver_url, secret=secret)

    def _create_database(self) -> str:
        return self._own_url

    def drop_database(self) -> None:
        pass
