"""``list_audit``: the audit of people's actions over MCP, the same list, filters and problem
codes as ``GET /api/v1/audit`` (in-process, the SDK's client against a stdio-identity server)."""
import pytest
from mcp import Client

from notifications import people_audit
from notifications.mcp.auth import StdioIdentity
from notifications.mcp.server import build_server

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def recorded(make_principal):
    people_audit.record("olga", "REPLAY_REQUESTED", "n-1", at=100.0, title="node down")
    people_audit.record("carol", "CHANNEL_DISABLED", "pager", at=200.0, title="pager (webhook)")
    people_audit.record("olga", "POLICY_ACTIVATED", "billing", at=300.0, title="billing v2")
    _, reader = make_principal("reader", ("console",))
    _, producer = make_principal("producer-only", ("producer",))
    return reader, producer


async def _call(token, **arguments):
    async with Client(build_server(StdioIdentity(token), with_worker=False)) as client:
        return await client.call_tool("list_audit", arguments)


async def test_list_audit_filters_and_pages_like_the_http_list(recorded):
    reader, _ = recorded
    everything = (await _call(reader)).structured_content
    assert [i["action"] for i in everything["items"]] == ["POLICY_ACTIVATED", "CHANNEL_DISABLED", "REPLAY_REQUESTED"]
    olga = (await _call(reader, actor="olga", limit=1)).structured_content
    assert [i["object_title"] for i in olga["items"]] == ["billing v2"] and olga["next"]
    rest = (await _call(reader, actor="olga", cursor=olga["next"])).structured_content
    assert [i["object_title"] for i in rest["items"]] == ["node down"] and rest["next"] is None
    ranged = (await _call(reader, since="150", until="1970-01-01T00:04:10Z")).structured_content
    assert [i["object_id"] for i in ranged["items"]] == ["pager"]


async def test_bad_input_and_missing_capability_are_the_http_problems(recorded):
    reader, producer = recorded
    bad = await _call(reader, action="NOPE")
    assert bad.is_error and bad.structured_content["code"] == "invalid_request"
    assert bad.structured_content["errors"][0]["field"] == "action"
    limit = await _call(reader, limit=0)
    assert limit.is_error and limit.structured_content["errors"][0]["field"] == "limit"
    denied = await _call(producer)
    assert denied.is_error and denied.structured_content["code"] == "permission_denied"
