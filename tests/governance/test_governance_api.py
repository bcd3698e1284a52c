"""``/api/v1/governance/decisions`` over HTTP: the decision at once, the approval's state after an
ACK through the existing respond endpoint, idempotency, visibility, capability, problem details
for bad input, and the OpenAPI description."""
import pytest

from policies.governance.models import GovernanceDecision

URL = "/api/v1/governance/decisions"


@pytest.fixture
def api_rt(rt, monkeypatch):
    from django.apps import apps

    monkeypatch.setattr(apps.get_app_config("notifications"), "process_runtime", rt)
    return rt


def test_require_approval_then_ack_over_http(api, api_rt, governed):
    governed()
    agent, responder = api(groups=("producer",), name="agent"), api(groups=("responder",), name="alice")
    res = agent.post(URL, {"action": "deploy.release", "resource": "prod/api", "risk": "medium",
                           "agent_id": "bot-1", "context": {"version": "1.2"}}, format="json")
    assert res.status_code == 201, res.json()
    body = res.json()
    assert (body["outcome"], body["state"], body["approval_id"], body["allowed"]) == (
        "REQUIRE_APPROVAL", "pending", body["id"], False)
    assert res["Location"] == f"{URL}/{body['id']}"
    api_rt.dispatch()
    [nid] = body["approval_notification_ids"]
    assert responder.post(f"/api/v1/notifications/{nid}/ack", {"approve": True}, format="json").status_code == 200
    state = agent.get(f"{URL}/{body['id']}").json()
    assert (state["state"], state["decided_by"], state["allowed"], state["created"]) == (
        "approved", "alice", True, False)


def test_allow_and_deny_answer_at_once(api, api_rt, governed):
    governed()
    agent = api(groups=("producer",), name="agent")
    allow = agent.post(URL, {"action": "read.logs", "risk": "low"}, format="json").json()
    deny = agent.post(URL, {"action": "nuke"}, format="json").json()
    assert (allow["state"], allow["approval_id"], deny["state"], deny["rule"]) == ("approved", None, "denied", None)


def test_idempotency_key_header_repeat_and_conflict(api, api_rt, governed):
    governed()
    agent = api(groups=("producer",), name="agent")
    body = {"action": "deploy.release", "resource": "prod/api", "risk": "low"}
    first = agent.post(URL, body, format="json", HTTP_IDEMPOTENCY_KEY="run-7")
    again = agent.post(URL, body, format="json", HTTP_IDEMPOTENCY_KEY="run-7")
    assert (first.status_code, again.status_code) == (201, 200)
    assert first.json()["id"] == again.json()["id"] and GovernanceDecision.objects.count() == 1
    other = agent.post(URL, {**body, "resource": "prod/web"}, format="json", HTTP_IDEMPOTENCY_KEY="run-7")
    assert other.status_code == 409 and other.json()["code"] == "idempotency_conflict"
    clash = agent.post(URL, {**body, "idempotency_key": "a"}, format="json", HTTP_IDEMPOTENCY_KEY="b")
    assert clash.status_code == 400 and clash["Content-Type"] == "application/problem+json"


@pytest.mark.parametrize(("body", "field"), [
    ({}, "action"),
    ({"action": 7}, "action"),
    ({"action": "x", "risk": "HIGH"}, "risk"),
    ({"action": "x", "context": []}, "context"),
    ({"action": "x", "principal": "someone"}, "principal"),
    ({"action": "x", "agent_id": "a" * 300}, "agent_id"),
])
def test_bad_input_is_problem_details(api, api_rt, governed, body, field):
    governed()
    res = api(groups=("producer",), name="agent").post(URL, body, format="json")
    assert res.status_code == 400 and res["Content-Type"] == "application/problem+json"
    assert res.json()["code"] == "invalid_request"
    assert field in [e["field"] for e in res.json()["errors"]]
    assert GovernanceDecision.objects.count() == 0


def test_non_json_and_non_object_bodies(api, api_rt, governed):
    governed()
    agent = api(groups=("producer",), name="agent")
    assert agent.post(URL, "[1]", content_type="application/json").status_code == 400
    assert agent.post(URL, "{", content_type="application/json").json()["code"] == "parse_error"
    assert agent.post(URL, "action=x", content_type="text/plain").status_code == 415
    nul = agent.post(URL, {"action": "x\u0000"}, format="json")
    assert nul.status_code == 400 and nul.json()["code"] == "parse_error"


def test_capability_and_visibility(api, api_rt, governed):
    governed()
    agent = api(groups=("producer",), name="agent")
    decision = agent.post(URL, {"action": "read.x", "risk": "low"}, format="json").json()
    assert api(groups=("responder",), name="r").post(URL, {"action": "x"}, format="json").status_code == 403
    stranger = api(groups=("producer",), name="stranger")
    assert stranger.get(f"{URL}/{decision['id']}").status_code == 404
    missing = stranger.get(f"{URL}/no-such-id")
    assert missing.status_code == 404 and missing.json()["code"] == "not_found"
    assert api(groups=("operator",), name="op").get(f"{URL}/{decision['id']}").status_code == 200


def test_openapi_describes_both_operations(api):
    schema = api().get("/api/schema/?format=json").json()
    post = schema["paths"][URL]["post"]
    assert {"201", "200", "400", "409", "422", "503"} <= set(post["responses"])
    assert post["requestBody"]["content"]["application/json"]["schema"]["$ref"].endswith("/GovernanceRequest")
    assert "action" in schema["components"]["schemas"]["GovernanceRequest"]["required"]
    assert "get" in schema["paths"][URL + "/{decision_id}"]


def test_simulation_answers_what_a_decision_would_be_and_writes_nothing(api, api_rt, governed):
    from policies.governance.models import GovernanceAuditRecord
    from notifications.models import Notification

    governed()
    agent = api(groups=("producer",), name="agent")
    body = {"action": "deploy.release", "resource": "prod/api", "risk": "low", "idempotency_key": "s1"}
    sim = agent.post("/api/v1/governance/simulate", body, format="json")
    assert sim.status_code == 200, sim.json()
    got = sim.json()
    assert (got["outcome"], got["rule"], got["idempotency"]["outcome"]) == (
        "REQUIRE_APPROVAL", "prod-deploys-need-a-human", "new")
    assert got["approval"] == {"channels": ["console"], "timeout_seconds": 600.0, "approvals_required": 1}
    assert GovernanceDecision.objects.count() == GovernanceAuditRecord.objects.count() == Notification.objects.count() == 0
    made = agent.post(URL, body, format="json").json()
    repeat = agent.post("/api/v1/governance/simulate", body, format="json").json()
    assert repeat["idempotency"] == {"outcome": "repeat", "decision_id": made["id"]}
    assert repeat["revision"] == made["revision"] and repeat["snapshot_hash"] == made["snapshot_hash"]
    bad = agent.post("/api/v1/governance/simulate", {"action": "x", "risk": 3}, format="json")
    assert bad.status_code == 400 and bad.json()["errors"][0]["field"] == "risk"
