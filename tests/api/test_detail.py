"""GET /api/v1/notifications/{id}: state, outcome, ack fields and a timeline whose times are
raw Float epoch seconds beside ISO-8601 UTC strings."""
from datetime import datetime, timezone

import pytest

from notifications.adapters.base import DeliveryResult

from .helpers import assert_problem, row_counts, submit

pytestmark = pytest.mark.django_db

URL = "/api/v1/notifications"
T0 = 1_800_000_000.0  # FakeClock's start


def iso(epoch):
    return datetime.fromtimestamp(epoch, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def test_detail_of_a_delivered_notification(api, api_rt, clock, channel):
    producer = api(groups=("producer",), name="billing-svc")
    nid = submit(producer, require_ack=True, metadata={"order": 42})["id"]
    clock.advance(1.5)
    api_rt.dispatch()
    before = row_counts()
    response = producer.get(f"{URL}/{nid}")
    assert response.status_code == 200
    assert row_counts() == before  # a read writes nothing
    body = response.json()
    assert body["id"] == nid and body["principal"] == "billing-svc"
    assert (body["status"], body["dead_letter"], body["leased"]) == ("DELIVERED", False, False)
    assert (body["attempts"], body["cycle"], body["cycle_attempts"]) == (1, 1, 1)
    assert body["outcome"] == {"channels_attempted": ["ops-hook"], "channels_succeeded": ["ops-hook"],
                               "channels_failed": [], "error_message": None}
    assert body["notification"]["metadata"]["order"] == 42
    assert body["notification"]["metadata"]["uns_resolution"]["effective"]["channels"] == ["ops-hook"]
    # ack fields: awaiting a response until delivered_at + ack_timeout_minutes (15 by default)
    assert (body["ack_status"], body["actor"], body["response_metadata"]) == ("PENDING", None, None)
    assert body["delivered_at"] == T0 + 1.5
    assert body["delivered_at_iso"] == iso(T0 + 1.5) == "2027-01-15T08:00:01.500Z"
    assert body["deadline"] == T0 + 1.5 + 15 * 60
    assert body["deadline_iso"] == iso(T0 + 1.5 + 900)
    assert (body["responded_at"], body["responded_at_iso"]) == (None, None)
    assert body["next_attempt_iso"] == iso(body["next_attempt"])
    # no lease held: lease_until is the reference's 0, and its rendering null (never 1970-01-01)
    assert (body["lease_until"], body["lease_until_iso"]) == (0.0, None)
    listed = producer.get(URL).json()["items"][0]
    assert (listed["lease_until"], listed["lease_until_iso"]) == (0.0, None)

    timeline = body["timeline"]
    assert [e["kind"] for e in timeline] == ["ACCEPTED", "ATTEMPT_STARTED", "CHANNEL_ATTEMPT_STARTED",
                                             "CHANNEL_ATTEMPT_RESULT", "DELIVERY_RESULT"]
    for event in timeline:
        assert set(event) == {"id", "kind", "at", "at_iso", "payload"}
        assert isinstance(event["at"], float)
        assert event["at_iso"] == iso(event["at"])
    assert timeline[0]["at"] == T0 and timeline[-1]["at"] == T0 + 1.5
    accepted = timeline[0]["payload"]
    assert accepted["revision"] == 1 and accepted["effective_hash"] == body["effective_hash"]
    result = timeline[3]["payload"]
    assert (result["channel"], result["success"], result["attempt"]) == ("ops-hook", True, 1)
    assert timeline[4]["payload"]["status"] == "DELIVERED"


def test_detail_of_a_retrying_notification_shows_the_failure(api, api_rt, webhook, clock, channel):
    webhook.script.append(DeliveryResult(False, retryable=True, error="HTTP 503"))
    client = api(groups=("producer",))
    nid = submit(client)["id"]
    api_rt.dispatch()
    body = client.get(f"{URL}/{nid}").json()
    assert (body["status"], body["cycle_attempts"], body["dead_letter"]) == ("PENDING", 1, False)
    assert body["outcome"]["channels_failed"] == ["ops-hook"]
    assert body["outcome"]["error_message"] == "ops-hook: HTTP 503"
    # backoff 2 s for the first retry, jitter pinned to its midpoint
    assert body["next_attempt"] == T0 + 2.0 and body["next_attempt_iso"] == iso(T0 + 2.0)
    assert body["ack_status"] is None and body["deadline"] is None


def test_a_held_lease_is_rendered(api, api_rt, clock, channel):
    from notifications.models import Notification

    client = api(groups=("producer",))
    nid = submit(client)["id"]
    Notification.objects.filter(id=nid).update(lease_until=T0 + 60)  # as a claim leaves it (no state column)
    body = client.get(f"{URL}/{nid}").json()
    assert (body["lease_until"], body["lease_until_iso"]) == (T0 + 60, iso(T0 + 60))


def test_unknown_id_is_404(api):
    client = api(groups=("producer", "console"))
    body = assert_problem(client.get(f"{URL}/00000000-0000-0000-0000-000000000000"), 404, "not_found")
    assert body["instance"] == f"{URL}/00000000-0000-0000-0000-000000000000"


def test_a_producer_sees_only_its_own_notifications_and_no_existence_oracle(api, api_rt, channel):
    alice, mallory = api(groups=("producer",), name="alice"), api(groups=("producer",), name="mallory")
    nid = submit(alice)["id"]
    assert alice.get(f"{URL}/{nid}").status_code == 200
    hidden = mallory.get(f"{URL}/{nid}")
    missing = mallory.get(f"{URL}/00000000-0000-0000-0000-000000000000")
    assert_problem(hidden, 404, "not_found")
    assert_problem(missing, 404, "not_found")
    # The two answers differ only where the request itself differs (the id in the URL).
    strip = lambda r, i: r.content.decode().replace(i, "<id>")  # noqa: E731
    assert strip(hidden, nid) == strip(missing, "00000000-0000-0000-0000-000000000000")


def test_console_readers_see_every_notification(api, api_rt, channel):
    nid = submit(api(groups=("producer",), name="alice"))["id"]
    for groups in (("console",), ("responder",), ("operator",)):
        response = api(groups=groups).get(f"{URL}/{nid}")
        assert response.status_code == 200 and response.json()["id"] == nid
