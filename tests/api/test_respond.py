"""POST /api/v1/notifications/{id}/ack and /dismiss: the actor is the token's principal; a repeat
by the same actor is idempotent; every refusal is a 409/404 problem that writes nothing."""
import pytest

from notifications.models import AckAuditRecord, Event

from .helpers import assert_problem, row_counts, submit

pytestmark = pytest.mark.django_db

URL = "/api/v1/notifications"


@pytest.fixture
def delivered(api, api_rt, channel):
    """A delivered notification awaiting a response (require_ack)."""
    nid = submit(api(groups=("producer",), name="billing-svc"), require_ack=True)["id"]
    api_rt.dispatch()
    return nid


@pytest.mark.parametrize("action,settled", [("ack", "ACKED"), ("dismiss", "DISMISSED")])
def test_respond_settles_with_the_token_principal_as_actor(api, api_rt, clock, delivered, action, settled):
    responder = api(groups=("responder",), name="oncall-bob")
    clock.advance(30)
    before = row_counts()
    response = responder.post(f"{URL}/{delivered}/{action}", {"metadata": {"note": "on it"}}, format="json")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["id"] == delivered
    assert (body["ack_status"], body["actor"], body["response_metadata"]) == (settled, "oncall-bob", {"note": "on it"})
    assert body["responded_at"] == clock.now and body["responded_at_iso"].endswith("Z")
    assert "timeline" not in body
    after = row_counts()
    assert after["uns_events"] == before["uns_events"] + 1
    assert after["ack_audit_records"] == before["ack_audit_records"] + 1
    event = Event.objects.get(notification_id=delivered, kind=settled)
    assert event.payload == {"actor": "oncall-bob", "metadata": {"note": "on it"}}
    audit = AckAuditRecord.objects.get(notification_id=delivered)
    assert (audit.old_status, audit.new_status, audit.acked_by) == ("PENDING", settled, "oncall-bob")

    # The same actor repeating the same response: the same answer, nothing new.
    before = row_counts()
    again = responder.post(f"{URL}/{delivered}/{action}", {"metadata": {"note": "on it"}}, format="json")
    assert again.status_code == 200 and again.json() == body
    assert row_counts() == before


def test_an_empty_body_is_an_ack_without_metadata(api, api_rt, delivered):
    responder = api(groups=("responder",))
    response = responder.post(f"{URL}/{delivered}/ack")
    assert response.status_code == 200, response.content
    assert (response.json()["ack_status"], response.json()["response_metadata"]) == ("ACKED", {})


def test_another_actor_or_the_other_response_conflicts(api, api_rt, delivered):
    bob, carol = api(groups=("responder",), name="bob"), api(groups=("responder",), name="carol")
    assert bob.post(f"{URL}/{delivered}/ack", format="json").status_code == 200
    before = row_counts()
    body = assert_problem(carol.post(f"{URL}/{delivered}/ack", format="json"), 409, "ack_conflict")
    assert body["ack_status"] == "ACKED"
    assert_problem(carol.post(f"{URL}/{delivered}/dismiss", format="json"), 409, "ack_conflict")
    assert_problem(bob.post(f"{URL}/{delivered}/dismiss", format="json"), 409, "ack_conflict")
    assert row_counts() == before


def test_the_actor_comes_from_the_token_not_the_body(api, api_rt, delivered):
    responder = api(groups=("responder",), name="bob")
    before = row_counts()
    body = assert_problem(responder.post(f"{URL}/{delivered}/ack", {"actor": "mallory"}, format="json"),
                          400, "invalid_request")
    assert body["errors"] == [{"field": "actor", "message": "unknown field"}]
    assert row_counts() == before


def test_ack_of_a_notification_that_needs_none_is_409_ack_not_required(api, api_rt, channel):
    nid = submit(api(groups=("producer",)))["id"]
    api_rt.dispatch()
    responder = api(groups=("responder",))
    before = row_counts()
    assert_problem(responder.post(f"{URL}/{nid}/ack", format="json"), 409, "ack_not_required")
    assert_problem(responder.post(f"{URL}/{nid}/dismiss", format="json"), 409, "ack_not_required")
    assert row_counts() == before


def test_ack_before_delivery_is_409_not_awaiting_ack(api, api_rt, channel):
    nid = submit(api(groups=("producer",)), require_ack=True)["id"]
    responder = api(groups=("responder",))
    before = row_counts()
    body = assert_problem(responder.post(f"{URL}/{nid}/ack", format="json"), 409, "not_awaiting_ack")
    # The problem's own status stays 409; the notification's status is an extension member.
    assert (body["status"], body["notification_status"]) == (409, "PENDING")
    assert row_counts() == before


def test_ack_after_the_deadline_is_409_ack_timed_out(api, api_rt, clock, delivered):
    responder = api(groups=("responder",))
    clock.advance(15 * 60)
    before = row_counts()
    assert_problem(responder.post(f"{URL}/{delivered}/ack", format="json"), 409, "ack_timed_out")
    assert row_counts() == before
    api_rt.expire()
    assert_problem(responder.post(f"{URL}/{delivered}/dismiss", format="json"), 409, "ack_timed_out")


def test_ack_of_an_unknown_id_is_404(api, api_rt):
    responder = api(groups=("responder",))
    before = row_counts()
    for action in ("ack", "dismiss"):
        body = assert_problem(responder.post(f"{URL}/no-such-id/{action}", format="json"), 404, "not_found")
        assert body["instance"] == f"{URL}/no-such-id/{action}"
    assert row_counts() == before
