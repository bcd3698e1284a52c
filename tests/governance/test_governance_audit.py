"""Approvals in the people audit: an approver's explicit approve is APPROVED and a deny DENIED of
the governance decision (one row, the decision's action and resource as its title, the approval
notification in ``detail``); a refused bare ACK of an approval writes none."""
import pytest

from notifications.models import PeopleAuditRecord
from notifications.runtime import Conflict
from policies.governance import decide

pytestmark = pytest.mark.django_db


def _pending(rt, key):
    decision = decide("deploy.release", {"agent_id": "bot-1", "resource": "prod/api", "risk": "medium",
                                         "idempotency_key": key}, principal="agent", runtime=rt)
    rt.dispatch()
    [nid] = decision.row.approval_ids
    return decision, nid


def test_approve_and_deny_write_one_row_each_on_the_decision(rt, clock, governed):
    governed()
    approved, approved_nid = _pending(rt, "deploy-1")
    denied, denied_nid = _pending(rt, "deploy-2")
    with pytest.raises(Conflict):
        rt.acknowledge(approved_nid, "alice")  # not explicit: refused, nothing written
    assert not PeopleAuditRecord.objects.exists()
    rt.acknowledge(approved_nid, "alice", approve=True)
    clock.advance(1)
    rt.acknowledge(denied_nid, "bob", dismiss=True)
    got = [(r.actor, r.action, r.object_type, r.object_id, r.object_title, r.detail)
           for r in PeopleAuditRecord.objects.order_by("at", "id")]
    assert got == [
        ("alice", "APPROVED", "decision", approved.id, "deploy.release on prod/api",
         {"notification_id": approved_nid, "risk": "medium"}),
        ("bob", "DENIED", "decision", denied.id, "deploy.release on prod/api",
         {"notification_id": denied_nid, "risk": "medium"}),
    ]
