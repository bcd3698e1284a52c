"""The /api/v1 response bodies validate against their models (``notifications.payloads``,
``policies.payloads``, ``policies.governance.payloads``): no member the model lacks, none
missing. The OpenAPI document renders the same models (``tests/api/test_openapi.py``), and
schemathesis checks the document against the API; this closes the other direction (a member
added to a selector without its model fails here)."""
import pytest

from notifications import payloads
from notifications.adapters.base import DeliveryResult
from policies.governance.payloads import GovernanceDecision, GovernanceSimulation
from policies.payloads import PolicyList, PolicyRevisionList, PolicySimulation, PolicyVersion

from .helpers import drive_to_dlq, submit

pytestmark = pytest.mark.django_db


def ok(response, status=200) -> dict:
    assert response.status_code == status, response.content
    return response.json()


def test_notification_responses_validate(api_rt, clock, webhook, channel, api):
    client = api(groups=("producer", "responder", "operator", "console"))
    intake = ok(client.post("/api/v1/notifications", {"source": "s", "title": "t", "channels": ["ops-hook"],
                                                      "require_ack": True, "dedup_key": "k"}, format="json"), 202)
    payloads.IntakeSummary.model_validate(intake)
    nid = intake["id"]
    webhook.script.append(DeliveryResult(True, message_id="m-1"))
    api_rt.dispatch()
    payloads.Notification.model_validate(ok(client.get(f"/api/v1/notifications/{nid}")))
    payloads.NotificationPage.model_validate(ok(client.get("/api/v1/notifications")))
    payloads.EventPage.model_validate(ok(client.get(f"/api/v1/notifications/{nid}/timeline")))
    payloads.Notification.model_validate(ok(client.post(f"/api/v1/notifications/{nid}/ack", {}, format="json")))
    dead = drive_to_dlq(api_rt, clock, webhook, client, title="card declined")
    page = payloads.DeadLetterPage.model_validate(ok(client.get("/api/v1/dlq")))
    assert [i.id for i in page.items] == [dead]


def test_channel_and_bulk_responses_validate(api_rt, clock, webhook, channel, api):
    client = api(groups=("producer", "operator"))
    payloads.ChannelList.model_validate(ok(client.get("/api/v1/channels")))
    payloads.Channel.model_validate(ok(client.get("/api/v1/channels/ops-hook")))
    drive_to_dlq(api_rt, clock, webhook, client)
    created = ok(client.post("/api/v1/bulk-actions", {"action": "replay", "filter": {}, "expected": 1},
                             format="json"), 201)
    payloads.BulkProgress.model_validate(created)
    payloads.BulkRun.model_validate(ok(client.post(f"/api/v1/bulk-actions/{created['id']}/run", {}, format="json")))


def test_policy_and_governance_responses_validate(api_rt, channel, api):
    admin = api(groups=("policy_admin", "producer", "console"))
    submit(admin)  # the first intake writes the first revision
    PolicyList.model_validate(ok(admin.get("/api/v1/policies")))
    PolicyRevisionList.model_validate(ok(admin.get("/api/v1/policies/revisions")))
    PolicySimulation.model_validate(ok(admin.post("/api/v1/policies/simulate", {"source": "s", "title": "t"},
                                                  format="json")))
    [first] = PolicyList.model_validate(ok(admin.get("/api/v1/policies"))).items[:1]
    PolicyVersion.model_validate(ok(admin.get(f"/api/v1/policies/{first.policy_id}/versions/{first.version}")))
    decision = ok(admin.post("/api/v1/governance/decisions", {"action": "deploy", "risk": "low"}, format="json"), 201)
    GovernanceDecision.model_validate(decision)
    GovernanceDecision.model_validate(ok(admin.get(f"/api/v1/governance/decisions/{decision['id']}")))
    GovernanceSimulation.model_validate(ok(admin.post("/api/v1/governance/simulate", {"action": "deploy"},
                                                      format="json")))


def test_a_problem_validates(api):
    payloads.Problem.model_validate(api().get("/api/v1/notifications/not-an-id").json())
