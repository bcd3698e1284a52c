"""The console shows a pending approval's action and context: in the inbox read model
(``approval``) and on the notification's detail (its request's ``metadata.uns_governance``)."""
import pytest

from policies.governance import decide

pytestmark = pytest.mark.django_db


@pytest.fixture
def console_reader(api, clock, monkeypatch):
    from console import views

    monkeypatch.setattr(views, "clock", clock)
    return api(groups=("console",), name="viewer")


def test_inbox_and_detail_show_the_approval(console_reader, rt, governed):
    governed()
    decision = decide("deploy.release", {"resource": "prod/api", "risk": "medium", "agent_id": "bot-1",
                                         "reason": "ship", "context": {"version": "1.2"}}, principal="agent", runtime=rt)
    plain = rt.accept("svc", {"source": "web", "title": "plain", "channels": ["console"], "require_ack": True})
    rt.dispatch()
    items = {i["id"]: i for i in console_reader.get("/ui/inbox").json()["items"]}
    [nid] = decision.row.approval_ids
    assert items[nid]["approval"] == {"decision_id": decision.id, "action": "deploy.release", "resource": "prod/api",
                                      "risk": "medium", "agent_id": "bot-1", "reason": "ship",
                                      "context": {"version": "1.2"}}
    assert items[plain.notification.id]["approval"] is None
    detail = console_reader.get(f"/ui/notifications/{nid}").json()
    assert detail["request"]["metadata"]["uns_governance"]["action"] == "deploy.release"
