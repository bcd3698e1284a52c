"""Governance decisions in the Django admin: read-only, filtered by state, agent, action, approver
and revision, each linked to its approval notifications."""
import pytest
from django.contrib.auth.models import Group, User
from django.test import Client
from django.urls import reverse

from policies.governance import decide
from policies.governance.models import GovernanceDecision

pytestmark = pytest.mark.django_db

GOVERNANCE = {
    "approval": {"channels": ["console"], "timeout_seconds": 600},
    "rules": [
        {"name": "prod-deploys-need-a-human", "match": {"action": "deploy.*"}, "decision": "REQUIRE_APPROVAL"},
        {"name": "reads-are-fine", "match": {"action": "read.*"}, "decision": "ALLOW"},
    ],
}


@pytest.fixture
def ada():
    user = User.objects.create(username="ada", is_staff=True)
    user.groups.add(*Group.objects.filter(name="policy_admin"))
    client = Client()
    client.force_login(user)
    return client


def test_decisions_are_listed_filtered_and_linked_read_only(ada, rt, governed):
    governed(GOVERNANCE)
    read = decide("read.logs", {"agent_id": "bot-1", "risk": "low"}, principal="agent", runtime=rt)
    deploy = decide("deploy.release", {"agent_id": "bot-2", "resource": "prod/api", "risk": "medium"},
                    principal="agent", runtime=rt)
    rt.dispatch()
    [nid] = deploy.row.approval_ids
    rt.acknowledge(nid, "alice", approve=True)
    url = reverse("admin:policies_governancedecision_changelist")

    page = ada.get(url).content.decode()
    assert "read.logs" in page and "deploy.release" in page
    assert f'href="{reverse("admin:notifications_notification_change", args=[nid])}"' in page

    def listed(**query):
        text = ada.get(url, query).content.decode()
        return {name for name in ("read.logs", "deploy.release") if f'<td class="field-action">{name}</td>' in text}

    assert listed(state="approved") == {"read.logs", "deploy.release"}
    assert listed(state="pending") == set()
    assert listed(agent_id="bot-2") == {"deploy.release"}
    assert listed(action="read.logs") == {"read.logs"}
    assert listed(approver="alice") == {"deploy.release"}
    assert listed(revision=deploy.row.revision) == {"read.logs", "deploy.release"}

    detail = ada.get(reverse("admin:policies_governancedecision_change", args=[deploy.id])).content.decode()
    assert "APPROVAL_RECORDED" in detail and "alice" in detail and 'name="state"' not in detail
    assert ada.post(reverse("admin:policies_governancedecision_change", args=[deploy.id]),
                    {"state": "denied"}).status_code == 403
    assert GovernanceDecision.objects.get(id=deploy.id).state == "approved"
    assert GovernanceDecision.objects.get(id=read.id).state == "approved"
    assert ada.get(reverse("admin:policies_governancedecision_add")).status_code == 403
