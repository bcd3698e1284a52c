"""Real UNS processes on 127.0.0.1 for the end-to-end tests.

``Stack`` owns one fresh database (a temp SQLite file, or ``uns_e2e_<random>`` on PostgreSQL
when the test run is on PostgreSQL), prepares it with ``manage.py migrate``, ``uns_token
create`` and ``uns_channel create`` subprocesses, and starts ``manage.py uns_serve`` (and
``runworker``) subprocesses against it. ``wait_for`` polls with a bounded deadline: the tests
never assert after a bare sleep.
"""
import json
import os
import signal
import socket
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from urllib.parse import parse_qsl, unquote, urlsplit

import httpx
import pytest
from django.conf import settings

from local_redis import answering_redis_url
from notifications.redaction import mask_string

from . import dbtemplate

BASE_DIR = Path(settings.BASE_DIR)
DEADLINE = 20.0  # seconds any awaited state may take
POLL = 0.05
COMMAND_TIMEOUT = 120.0

# Small, fast retries: three attempts 50 ms apart (no jitter) before the DLQ.
FAST_BACKOFF = {"base_seconds": 0.05, "factor": 1.0, "cap_seconds": 0.05, "jitter": 0.0}


def wait_for(probe, what: str, timeout: float = DEADLINE, interval: float = POLL):
    """Call ``probe()`` until it returns something truthy (returned) or ``timeout`` passes."""
    deadline = time.monotonic() + timeout
    last = None
    while True:
        last = probe()
        if last:
            return last
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}; last: {last!r}")
        time.sleep(interval)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def policy_content() -> dict:
    """The bootstrap policy: built-in defaults (so it follows the schema) with fast retries."""
    from policies.content import BOOTSTRAP_CONTENT, BUILTIN_DEFAULTS

    return {
        "schema_version": BOOTSTRAP_CONTENT["schema_version"],
        "description": "e2e: fast retries",
        "defaults": {**BUILTIN_DEFAULTS, "max_attempts": 3, "backoff": FAST_BACKOFF},
        "rules": [],
    }


class LogSweep:
    """Every channel secret a stack was given and every log its processes wrote in this test
    process, for the end-of-session check that no log carries one (run by
    ``tests/e2e/conftest.py``)."""

    def __init__(self):
        self.secrets: set[str] = set()
        self.logs: list[Path] = []
        self.outputs: list[str] = []

    def add_channel(self, url: str, secret: str) -> None:
        """``secret`` and the credentials ``url`` carries: its password and the values of its
        secret-named query parameters (those ``mask_string`` would mask)."""
        found = {secret}
        parts = urlsplit(url)
        if parts.password:
            found |= {parts.password, unquote(parts.password)}
        for name, value in parse_qsl(parts.query):
            if mask_string(f"?{name}=x") != f"?{name}=x":
                found.add(value)
        self.secrets |= {s for s in found if len(s) >= 6}  # shorter ones would match ordinary text

    def leaks(self) -> list[str]:
        """``"<where>: <secret prefix>..."`` for every secret found in a log or command output."""
        texts = [(str(p), p.read_text(errors="replace")) for p in self.logs if p.exists()]
        texts += [(f"command output {i}", out) for i, out in enumerate(self.outputs)]
        return [f"{where}: {secret[:4]}..." for where, text in texts for secret in sorted(self.secrets)
                if secret in text]


LOG_SWEEP = LogSweep()


class Process:
    """A long-running ``manage.py`` subprocess with its output in a log file."""

    def __init__(self, name: str, args: list[str], env: dict, log: Path):
        self.name, self.log = name, log
        LOG_SWEEP.logs.append(log)
        self._out = open(log, "wb")
        self.popen = subprocess.Popen([sys.executable, "manage.py", *args], cwd=BASE_DIR, env=env,
                                      stdout=self._out, stderr=subprocess.STDOUT)

    def output(self) -> str:
        if not self._out.closed:
            self._out.flush()
        return self.log.read_text(errors="replace")

    def running(self) -> bool:
        return self.popen.poll() is None

    def terminate(self, timeout: float = DEADLINE) -> int:
        """SIGTERM, then wait for the exit (killed, and the test failed, if it does not come)."""
        if self.running():
            self.popen.send_signal(signal.SIGTERM)
        try:
            rc = self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            self.popen.kill()
            self.popen.wait()
            raise AssertionError(f"{self.name} ignored SIGTERM for {timeout}s:\n{self.output()[-3000:]}")
        finally:
            self._out.close()
        return rc


