"""Every MCP tool publishes its result model (``notifications.payloads`` and the policy payload
models, the HTTP API's response models) as its output schema, so the SDK checks each result
against the same definition the OpenAPI document renders."""
import pytest
from mcp import Client

from notifications import payloads
from notifications.mcp.auth import HttpIdentity
from notifications.mcp.server import CAPABILITIES, build_server
from policies.governance.payloads import GovernanceDecision
from policies.payloads import PolicySimulation

pytestmark = [pytest.mark.anyio, pytest.mark.django_db]

RESULTS = {
    "send_notification": payloads.SentNotification,
    "get_notification": payloads.Notification,
    "list_pending_acks": payloads.PendingAcks,
    "acknowledge": payloads.Notification,
    "dismiss": payloads.Notification,
    "simulate_policy": PolicySimulation,
    "request_approval": GovernanceDecision,
    "check_approval": GovernanceDecision,
    "list_audit": payloads.AuditPage,
    "who_is_on_call": payloads.TargetResolution,
    "silence": payloads.Silence,
    "list_silences": payloads.SilenceList,
    "expire_silence": payloads.Silence,
}


async def test_every_tool_publishes_its_result_model():
    async with Client(build_server(HttpIdentity(), with_worker=False)) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    assert set(tools) == set(CAPABILITIES) == set(RESULTS)
    for name, model in RESULTS.items():
        assert tools[name].output_schema == model.model_json_schema(), name


def test_a_result_the_model_refuses_is_not_sent():
    tool = build_server(HttpIdentity(), with_worker=False)._tool_manager.get_tool("list_pending_acks")
    assert tool.fn_metadata.convert_result({"items": [], "count": 0}).structured_content == {"items": [], "count": 0}
    with pytest.raises(ValueError):
        tool.fn_metadata.convert_result({"items": [], "count": 0, "extra": 1})
