"""Governance approvers named as people: an approval whose ``channels`` name ``schedule:`` is
sent to whoever is on call when it is dispatched (through their verified contact method), and
that person's ACK approves; a missing schedule makes the approval fail closed at intake."""
from copy import deepcopy

import pytest
from django.contrib.auth import get_user_model

from notifications.models import Event
from notifications.runtime import oncall as oncall_service
from notifications.runtime import UnknownChannel
from oncall.models import ContactMethod
from policies.governance import decide, get_decision

from .conftest import GOVERNANCE

pytestmark = pytest.mark.django_db


def approvers_schedule(members):
    for name in members:
        user = get_user_model().objects.create_user(name)
        ContactMethod.objects.create(id=f"{name}-cm", user=user, kind="webhook",
                                     config={"url": f"http://h.invalid/{name}"},
                                     verification=ContactMethod.VERIFIED, created_at=0.0)
    oncall_service.create_schedule("approvers", actor="olga")
    oncall_service.add_layer("approvers", {"members": members, "rotation_unit": "weeks", "rotation_count": 1,
                                           "start": "2020-01-06T00:00", "time_zone": "UTC"}, actor="olga")


def test_the_approver_on_call_is_paged_and_approves(rt, governed, webhook):
    block = deepcopy(GOVERNANCE)
    block["approval"]["channels"] = ["schedule:approvers"]
    governed(block)
    approvers_schedule(["ann"])
    decision = decide("deploy.release", {"resource": "prod/api", "risk": "low"}, principal="agent", runtime=rt)
    [nid] = decision.as_dict()["approval_notification_ids"]
    [report] = rt.dispatch()
    assert report.status == "DELIVERED"
    assert [c["target"].config["url"] for c in webhook.calls] == ["http://h.invalid/ann"]
    [resolved] = Event.objects.filter(notification_id=nid, kind="ONCALL_RESOLVED")
    assert resolved.payload["target"] == "schedule:approvers" and resolved.payload["people"][0]["user"] == "ann"
    rt.acknowledge(nid, "ann", approve=True)
    assert get_decision(decision.id).state == "approved"


def test_an_approval_to_a_missing_schedule_fails_closed(rt, governed):
    block = deepcopy(GOVERNANCE)
    block["approval"]["channels"] = ["schedule:nobody-made-this"]
    governed(block)
    with pytest.raises(UnknownChannel):
        decide("deploy.release", {"resource": "prod/api", "risk": "low"}, principal="agent", runtime=rt)
