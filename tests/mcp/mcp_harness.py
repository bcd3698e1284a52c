"""Real ``manage.py mcp_server`` processes on a fresh database, driven by the SDK's own client.

Each test module gets its own database (``fresh_database``): a temp SQLite file, or on
PostgreSQL (``settings.IS_POSTGRES``) a ``uns_mcp_<random>`` database created with psycopg and
dropped afterwards. It is a copy of a database ``manage.py migrate`` prepared once per test run
(``e2e.dbtemplate``); ``manage.py uns_token create`` runs as a subprocess, exactly as an operator would. Every wait is bounded.
"""
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import httpx
from django.conf import settings
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from e2e import dbtemplate  # tests/ is on sys.path (tests/conftest.py has no package)

BASE_DIR = Path(settings.BASE_DIR)
PY = sys.executable
STARTUP_SECONDS = 30
EXIT_SECONDS = 15


@dataclass
class McpDatabase:
    """A prepared database: ``env`` for subprocesses and ``tokens[name]`` per principal."""

    env: dict
    tmp: Path
    tokens: dict = field(default_factory=dict)

    def manage(self, *args, env_extra=None, check=True, timeout=60) -> subprocess.CompletedProcess:
        """Run ``manage.py *args`` against this database (``check``: fail, with its stderr, unless it exits 0)."""
        done = subprocess.run([PY, "manage.py", *args], cwd=BASE_DIR, env={**self.env, **(env_extra or {})},
                              capture_output=True, text=True, timeout=timeout)
        if check and done.returncode != 0:
            raise AssertionError(f"manage.py {args[0]} exited {done.returncode}:\n{done.stderr[-3000:]}")
        return done

    def principal(self, name: str, groups: str) -> str:
        """Create a principal in ``groups`` (comma-separated) and return its new token."""
        token = self.manage("uns_token", "create", name, "--groups", groups).stdout.strip()
        self.tokens[name] = token
        return token


def _server_env(database_url: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("UNS_", "PYTEST_"))}
    env.update({
        "DATABASE_URL": database_url,
        "DJANGO_SETTINGS_MODULE": "uns_project.settings",
        "UNS_POLL_INTERVAL": "0.05",
        "UNS_LOG_LEVEL": "INFO",
        "PYTHONUNBUFFERED": "1",
    })
    return env


@contextmanager
def fresh_database():
    """Yield an ``McpDatabase`` on a fresh migrated database (a copy of the run's template,
    ``e2e.dbtemplate``); remove it afterwards."""
    with tempfile.TemporaryDirectory(prefix="uns-mcp-") as tmp:
        tmp = Path(tmp)
        url, name = dbtemplate.fresh_database("uns_mcp", tmp)
        try:
            yield McpDatabase(env=_server_env(url), tmp=tmp)
        finally:
            dbtemplate.drop(name)


# --- stdio -----------------------------------------------------------------------------------
def stdio_params(db: McpDatabase, token: str | None, *args: str, env_extra=None) -> StdioServerParameters:
    """Spawn parameters for ``mcp_server --transport stdio``; the token travels in the env only."""
    env = {**db.env, **(env_extra or {})}
    if token is not None:
        env["UNS_MCP_TOKEN"] = token
    return StdioServerParameters(command=PY, args=["manage.py", "mcp_server", "--transport", "stdio", *args],
                                 env=env, cwd=str(BASE_DIR))


@asynccontextmanager
async def stdio_client_session(db: McpDatabase, token: str | None, *args: str, errlog=None, env_extra=None):
    """A connected SDK ``Client`` whose server is a fresh stdio ``mcp_server`` process."""
    params = stdio_params(db, token, *args, env_extra=env_extra)
    errlog = errlog if errlog is not None else sys.stderr
    async with Client(stdio_client(params, errlog=errlog)) as client:
        yield client


# --- streamable HTTP -------------------------------------------------------------------------
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class HttpServer:
    proc: subprocess.Popen
    url: str
    log: Path

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")

    def stop(self, sig=signal.SIGTERM) -> int:
        """Signal the server and return its exit code (bounded wait)."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            return self.proc.wait(EXIT_SECONDS)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)
            raise AssertionError(f"mcp_server did not exit within {EXIT_SECONDS}s of {sig!r}:\n{self.log_text()}")


def start_http_server(db: McpDatabase, *args: str) -> HttpServer:
    """Start ``mcp_server --transport http`` on a free port; return once it answers HTTP."""
    port = free_port()
    log = db.tmp / f"mcp-http-{port}.log"
    with open(log, "w") as fh:
        proc = subprocess.Popen([PY, "manage.py", "mcp_server", "--transport", "http", "--port", str(port), *args],
                                cwd=BASE_DIR, env=db.env, stdin=subprocess.DEVNULL, stdout=fh, stderr=subprocess.STDOUT)
    server = HttpServer(proc, f"http://127.0.0.1:{port}/mcp", log)
    deadline = time.monotonic() + STARTUP_SECONDS
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"mcp_server exited with {proc.returncode}:\n{server.log_text()}")
        try:
            if httpx.post(server.url, json={}, timeout=2).status_code == 401:
                return server
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    server.stop(signal.SIGKILL)
    raise AssertionError(f"mcp_server did not answer within {STARTUP_SECONDS}s:\n{server.log_text()}")


@asynccontextmanager
async def http_client_session(url: str, token: str | None):
    """A connected SDK ``Client`` over streamable HTTP sending ``Authorization: Bearer <token>``."""
    headers = {"Authorization": f"Bearer {token}"} if token is not None else None
    async with create_mcp_http_client(headers=headers) as http:
        async with Client(streamable_http_client(url, http_client=http)) as client:
            yield client


# --- tool helpers ----------------------------------------------------------------------------
async def call_ok(client, tool: str, **arguments) -> dict:
    """Call ``tool`` and return its structured result, failing on a tool error."""
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, f"{tool} failed: {result.content}"
    return result.structured_content


async def call_error(client, tool: str, **arguments) -> dict:
    """Call ``tool`` expecting a tool error; return its problem body (structured content)."""
    result = await client.call_tool(tool, arguments)
    assert result.is_error, f"{tool} unexpectedly succeeded: {result.structured_content}"
    problem = result.structured_content
    assert problem["type"] == f"urn:uns:problem:{problem['code']}"
    return problem


async def wait_for_status(client, notification_id: str, status: str, timeout: float = 20.0) -> dict:
    """Poll ``get_notification`` until ``status`` (the worker loops run in the server process)."""
    seen = None
    with anyio.move_on_after(timeout):
        while True:
            seen = await call_ok(client, "get_notification", notification_id=notification_id, include_timeline=False)
            if seen["status"] == status:
                return seen
            await anyio.sleep(0.05)
    raise AssertionError(f"{notification_id} never reached {status} within {timeout}s; last seen {seen}")
