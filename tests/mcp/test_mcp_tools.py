"""The UNS tools over both transports, against a real ``mcp_server`` process whose own
worker loops deliver what is sent."""
import pytest
from mcp_harness import call_error, call_ok, wait_for_status

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

TOOLS = {"send_notification", "get_notification", "list_pending_acks", "acknowledge", "dismiss", "simulate_policy",
         "request_approval", "check_approval", "silence", "list_silences", "expire_silence", "list_audit", "who_is_on_call"}


async def test_lists_the_uns_tools(connect):
    async with connect("agent") as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    assert set(tools) == TOOLS
    assert tools["send_notification"].input_schema["required"] == ["source", "title"]
    assert "principal" not in tools["send_notification"].input_schema["properties"]
    assert tools["get_notification"].annotations.read_only_hint is True
    assert tools["acknowledge"].annotations.idempotent_hint is True
    assert all(t.description for t in tools.values())


async def test_send_is_delivered_by_the_servers_loops_then_acknowledged(connect, transport):
    async with connect("agent") as client:
        sent = await call_ok(client, "send_notification", source=f"mcp-{transport}", title="disk full",
                             severity="critical", idempotency_key=f"ack-flow-{transport}")
        assert sent["status"] == "PENDING" and sent["created"] is True
        again = await call_ok(client, "send_notification", source=f"mcp-{transport}", title="disk full",
                              severity="critical", idempotency_key=f"ack-flow-{transport}")
        assert again["id"] == sent["id"] and again["created"] is False

        delivered = await wait_for_status(client, sent["id"], "DELIVERED")
        assert delivered["ack_status"] == "PENDING" and delivered["deadline"] > delivered["delivered_at"]
        assert delivered["deadline_iso"].endswith("Z")

        pending = await call_ok(client, "list_pending_acks", limit=500)
        assert sent["id"] in {item["id"] for item in pending["items"]}

        acked = await call_ok(client, "acknowledge", notification_id=sent["id"], metadata={"note": "on it"})
        assert (acked["ack_status"], acked["actor"]) == ("ACKED", "agent")
        assert acked["response_metadata"] == {"note": "on it"}
        repeat = await call_ok(client, "acknowledge", notification_id=sent["id"], metadata={"note": "on it"})
        assert repeat["ack_status"] == "ACKED"  # the same actor repeating is idempotent

        detail = await call_ok(client, "get_notification", notification_id=sent["id"])
        assert [e["kind"] for e in detail["timeline"]].count("ACKED") == 1
        pending = await call_ok(client, "list_pending_acks", limit=500)
        assert sent["id"] not in {item["id"] for item in pending["items"]}

        conflict = await call_error(client, "dismiss", notification_id=sent["id"])
        assert (conflict["code"], conflict["status"]) == ("ack_conflict", 409)


async def test_dismiss(connect, transport):
    async with connect("agent") as client:
        sent = await call_ok(client, "send_notification", source=f"mcp-{transport}", title="flaky probe",
                             require_ack=True)
        await wait_for_status(client, sent["id"], "DELIVERED")
        dismissed = await call_ok(client, "dismiss", notification_id=sent["id"])
        assert (dismissed["ack_status"], dismissed["actor"]) == ("DISMISSED", "agent")


async def test_domain_errors_carry_the_http_problem_codes(connect, transport):
    async with connect("agent") as client:
        missing = await call_error(client, "get_notification", notification_id="00000000-0000-0000-0000-000000000000")
        assert (missing["code"], missing["status"]) == ("not_found", 404)

        bad = await call_error(client, "send_notification", source="mcp", title="x", severity="apocalyptic")
        assert bad["code"] == "invalid_request" and bad["errors"][0]["field"] == "severity"

        unknown = await call_error(client, "send_notification", source="mcp", title="x", channels=["nowhere"])
        assert (unknown["code"], unknown["status"]) == ("unknown_channel", 422)

        key = f"conflict-{transport}"
        await call_ok(client, "send_notification", source="mcp", title="first", idempotency_key=key)
        clash = await call_error(client, "send_notification", source="mcp", title="second", idempotency_key=key)
        assert (clash["code"], clash["status"]) == ("idempotency_conflict", 409)

        no_ack = await call_ok(client, "send_notification", source="mcp", title="fyi", severity="info")
        refused = await call_error(client, "acknowledge", notification_id=no_ack["id"])
        assert refused["code"] == "ack_not_required"

        limit = await call_error(client, "list_pending_acks", limit=0)
        assert limit["code"] == "invalid_request"


