"""The write-enabled MCP server owns its recovery loops: they start with the server and stop,
gracefully, when it stops (client closing stdin, SIGTERM on either transport); --no-worker
serves the tools without them."""
import signal
import subprocess
import time

import anyio
import pytest
from mcp_harness import (
    BASE_DIR,
    EXIT_SECONDS,
    PY,
    STARTUP_SECONDS,
    call_ok,
    http_client_session,
    start_http_server,
    stdio_client_session,
    wait_for_status,
)

pytestmark = [pytest.mark.e2e]

STARTED = "mcp worker loops started"
STOPPED = "mcp worker loops stopped"


def _wait_for_line(path, text, proc, timeout=STARTUP_SECONDS):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if text in path.read_text(errors="replace"):
            return
        assert proc.poll() is None, f"server exited early ({proc.returncode}):\n{path.read_text()}"
        time.sleep(0.05)
    raise AssertionError(f"{text!r} not logged within {timeout}s:\n{path.read_text()}")


@pytest.mark.anyio
async def test_stdio_loops_stop_when_the_client_closes(mcp_db):
    log = mcp_db.tmp / "stdio-close.log"
    with open(log, "w") as errlog:
        async with stdio_client_session(mcp_db, mcp_db.tokens["agent"], errlog=errlog) as client:
            sent = await call_ok(client, "send_notification", source="lifecycle", title="close")
            await wait_for_status(client, sent["id"], "DELIVERED")
            assert STARTED in log.read_text()
    text = log.read_text()
    assert text.index(STARTED) < text.index(STOPPED) < text.index("uns mcp server stopped")
    for loop in ("dispatch", "timeout", "callback"):
        assert f"worker loop {loop} stopped" in text
    assert "SIGTERM" not in text  # it stopped on stdin EOF, before the client had to signal it


def test_stdio_sigterm_stops_the_loops_and_exits_zero(mcp_db):
    log = mcp_db.tmp / "stdio-sigterm.log"
    env = {**mcp_db.env, "UNS_MCP_TOKEN": mcp_db.tokens["agent"]}
    with open(log, "w") as fh:
        # stdin stays open (a client that never hangs up): only the signal can stop it.
        proc = subprocess.Popen([PY, "manage.py", "mcp_server", "--transport", "stdio"], cwd=BASE_DIR, env=env,
                                stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=fh)
    try:
        _wait_for_line(log, STARTED, proc)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(EXIT_SECONDS) == 0, log.read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.stdin.close()
    text = log.read_text()
    assert "got SIGTERM" in text and STOPPED in text and "uns mcp server stopped" in text


@pytest.mark.anyio
async def test_http_sigterm_stops_the_loops_and_exits_zero(mcp_db):
    server = start_http_server(mcp_db)
    try:
        async with http_client_session(server.url, mcp_db.tokens["agent"]) as client:
            sent = await call_ok(client, "send_notification", source="lifecycle", title="http")
            await wait_for_status(client, sent["id"], "DELIVERED")
    finally:
        code = await anyio.to_thread.run_sync(server.stop)
    text = server.log_text()
    assert code == 0, text
    assert text.index(STARTED) < text.index(STOPPED) < text.index("uns mcp server stopped")


@pytest.mark.anyio
async def test_no_worker_serves_tools_without_loops(mcp_db):
    log = mcp_db.tmp / "no-worker.log"
    with open(log, "w") as errlog:
        async with stdio_client_session(mcp_db, mcp_db.tokens["agent"], "--no-worker", errlog=errlog) as client:
            sent = await call_ok(client, "send_notification", source="lifecycle", title="stays pending")
            await anyio.sleep(1.0)  # many poll intervals (0.05 s) of a loop that would have delivered it
            seen = await call_ok(client, "get_notification", notification_id=sent["id"], include_timeline=False)
    assert seen["status"] == "PENDING"
    assert STARTED not in log.read_text()