class Stack:
    """One fresh database plus the processes that serve it."""

    def __init__(self, workdir: Path, receiver_url: str, *, secret: str):
        self.workdir = workdir
        self.receiver_url = receiver_url
        self.secret = secret
        LOG_SWEEP.add_channel(receiver_url, secret)
        self.processes: list[Process] = []
        self.tokens: dict[str, str] = {}
        self.commands_output: list[str] = []  # stdout + stderr of every ``manage`` call
        self.base_url = None
        self._pg_name = None
        self.migrated = False  # set by _create_database when the copy is already migrated
        self.database_url = self._create_database()
        policy = workdir / "policy.json"
        policy.write_text(json.dumps(policy_content()))
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("UNS_", "REDIS_URL", "DJANGO_"))}
        env.update({
            "DJANGO_SETTINGS_MODULE": "uns_project.settings",
            "DATABASE_URL": self.database_url,
            "UNS_POLL_INTERVAL": "0.05",
            "UNS_BOOTSTRAP_POLICY_FILE": str(policy),
            "UNS_WEBHOOK_TIMEOUT": "5",
            "PYTHONUNBUFFERED": "1",
        })
        self.env = env

    # -- database ---------------------------------------------------------------------------
    def _create_database(self) -> str:
        """A fresh database already migrated (a copy of this run's template, see dbtemplate)."""
        url, self._pg_name = dbtemplate.fresh_database("uns_e2e", self.workdir)
        self.migrated = True
        return url

    def drop_database(self) -> None:
        dbtemplate.drop(self._pg_name)
        self._pg_name = None

    # -- one-shot commands --------------------------------------------------------------------
    def manage(self, *args: str, env: dict | None = None, input: str | None = None) -> str:
        """Run ``manage.py *args`` to completion (``input``: its standard input); its stdout.
        Asserts exit 0. The combined output of every call is kept in ``commands_output``."""
        done = subprocess.run([sys.executable, "manage.py", *args], cwd=BASE_DIR, env=env or self.env, input=input,
                              capture_output=True, text=True, timeout=COMMAND_TIMEOUT)
        self.commands_output.append(done.stdout + done.stderr)
        LOG_SWEEP.outputs.append(done.stdout + done.stderr)
        assert done.returncode == 0, f"manage.py {' '.join(args)} failed ({done.returncode}):\n{done.stderr[-3000:]}"
        return done.stdout

    def prepare(self, principals: dict[str, str], channel: str) -> None:
        """migrate, then the tokens (``{name: groups}``) and the webhook channel, side by side."""
        if not self.migrated:
            self.manage("migrate", "--no-input", "-v", "0")
        jobs = {name: ("uns_token", "--skip-checks", "create", name, "--groups", groups)
                for name, groups in principals.items()}
        url_file = Path(self.workdir) / f"{channel}.url"  # a URL with credentials never on argv
        url_file.write_text(self.receiver_url + "\n")
        url_file.chmod(0o600)
        jobs[None] = ("uns_channel", "--skip-checks", "create", channel, "--kind", "webhook", "--url-file",
                      str(url_file), "--secret-stdin", "--timeout", "5")
        inputs = {None: self.secret + "\n"}  # never on argv
        with ThreadPoolExecutor(len(jobs)) as pool:
            results = dict(zip(jobs, pool.map(lambda job: self.manage(*jobs[job], input=inputs.get(job)), jobs)))
        for name in principals:
            token = results[name].strip()
            assert token and " " not in token, results[name]
            self.tokens[name] = token

    # -- long-running processes ---------------------------------------------------------------
    def start(self, name: str, *args: str, **env) -> Process:
        proc = Process(name, list(args), {**self.env, **env}, self.workdir / f"{name}.log")
        self.processes.append(proc)
        return proc

    def serve(self, **env) -> Process:
        port = free_port()
        server = self.start("uns_serve", "uns_serve", "--host", "127.0.0.1", "--port", str(port), **env)
        self.base_url = f"http://127.0.0.1:{port}"

        def healthy():
            if not server.running():
                raise AssertionError(f"uns_serve exited ({server.popen.returncode}):\n{server.output()[-3000:]}")
            try:
                return httpx.get(f"{self.base_url}/healthz", timeout=1).json() == {"status": "ok"}
            except httpx.HTTPError:
                return False

        wait_for(healthy, "uns_serve /healthz", timeout=60)
        return server

    def client(self, principal: str | None) -> httpx.Client:
        headers = {"Authorization": f"Bearer {self.tokens[principal]}"} if principal else {}
        return httpx.Client(base_url=self.base_url, headers=headers, timeout=10)

    def logs(self) -> str:
        return "\n".join(f"----- {p.name} -----\n{p.output()[-4000:]}" for p in self.processes)

    def detail(self, nid: str, principal: str) -> dict:
        """``GET /api/v1/notifications/{nid}`` as ``principal``; asserts 200."""
        with self.client(principal) as client:
            response = client.get(f"/api/v1/notifications/{nid}")
        assert response.status_code == 200, response.text
        return response.json()

    def wait_state(self, nid: str, what: str, predicate, principal: str) -> dict:
        """Poll the notification's detail until ``predicate(detail)`` holds (bounded by
        ``wait_for``); on timeout the assertion carries the processes' logs."""
        def probe():
            d = self.detail(nid, principal)
            return d if predicate(d) else None

        try:
            return wait_for(probe, f"{nid} {what}")
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n{self.logs()}") from None

    def close(self) -> dict[str, int]:
        """Terminate every process still running (SIGTERM) and drop the database; exit codes."""
        codes = {}
        try:
            for proc in reversed(self.processes):
                if proc.running():
                    codes[proc.name] = proc.terminate()
        finally:
            self.drop_database()
        return codes


