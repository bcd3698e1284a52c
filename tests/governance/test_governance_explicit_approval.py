"""An approval is granted only when the approver says so: an ACK of a governance approval
notification without ``approve: true`` is refused (``approval_not_explicit``) and writes nothing,
on the runtime and over HTTP; bulk actions never act on an approval (each such item is refused
``approval_skipped``) while the rest of the selection is settled."""
import pytest

from notifications.models import AckAuditRecord, BulkActionItem, Event, Notification
from notifications.runtime import Conflict
from policies.governance import decide, get_decision

pytestmark = pytest.mark.django_db

BULK = "/api/v1/bulk-actions"


@pytest.fixture
def api_rt(rt, monkeypatch):
    from django.apps import apps

    monkeypatch.setattr(apps.get_app_config("notifications"), "process_runtime", rt)
    return rt


def _pending_approval(rt, governed, key="deploy-1"):
    governed()
    decision = decide("deploy.release", {"agent_id": "bot-1", "resource": "prod/api", "risk": "medium",
                                         "idempotency_key": key}, principal="agent", runtime=rt)
    rt.dispatch()
    [nid] = decision.row.approval_ids
    assert Notification.objects.get(id=nid).ack_status == "PENDING"
    return decision, nid


def _untouched(decision, nid):
    row = Notification.objects.get(id=nid)
    assert (row.ack_status, row.actor) == ("PENDING", None)
    assert not Event.objects.filter(notification_id=nid, kind__in=("ACKED", "APPROVAL_SETTLED")).exists()
    assert not AckAuditRecord.objects.filter(notification_id=nid).exists()
    assert get_decision(decision.id).state == "pending"


def test_a_bare_ack_of_an_approval_is_refused_and_writes_nothing(rt, governed):
    decision, nid = _pending_approval(rt, governed)
    with pytest.raises(Conflict) as exc:
        rt.acknowledge(nid, "alice")
    assert exc.value.code == "approval_not_explicit"
    _untouched(decision, nid)
    rt.acknowledge(nid, "alice", approve=True)
    assert get_decision(decision.id).state == "approved"


def test_approve_is_ignored_on_a_plain_notification_and_a_dismiss_needs_no_flag(rt, governed):
    decision, nid = _pending_approval(rt, governed)
    plain = rt.accept("svc", {"source": "db", "title": "disk full", "require_ack": True, "channels": ["console"]})
    rt.dispatch()
    assert rt.acknowledge(plain.notification.id, "alice").ack_status == "ACKED"
    rt.acknowledge(nid, "bob", dismiss=True)
    assert get_decision(decision.id).state == "denied"


def test_over_http_the_ack_must_say_approve(api, api_rt, governed):
    decision, nid = _pending_approval(api_rt, governed)
    responder = api(groups=("responder",), name="alice")
    bare = responder.post(f"/api/v1/notifications/{nid}/ack", {}, format="json")
    assert bare.status_code == 409 and bare["Content-Type"] == "application/problem+json"
    assert bare.json()["code"] == "approval_not_explicit"
    bad = responder.post(f"/api/v1/notifications/{nid}/ack", {"approve": "please"}, format="json")
    assert bad.status_code == 400 and bad.json()["errors"][0]["field"] == "approve", bad.json()
    _untouched(decision, nid)
    ok = responder.post(f"/api/v1/notifications/{nid}/ack", {"approve": True}, format="json")
    assert ok.status_code == 200 and ok.json()["ack_status"] == "ACKED"
    assert get_decision(decision.id).state == "approved"


@pytest.mark.parametrize("action,params", [("ack", {}), ("snooze", {"seconds": 600})])
def test_a_bulk_action_skips_approvals_and_settles_the_rest(api, api_rt, governed, action, params):
    decision, nid = _pending_approval(api_rt, governed)
    producer = api(groups=("producer",), name="svc")
    plain = [producer.post("/api/v1/notifications", {"source": "db", "title": f"replica lag {i}",
                                                     "require_ack": True, "channels": ["console"]},
                           format="json").json()["id"] for i in range(2)]
    api_rt.dispatch()
    responder = api(groups=("responder",), name="alice")
    created = responder.post(BULK, {"action": action, "filter": {}, "expected": 3, **params}, format="json")
    assert created.status_code == 201, created.content
    out = responder.post(f"{BULK}/{created.json()['id']}/run", format="json").json()
    assert (out["settled"], out["refused"], out["state"]) == (2, 1, "DONE")
    [skipped] = [r for r in out["results"] if r["result"] == "refused"]
    assert (skipped["notification_id"], skipped["code"]) == (nid, "approval_skipped")
    assert BulkActionItem.objects.get(notification_id=nid).code == "approval_skipped"
    row = Notification.objects.get(id=nid)
    assert (row.ack_status, row.actor) == ("PENDING", None)
    assert not Event.objects.filter(notification_id=nid, kind__in=("ACKED", "SNOOZED", "APPROVAL_SETTLED")).exists()
    assert get_decision(decision.id).state == "pending"
    kind = {"ack": "ACKED", "snooze": "SNOOZED"}[action]
    assert Event.objects.filter(notification_id__in=plain, kind=kind).count() == 2


def test_an_approval_is_not_snoozed_and_a_dismiss_cannot_say_approve(api, api_rt, governed):
    decision, nid = _pending_approval(api_rt, governed)
    responder = api(groups=("responder",), name="alice")
    deadline = Notification.objects.get(id=nid).deadline
    snoozed = responder.post(f"/api/v1/notifications/{nid}/snooze", {"seconds": 86400}, format="json")
    assert snoozed.status_code == 409 and snoozed.json()["code"] == "approval_not_snoozable"
    contradictory = responder.post(f"/api/v1/notifications/{nid}/dismiss", {"approve": True}, format="json")
    assert contradictory.status_code == 400 and contradictory.json()["errors"][0]["field"] == "approve"
    _untouched(decision, nid)
    assert Notification.objects.get(id=nid).deadline == deadline
    assert not Event.objects.filter(notification_id=nid, kind__in=("SNOOZED", "DISMISSED")).exists()


def test_a_producer_cannot_send_governance_metadata_over_http(api, api_rt):
    producer = api(groups=("producer",), name="svc")
    forged = producer.post("/api/v1/notifications", {
        "source": "uns-governance", "title": "Approval needed: db.drop", "require_ack": True,
        "metadata": {"uns_governance": {"decision_id": "00000000-0000-4000-8000-000000000000"}}}, format="json")
    assert forged.status_code == 400 and forged["Content-Type"] == "application/problem+json"
    assert forged.json()["errors"][0]["field"] == "metadata.uns_governance"
    assert not Notification.objects.exists()
