"""POST /api/v1/notifications/{id}/snooze and /escalate: responder capability, the token's
principal as actor, Idempotency-Key retries, and the runtime's conflicts as problem details."""
import json
from copy import deepcopy

import pytest

from notifications.models import Channel, Event, Notification

from .helpers import assert_problem, row_counts, submit

pytestmark = pytest.mark.django_db

URL = "/api/v1/notifications"


def _clear_policy_caches():
    from policies import bootstrap

    for name in ("bootstrap_content", "load_bootstrap_file"):
        clear = getattr(getattr(bootstrap, name, None), "cache_clear", None)
        if clear is not None:
            clear()


@pytest.fixture
def escalating(settings, tmp_path, db):
    """The bootstrap policy with ``escalation: {"target": "oncall"}`` (set before any intake)
    and the ``oncall`` console channel."""
    from policies.content import BOOTSTRAP_CONTENT

    content = deepcopy(BOOTSTRAP_CONTENT)
    content["defaults"]["escalation"] = {"target": "oncall"}
    path = tmp_path / "policy.json"
    path.write_text(json.dumps(content))
    settings.UNS_BOOTSTRAP_POLICY_FILE = str(path)
    _clear_policy_caches()
    Channel.objects.create(name="oncall", kind="console", config={})
    yield
    _clear_policy_caches()


@pytest.fixture
def delivered(api, api_rt, channel):
    nid = submit(api(groups=("producer",), name="billing-svc"), require_ack=True)["id"]
    api_rt.dispatch()
    return nid


@pytest.fixture
def responder(api):
    return api(groups=("responder",), name="oncall-bob")


def test_snooze_postpones_the_deadline(responder, api_rt, clock, delivered):
    clock.advance(30)
    response = responder.post(f"{URL}/{delivered}/snooze", {"seconds": 1800, "metadata": {"why": "deploy"}},
                              format="json")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["id"] == delivered and body["ack_status"] == "PENDING"
    assert body["deadline"] == clock.now + 1800 and body["deadline_iso"].endswith("Z")
    ev = Event.objects.get(notification_id=delivered, kind="SNOOZED")
    assert ev.payload["actor"] == "oncall-bob" and ev.payload["metadata"] == {"why": "deploy"}


def test_snooze_idempotency_key_makes_a_retry_a_no_op(responder, api_rt, clock, delivered):
    first = responder.post(f"{URL}/{delivered}/snooze", {"seconds": 600}, format="json", HTTP_IDEMPOTENCY_KEY="k1")
    clock.advance(20)
    before = row_counts()
    again = responder.post(f"{URL}/{delivered}/snooze", {"seconds": 600}, format="json", HTTP_IDEMPOTENCY_KEY="k1")
    assert again.status_code == 200 and again.json()["deadline"] == first.json()["deadline"]
    assert row_counts() == before


@pytest.mark.parametrize("body", [{}, {"seconds": 30}, {"seconds": 86401}, {"seconds": "600"},
                                  {"seconds": 600, "metadata": []}, {"seconds": 600, "actor": "mallory"}])
def test_snooze_bad_bodies_are_400_and_write_nothing(responder, api_rt, delivered, body):
    before = row_counts()
    assert_problem(responder.post(f"{URL}/{delivered}/snooze", body, format="json"), 400, "invalid_request")
    assert row_counts() == before


def test_snooze_after_ack_is_a_409(responder, api_rt, delivered):
    responder.post(f"{URL}/{delivered}/ack", {}, format="json")
    assert_problem(responder.post(f"{URL}/{delivered}/snooze", {"seconds": 600}, format="json"), 409, "ack_conflict")


def test_snooze_past_the_deadline_is_a_409(responder, api_rt, clock, delivered):
    clock.now = Notification.objects.get(id=delivered).deadline + 1
    assert_problem(responder.post(f"{URL}/{delivered}/snooze", {"seconds": 600}, format="json"), 409, "ack_timed_out")


def test_unknown_id_is_404(responder, api_rt):
    for verb, body in (("snooze", {"seconds": 600}), ("escalate", {})):
        assert_problem(responder.post(f"{URL}/00000000-0000-4000-8000-000000000000/{verb}", body, format="json"),
                       404, "not_found")


@pytest.mark.parametrize("groups", [("producer",), ("operator",), ("console",)])
def test_without_the_responder_capability_both_are_403(api, api_rt, delivered, groups):
    client = api(groups=groups, name="no-respond-" + groups[0])
    before = row_counts()
    assert client.post(f"{URL}/{delivered}/snooze", {"seconds": 600}, format="json").status_code == 403
    assert client.post(f"{URL}/{delivered}/escalate", {"reason": "x"}, format="json").status_code == 403
    assert row_counts() == before


def test_unauthenticated_is_401(api_rt, delivered):
    from rest_framework.test import APIClient

    assert APIClient().post(f"{URL}/{delivered}/snooze", {"seconds": 600}, format="json").status_code == 401
    assert APIClient().post(f"{URL}/{delivered}/escalate", {}, format="json").status_code == 401


def test_escalate_accepts_a_new_notification_to_the_target(escalating, responder, api_rt, delivered):
    response = responder.post(f"{URL}/{delivered}/escalate", {"reason": "customer impact"}, format="json")
    assert response.status_code == 202, response.content
    body = response.json()
    assert body["id"] == delivered and body["ack_status"] == "PENDING"
    esc = body["escalation"]
    assert (esc["number"], esc["target"], esc["status"]) == (1, "oncall", "PENDING")
    row = Notification.objects.get(id=esc["id"])
    assert row.principal == "uns-escalation" and row.notification["title"].startswith("ESCALATED: ")
    ev = Event.objects.get(notification_id=delivered, kind="ESCALATED")
    assert ev.payload["actor"] == "oncall-bob" and ev.payload["reason"] == "customer impact"
    assert ev.payload["escalation_id"] == esc["id"]


def test_escalate_idempotency_key(escalating, responder, api_rt, delivered):
    first = responder.post(f"{URL}/{delivered}/escalate", {}, format="json", HTTP_IDEMPOTENCY_KEY="e1")
    assert first.status_code == 202
    before = row_counts()
    again = responder.post(f"{URL}/{delivered}/escalate", {}, format="json", HTTP_IDEMPOTENCY_KEY="e1")
    assert again.status_code == 200 and again.json()["escalation"] == first.json()["escalation"]
    assert row_counts() == before


def test_escalate_without_a_target_is_a_409(responder, api_rt, delivered):
    before = row_counts()
    assert_problem(responder.post(f"{URL}/{delivered}/escalate", {"reason": "x"}, format="json"), 409,
                   "no_escalation_target")
    assert row_counts() == before


@pytest.mark.parametrize("body", [{"reason": 5}, {"reason": "x" * 1001}, {"target": "elsewhere"}])
def test_escalate_bad_bodies_are_400(escalating, responder, api_rt, delivered, body):
    assert_problem(responder.post(f"{URL}/{delivered}/escalate", body, format="json"), 400, "invalid_request")
