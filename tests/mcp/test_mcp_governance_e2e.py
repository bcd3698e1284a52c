"""Governance end to end: an agent over MCP (a real ``mcp_server`` stdio process) asks for
approval, a responder answers over a real WebSocket (``/ws/respond/`` on a real ``uns_serve``
process with its embedded worker loops), and the agent's ``check_approval`` sees the outcome:
ACK approves, DISMISS denies, no answer before the approval timeout denies (``expired``). The
agent's calls never block on the human: ``request_approval`` answers pending at once.

Real time is unavoidable across processes; every wait is bounded (``wait_seconds`` <= 30, the
stack's DEADLINE) and the timeout case uses a 1 s approval timeout."""
import json

import pytest
from mcp_harness import McpDatabase, call_error, call_ok, stdio_client_session
from websockets.sync.client import connect

from e2e.stack import DEADLINE, Stack

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

PRINCIPALS = {"gov-agent": "producer", "gov-approver": "responder"}
GOVERNANCE = {
    "approval": {"channels": ["console"], "timeout_seconds": 600},
    "rules": [
        {"name": "prod-deploys", "match": {"action": "deploy.*", "resource": "prod/*"}, "decision": "REQUIRE_APPROVAL"},
        {"name": "quick-ask", "match": {"action": "quick.*"}, "decision": "REQUIRE_APPROVAL",
         "approval": {"timeout_seconds": 1}},
    ],
}


@pytest.fixture(scope="module")
def anyio_backend():
    return "asyncio"


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("governance")
    stack = Stack(workdir, "http://127.0.0.1:9/unused", secret="unused-secret")
    try:
        policy = workdir / "policy.json"
        content = json.loads(policy.read_text())
        content["governance"] = GOVERNANCE
        policy.write_text(json.dumps(content))
        stack.prepare(PRINCIPALS, "unused-hook")
        stack.serve(UNS_EMBEDDED_WORKER="true")
    except BaseException:
        stack.close()
        raise
    stack.ws = stack.base_url.replace("http://", "ws://")
    yield stack
    stack.close()


def agent_session(stack):
    return stdio_client_session(McpDatabase(env=stack.env, tmp=stack.workdir), stack.tokens["gov-agent"])


def respond_over_ws(stack, nid: str, action: str, **extra) -> dict:
    headers = {"Authorization": f"Bearer {stack.tokens['gov-approver']}"}
    with connect(f"{stack.ws}/ws/respond/", additional_headers=headers, proxy=None, open_timeout=10) as ws:
        ws.send(json.dumps({"action": action, "request_id": f"{action}-{nid}", "notification_id": nid, **extra}))
        return json.loads(ws.recv(timeout=DEADLINE))


def delivered(stack, nid: str) -> dict:
    return stack.wait_state(nid, "delivered, awaiting a response", lambda d: d["ack_status"] == "PENDING",
                            "gov-agent")


async def _ask(client, key: str, action: str = "deploy.release") -> dict:
    asked = await call_ok(client, "request_approval", action=action, resource="prod/api", risk="medium",
                          agent_id="bot-1", reason="ship 1.2", context={"version": "1.2"}, idempotency_key=key)
    assert (asked["outcome"], asked["state"], asked["allowed"]) == ("REQUIRE_APPROVAL", "pending", False)
    assert asked["approval_id"] == asked["id"] and len(asked["approval_notification_ids"]) == 1
    return asked


async def test_agent_asks_over_mcp_responder_approves_over_websocket(stack):
    async with agent_session(stack) as client:
        asked = await _ask(client, "e2e-approve")
        again = await call_ok(client, "request_approval", action="deploy.release", resource="prod/api",
                              risk="medium", agent_id="bot-1", reason="ship 1.2", context={"version": "1.2"},
                              idempotency_key="e2e-approve")
        assert again["id"] == asked["id"] and again["created"] is False
        still = await call_ok(client, "check_approval", approval_id=asked["approval_id"])
        assert still["state"] == "pending"

        [nid] = asked["approval_notification_ids"]
        note = delivered(stack, nid)
        assert note["notification"]["source"] == "uns-governance"
        assert note["notification"]["metadata"]["uns_governance"]["context"] == {"version": "1.2"}
        # A bare ACK is not an approval: refused, and the decision stays pending.
        bare = respond_over_ws(stack, nid, "ack")
        assert bare["ok"] is False and bare["problem"]["code"] == "approval_not_explicit", bare
        assert (await call_ok(client, "check_approval", approval_id=asked["approval_id"]))["state"] == "pending"
        answer = respond_over_ws(stack, nid, "ack", approve=True)
        assert answer["ok"] is True, answer

        settled = await call_ok(client, "check_approval", approval_id=asked["approval_id"], wait_seconds=20)
        assert (settled["state"], settled["decided_by"], settled["allowed"]) == ("approved", "gov-approver", True)
        timeline = [e["kind"] for e in stack.detail(nid, "gov-agent")["timeline"]]
        assert timeline.count("ACKED") == 1 and timeline.count("APPROVAL_SETTLED") == 1


async def test_dismiss_over_websocket_denies(stack):
    async with agent_session(stack) as client:
        asked = await _ask(client, "e2e-deny")
        [nid] = asked["approval_notification_ids"]
        delivered(stack, nid)
        assert respond_over_ws(stack, nid, "dismiss")["ok"] is True
        settled = await call_ok(client, "check_approval", approval_id=asked["approval_id"], wait_seconds=20)
        assert (settled["state"], settled["decided_by"], settled["allowed"]) == ("denied", "gov-approver", False)


async def test_no_answer_before_the_timeout_denies(stack):
    async with agent_session(stack) as client:
        asked = await _ask(client, "e2e-timeout", action="quick.restart")
        settled = await call_ok(client, "check_approval", approval_id=asked["approval_id"], wait_seconds=25)
        assert (settled["state"], settled["decided_by"], settled["allowed"]) == (
            "expired", "uns-timeout-worker", False)
        [nid] = asked["approval_notification_ids"]
        late = respond_over_ws(stack, nid, "ack")  # too late: the runtime refuses, the decision stays
        assert late["ok"] is False and late["problem"]["code"] == "ack_timed_out", late
        assert (await call_ok(client, "check_approval", approval_id=asked["approval_id"]))["state"] == "expired"


async def test_bad_arguments_and_unknown_ids_are_problems(stack):
    async with agent_session(stack) as client:
        bad = await call_error(client, "request_approval", action="x", risk="cosmic")
        assert bad["code"] == "invalid_request" and bad["errors"][0]["field"] == "risk"
        too_long = await call_error(client, "check_approval", approval_id="x", wait_seconds=600)
        assert too_long["code"] == "invalid_request" and too_long["errors"][0]["field"] == "wait_seconds"
        missing = await call_error(client, "check_approval", approval_id="00000000-0000-0000-0000-000000000000")
        assert (missing["code"], missing["status"]) == ("not_found", 404)