def redis_url(tmp_path_factory):
    """``UNS_TEST_REDIS_URL`` (scripts/test.sh), else the usual 127.0.0.1:6379 if it answers,
    else a redis-server of our own on a free port. Yields the URL and the process we started."""
    url = answering_redis_url()
    if url:
        return url, None
    import redis

    port = free_port()
    log = open(tmp_path_factory.mktemp("redis") / "redis.log", "wb")
    try:
        server = subprocess.Popen(["redis-server", "--bind", "127.0.0.1", "--port", str(port), "--save", "",
                                   "--appendonly", "no"], stdout=log, stderr=subprocess.STDOUT)
    except FileNotFoundError:
        pytest.fail("Redis is needed for the scaled WebSocket test: run scripts/services.sh redis")
    client = redis.Redis(host="127.0.0.1", port=port, socket_timeout=1)

    def up():
        try:
            return client.ping()
        except redis.RedisError:
            return False

    wait_for(up, f"redis-server on {port}")
    return f"redis://127.0.0.1:{port}/0", server


class Daphne(Process):
    """A daphne process serving ``uns_project.asgi:application`` (scaled mode: no worker)."""

    def __init__(self, name: str, port: int, env: dict, log: Path):
        self.name, self.log, self.port = name, log, port
        LOG_SWEEP.logs.append(log)
        self._out = open(log, "wb")
        daphne = Path(sys.executable).parent / "daphne"
        self.popen = subprocess.Popen([str(daphne), "-b", "127.0.0.1", "-p", str(port), "uns_project.asgi:application"],
                                      cwd=BASE_DIR, env=env, stdout=self._out, stderr=subprocess.STDOUT)

    @property
    def http(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def ws(self) -> str:
        return f"ws://127.0.0.1:{self.port}"


def flush_redis_prefix(url: str, prefix: str) -> None:
    """Delete this run's channel-layer keys (``prefix*``) from a possibly shared Redis."""
    import redis

    client = redis.Redis.from_url(url)
    for key in client.scan_iter(f"{prefix}*"):
        client.delete(key)
