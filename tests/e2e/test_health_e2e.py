"""A real ``uns_serve``: ``/readyz`` answers 200 with the embedded worker loops running,
and on PostgreSQL 503 naming the database while the database refuses connections, then 200 again
once it accepts them; ``/healthz`` answers 200 throughout. The server runs with
``UNS_LOG_FORMAT=json``: every line it writes (uvicorn's included) is one JSON object.

The outage: ``ALTER DATABASE ... ALLOW_CONNECTIONS false`` plus terminating its sessions, on this
stack's own database (a copy of the run's template), so no other test's database is touched and
no server of our own has to be started."""
import json

import httpx
import pytest
from django.conf import settings

from . import dbtemplate
from .stack import Stack, wait_for

pytestmark = pytest.mark.e2e


def readyz(base_url: str):
    try:
        response = httpx.get(f"{base_url}/readyz", timeout=10)
    except httpx.HTTPError:
        return None
    return response.status_code, response.json()


def allow_connections(name: str, allowed: bool) -> None:
    with dbtemplate.pg_admin() as conn:
        conn.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS {str(allowed).lower()}')
        if not allowed:
            conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s", [name])


def test_readyz_follows_the_database_and_the_embedded_worker(tmp_path):
    stack = Stack(tmp_path, "http://127.0.0.1:9/unused", secret="health-secret")
    try:
        # A short pool timeout: a probe while the database refuses connections answers within 2 s.
        server = stack.serve(UNS_EMBEDDED_WORKER="true", UNS_LOG_FORMAT="json", UNS_DB_POOL_TIMEOUT="2",
                             UNS_CALLBACK_URL="")
        status, body = readyz(stack.base_url)
        assert status == 200, body
        assert body["checks"]["worker"] == {"ok": True, "embedded": True,
                                            "loops": {"dispatch": True, "timeout": True, "callback": True}}

        if settings.IS_POSTGRES:
            name = stack._pg_name
            allow_connections(name, False)
            try:
                status, body = wait_for(lambda: (r := readyz(stack.base_url)) and r[0] == 503 and r, "/readyz 503")
                assert "database" in body["failed"], body
                assert body["checks"]["database"]["ok"] is False
                assert httpx.get(f"{stack.base_url}/healthz", timeout=10).json() == {"status": "ok"}
            finally:
                allow_connections(name, True)
            status, body = wait_for(lambda: (r := readyz(stack.base_url)) and r[0] == 200 and r,
                                    "/readyz 200 again", timeout=60)
            assert body["status"] == "ok"
        code = stack.close()["uns_serve"]
        output = server.output()
    finally:
        stack.close()
    assert code == 0, output[-3000:]
    parsed = [json.loads(line) for line in output.splitlines() if line.strip()]  # every line a JSON object
    loggers = {entry["logger"] for entry in parsed}
    assert {"uvicorn.error", "uvicorn.access", "uns.lifespan"} <= loggers, loggers
    assert all({"time", "level", "logger", "message"} <= set(entry) for entry in parsed)