async def test_simulate_policy_resolves_without_sending(connect, transport):
    async with connect("agent") as client:
        before = await call_ok(client, "list_pending_acks", limit=500)
        critical = await call_ok(client, "simulate_policy", source="mcp", severity="critical")
        assert critical["rule"] == "critical-needs-ack" and critical["effective"]["require_ack"] is True
        assert critical["revision"] >= 1 and len(critical["effective_hash"]) == 64
        assert critical["dedup"]["role"] == "leader" and critical["idempotency"]["outcome"] == "new"
        info = await call_ok(client, "simulate_policy", source="mcp", severity="info")
        assert info["effective"]["require_ack"] is False
        assert info["effective_hash"] != critical["effective_hash"]

        key = f"simulated-{transport}"
        sent = await call_ok(client, "send_notification", source="mcp", title="policy simulation", idempotency_key=key)
        repeat = await call_ok(client, "simulate_policy", source="mcp", idempotency_key=key)
        assert repeat["idempotency"] == {"outcome": "repeat", "notification_id": sent["id"]}
        clash = await call_ok(client, "simulate_policy", source="mcp", title="other", idempotency_key=key)
        assert clash["idempotency"]["outcome"] == "conflict"

        invalid = await call_error(client, "simulate_policy", source="mcp", severity="nope")
        assert invalid["code"] == "invalid_request"
        unknown = await call_error(client, "simulate_policy", source="mcp", channels=["nowhere"])
        assert unknown["code"] == "unknown_channel"
        assert await call_ok(client, "list_pending_acks", limit=500) == before


async def test_an_operator_silences_for_an_hour_and_the_matching_notification_is_held(connect, transport):
    source = f"mcp-silenced-{transport}"
    async with connect("olga") as operator:
        made = await call_ok(operator, "silence", matchers=[{"name": "source", "op": "=", "value": source}],
                             duration_seconds=3600, comment="db migration")
        assert made["state"] == "active" and made["created_by"] == "olga"
        assert made["ends_at"] - made["starts_at"] == 3600
        listed = await call_ok(operator, "list_silences", state="active")
        assert made["id"] in {s["id"] for s in listed["items"]}
        bad = await call_error(operator, "silence", matchers=[{"name": "source", "op": "=~", "value": "db-("}],
                               duration_seconds=3600, comment="x")
        assert (bad["code"], bad["status"]) == ("invalid_silence", 400)
        assert [e["field"] for e in bad["errors"]] == ["matchers[0].value"]
        early = await call_error(operator, "silence", matchers=[{"name": "host", "op": "=", "value": "a"}],
                                 starts_at=2_000_000_000.0, ends_at=1_900_000_000.0, comment="x")
        assert early["code"] == "invalid_silence"
    async with connect("agent") as agent:
        refused = await call_error(agent, "silence", matchers=[{"name": "source", "op": "=", "value": "x"}],
                                   duration_seconds=60, comment="x")
        assert refused["code"] == "permission_denied"
        sent = await call_ok(agent, "send_notification", source=source, title="disk full")
        other = await call_ok(agent, "send_notification", source=f"{source}-other", title="disk full")
        await wait_for_status(agent, other["id"], "DELIVERED")  # the worker ran a pass after both were sent
        held = await call_ok(agent, "get_notification", notification_id=sent["id"])
        assert held["status"] == "PENDING"
        assert [e["payload"]["silence_id"] for e in held["timeline"] if e["kind"] == "SILENCED"] == [made["id"]]
    async with connect("olga") as operator:
        expired = await call_ok(operator, "expire_silence", silence_id=made["id"])
        assert expired["state"] == "expired" and expired["expired_by"] == "olga"
        missing = await call_error(operator, "expire_silence", silence_id="nope")
        assert missing["code"] == "silence_not_found"
    async with connect("agent") as agent:
        await wait_for_status(agent, sent["id"], "DELIVERED")  # fresh: delivered once the silence ended


async def test_who_is_on_call(connect):
    async with connect("reader") as client:
        answer = await call_ok(client, "who_is_on_call", target="user:agent")
        assert [p["user"] for p in answer["people"]] == ["agent"] and answer["people"][0]["source"] == "user"
        assert "verified contact method" in answer["reason"]  # agent has none: nobody would be paged
        missing = await call_ok(client, "who_is_on_call", target="nightly")  # a bare name is a schedule's
        assert missing["target"] == "schedule:nightly" and missing["reason"] == "schedule 'nightly' does not exist"
        bad = await call_error(client, "who_is_on_call", target="ops-hook:")
        assert (bad["code"], bad["status"]) == ("invalid_request", 400)
    async with connect("producer") as client:  # no console capability
        denied = await call_error(client, "who_is_on_call", target="user:agent")
        assert denied["code"] == "permission_denied"
