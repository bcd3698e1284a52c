"""Every MCP tool declares its capability and fails closed: checked in-process with the SDK's
client (no server process). The tools run through Channels' ``database_sync_to_async``, which
calls ``close_old_connections()``; after earlier tests left a connection open on that thread,
that touches the database, so the module may use it (it writes nothing)."""
import pytest
from django.urls import resolve, reverse
from mcp import Client

from core.capabilities import RESPOND, SEND
from notifications.mcp.auth import HttpIdentity
from notifications.mcp.server import CAPABILITIES, build_server

pytestmark = [pytest.mark.anyio, pytest.mark.django_db]

ARGUMENTS = {
    "send_notification": {"source": "s", "title": "t"},
    "get_notification": {"notification_id": "n"},
    "list_pending_acks": {},
    "acknowledge": {"notification_id": "n"},
    "dismiss": {"notification_id": "n"},
    "simulate_policy": {"source": "s"},
    "request_approval": {"action": "a"},
    "check_approval": {"approval_id": "d"},
    "list_audit": {},
    "silence": {"matchers": [{"name": "source", "op": "=", "value": "db-01"}], "comment": "c",
                "duration_seconds": 3600},
    "list_silences": {},
    "expire_silence": {"silence_id": "s"},
    "who_is_on_call": {"target": "schedule:db"},
}


@pytest.fixture
def server():
    return build_server(HttpIdentity(), with_worker=False)


async def test_every_tool_declares_a_capability(server):
    async with Client(server) as client:
        names = {t.name for t in (await client.list_tools()).tools}
    assert names == set(CAPABILITIES) == set(ARGUMENTS)
    assert CAPABILITIES["send_notification"] == (SEND,)
    assert CAPABILITIES["acknowledge"] == CAPABILITIES["dismiss"] == (RESPOND,)


@pytest.mark.parametrize("tool, url_name, method", [
    ("send_notification", "notification-submit", "POST"),
    ("get_notification", "notification-detail", "GET"),
    ("acknowledge", "notification-ack", "POST"),
    ("dismiss", "notification-dismiss", "POST"),
    ("simulate_policy", "policy-simulate", "POST"),
    ("request_approval", "governance-decisions", "POST"),
    ("check_approval", "governance-decision", "GET"),
    ("list_audit", "audit-list", "GET"),
    ("silence", "silence-list", "POST"),
    ("list_silences", "silence-list", "GET"),
    ("expire_silence", "silence-expire", "POST"),
    ("who_is_on_call", "oncall-who", "GET"),
])
def test_tools_need_what_the_http_api_needs_for_the_same_action(tool, url_name, method):
    args = [] if url_name in ("notification-submit", "policy-simulate", "governance-decisions", "audit-list",
                              "silence-list", "oncall-who") else ["n"]
    view = resolve(reverse(url_name, args=args)).func.view_class
    needed = view.capabilities[method]
    assert CAPABILITIES[tool] == (needed if isinstance(needed, tuple) else (needed,))


async def test_every_tool_refuses_a_call_without_credentials(server):
    async with Client(server) as client:
        for name, arguments in ARGUMENTS.items():
            result = await client.call_tool(name, arguments)
            assert result.is_error, name
            assert result.structured_content["code"] == "not_authenticated", name
            assert result.structured_content["status"] == 401


def test_a_tool_without_a_declared_capability_cannot_be_registered(monkeypatch):
    import notifications.mcp.server as module

    monkeypatch.setattr(module, "CAPABILITIES", {k: v for k, v in CAPABILITIES.items() if k != "dismiss"})
    with pytest.raises(RuntimeError, match="dismiss declares no capability"):
        build_server(HttpIdentity(), with_worker=False)
