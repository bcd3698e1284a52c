"""Who may call which MCP tool: tokens are verified on both transports (stdio at start and on
every call, HTTP on every request) and each tool checks its capability, failing closed with the
same problem codes the HTTP API uses."""
import os

import httpx
import pytest
from mcp.shared.exceptions import MCPError
from mcp_harness import call_error, call_ok, http_client_session, stdio_client_session, wait_for_status

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "uns-tests", "version": "1"}}}


# --- stdio: the process's one principal ----------------------------------------------------------
def test_stdio_refuses_to_start_without_a_token(mcp_db):
    done = mcp_db.manage("mcp_server", "--transport", "stdio", check=False)
    assert done.returncode == 1
    assert "refusing to start: no API token" in done.stderr
    assert "worker loops started" not in done.stderr


def test_stdio_refuses_to_start_with_a_wrong_token(mcp_db):
    done = mcp_db.manage("mcp_server", "--transport", "stdio", env_extra={"UNS_MCP_TOKEN": "not-a-token"},
                         check=False)
    assert done.returncode == 1
    assert "authentication_failed" in done.stderr and "not-a-token" not in done.stderr


def test_stdio_takes_no_token_on_argv(mcp_db):
    done = mcp_db.manage("mcp_server", "--transport", "stdio", "--token", mcp_db.tokens["agent"], check=False)
    assert done.returncode != 0 and "--token is not accepted" in done.stderr
    assert mcp_db.tokens["agent"] not in done.stderr  # the refusal does not echo it


async def test_stdio_token_file(mcp_db):
    path = mcp_db.tmp / "agent.token"
    path.write_text(mcp_db.tokens["agent"] + "\n")
    os.chmod(path, 0o600)
    async with stdio_client_session(mcp_db, None, "--token-file", str(path)) as client:
        sent = await call_ok(client, "send_notification", source="token-file", title="hello")
        detail = await call_ok(client, "get_notification", notification_id=sent["id"], include_timeline=False)
    assert detail["principal"] == "agent"


async def test_stdio_revoked_token_stops_working_on_the_next_call(mcp_db):
    token = mcp_db.principal("short-lived", "producer")
    async with stdio_client_session(mcp_db, token) as client:
        await call_ok(client, "simulate_policy", source="revocation")
        mcp_db.manage("uns_token", "revoke", "short-lived")
        refused = await call_error(client, "simulate_policy", source="revocation")
    assert (refused["code"], refused["status"]) == ("authentication_failed", 401)


# --- streamable HTTP: the bearer of each request -------------------------------------------------
def test_http_refuses_missing_and_wrong_tokens(http_server, mcp_db):
    for headers in ({}, {"Authorization": "Bearer not-a-token"}, {"Authorization": f"Token {mcp_db.tokens['agent']}"}):
        response = httpx.post(http_server.url, json=INITIALIZE, headers={**MCP_HEADERS, **headers}, timeout=10)
        assert response.status_code == 401, headers
        assert response.headers["WWW-Authenticate"].startswith("Bearer ")
    ok = httpx.post(http_server.url, json=INITIALIZE, timeout=10,
                    headers={**MCP_HEADERS, "Authorization": f"Bearer {mcp_db.tokens['agent']}"})
    assert ok.status_code == 200 and ok.headers["mcp-session-id"]


async def test_http_sdk_client_with_a_wrong_token_cannot_connect(http_server):
    with pytest.raises(ExceptionGroup) as failure:
        async with http_client_session(http_server.url, "not-a-token") as client:
            await client.list_tools()
    assert failure.group_contains(MCPError, depth=None)


def test_http_session_is_bound_to_the_principal_that_opened_it(http_server, mcp_db):
    opened = httpx.post(http_server.url, json=INITIALIZE, timeout=10,
                        headers={**MCP_HEADERS, "Authorization": f"Bearer {mcp_db.tokens['agent']}"})
    session = opened.headers["mcp-session-id"]
    hijack = httpx.post(http_server.url, json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, timeout=10,
                        headers={**MCP_HEADERS, "Authorization": f"Bearer {mcp_db.tokens['producer']}",
                                 "Mcp-Session-Id": session, "Mcp-Protocol-Version": "2025-06-18"})
    assert hijack.status_code == 404


# --- capabilities, on both transports ------------------------------------------------------------
async def test_producer_token_cannot_acknowledge(connect, transport):
    async with connect("producer") as producer:
        sent = await call_ok(producer, "send_notification", source=f"cap-{transport}", title="needs ack",
                             severity="critical")
        await wait_for_status(producer, sent["id"], "DELIVERED")  # producers read what they sent
        for tool in ("acknowledge", "dismiss"):
            refused = await call_error(producer, tool, notification_id=sent["id"])
            assert (refused["code"], refused["status"]) == ("permission_denied", 403)
            assert refused["capabilities"] == ["notifications.respond_notification"]
        refused = await call_error(producer, "list_pending_acks")
        assert refused["code"] == "permission_denied"
        still = await call_ok(producer, "get_notification", notification_id=sent["id"], include_timeline=False)
        assert (still["ack_status"], still["actor"]) == ("PENDING", None)


async def test_producer_sees_only_what_it_sent(connect, transport):
    async with connect("agent") as agent:
        theirs = await call_ok(agent, "send_notification", source=f"own-{transport}", title="agent's")
    async with connect("producer") as producer:
        hidden = await call_error(producer, "get_notification", notification_id=theirs["id"])
        unknown_id = "00000000-0000-0000-0000-000000000000"
        unknown = await call_error(producer, "get_notification", notification_id=unknown_id)
    assert hidden["code"] == "not_found"
    # the same answer as for an id that does not exist: no existence oracle
    assert {**hidden, "detail": "", "notification_id": ""} == {**unknown, "detail": "", "notification_id": ""}
    assert hidden["detail"] == unknown["detail"].replace(unknown_id, theirs["id"])


async def test_console_reader_cannot_send_but_can_read(connect, transport):
    async with connect("agent") as agent:
        sent = await call_ok(agent, "send_notification", source=f"reader-{transport}", title="visible")
    async with connect("reader") as reader:
        refused = await call_error(reader, "send_notification", source="reader", title="nope")
        assert (refused["code"], refused["status"]) == ("permission_denied", 403)
        refused = await call_error(reader, "acknowledge", notification_id=sent["id"])
        assert refused["code"] == "permission_denied"
        seen = await call_ok(reader, "get_notification", notification_id=sent["id"], include_timeline=False)
        assert seen["principal"] == "agent"
        await call_ok(reader, "list_pending_acks")
