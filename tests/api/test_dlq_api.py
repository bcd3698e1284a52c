"""The dead-letter queue over HTTP: GET /api/v1/dlq, POST /api/v1/dlq/{id}/replay and .../resolve,
and their deprecated paths (POST /api/v1/runtime/notifications/{id}/replay, DELETE /api/v1/dlq/{id})."""
import pytest

from notifications.adapters.base import DeliveryResult
from notifications.models import Event, Notification

from .helpers import assert_problem, drive_to_dlq, row_counts, submit

pytestmark = pytest.mark.django_db

DLQ = "/api/v1/dlq"


def replay_url(nid):
    return f"{DLQ}/{nid}/replay"


def resolve_url(nid):
    return f"{DLQ}/{nid}/resolve"


@pytest.fixture
def producer(api):
    return api(groups=("producer",), name="billing-svc")


@pytest.fixture
def operator(api):
    return api(groups=("operator",), name="ops-olga")


def test_exhausted_notification_is_listed_in_the_dlq(api_rt, clock, webhook, channel, producer, operator):
    nid = drive_to_dlq(api_rt, clock, webhook, producer, title="card declined")
    response = operator.get(DLQ)
    assert response.status_code == 200
    body = response.json()
    assert body["next"] is None
    [item] = body["items"]
    assert item["id"] == nid
    assert (item["source"], item["title"]) == ("billing", "card declined")
    assert item["error_message"] == "ops-hook: HTTP 503"
    assert item["channels_failed"] == ["ops-hook"]
    assert (item["cycle"], item["cycle_attempts"], item["attempts"]) == (1, 5, 5)  # default max_attempts 5
    assert (item["replay_blocked"], item["replay_blocker"]) == (False, None)
    assert isinstance(item["failed_at"], float)
    # Console readers may list it too; the detail agrees.
    assert api_rt and operator.get(f"/api/v1/notifications/{nid}").json()["dead_letter"] is True


def test_permanent_failure_dead_letters_at_once(api_rt, webhook, channel, producer, operator):
    webhook.script.append(DeliveryResult(False, retryable=False, error="HTTP 404"))
    nid = submit(producer)["id"]
    api_rt.dispatch()
    [item] = operator.get(DLQ).json()["items"]
    assert (item["id"], item["cycle_attempts"], item["error_message"]) == (nid, 1, "ops-hook: HTTP 404")


def test_replay_starts_a_new_cycle_and_delivers(api_rt, clock, webhook, channel, producer, operator):
    nid = drive_to_dlq(api_rt, clock, webhook, producer)
    before = row_counts()
    response = operator.post(replay_url(nid))
    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["status"], body["dead_letter"], body["cycle"], body["cycle_attempts"], body["attempts"]) == \
        ("PENDING", False, 2, 0, 5)
    assert body["next_attempt"] == clock.now
    assert row_counts()["uns_events"] == before["uns_events"] + 1
    event = Event.objects.get(notification_id=nid, kind="REPLAY_REQUESTED")
    assert event.payload == {"actor": "ops-olga", "cycle": 2, "cumulative_attempts": 5}
    assert operator.get(DLQ).json()["items"] == []

    api_rt.dispatch()
    detail = operator.get(f"/api/v1/notifications/{nid}").json()
    assert (detail["status"], detail["cycle"], detail["attempts"]) == ("DELIVERED", 2, 6)
    assert detail["timeline"][-1]["kind"] == "DELIVERY_RESULT"

    # Replaying again is refused: it is no longer dead-lettered.
    before = row_counts()
    body = assert_problem(operator.post(replay_url(nid)), 409, "not_dead_lettered")
    assert (body["notification_status"], body["dead_letter"]) == ("DELIVERED", False)
    assert row_counts() == before


def test_replay_of_a_pending_or_unknown_notification(api_rt, channel, producer, operator):
    nid = submit(producer)["id"]
    before = row_counts()
    assert_problem(operator.post(replay_url(nid)), 409, "not_dead_lettered")
    assert_problem(operator.post(replay_url("no-such-id")), 404, "not_found")
    assert row_counts() == before


def test_resolve_takes_it_out_of_the_dlq_without_replaying(api_rt, clock, webhook, channel, producer, operator):
    nid = drive_to_dlq(api_rt, clock, webhook, producer)
    before = row_counts()
    response = operator.post(resolve_url(nid))
    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["status"], body["dead_letter"], body["cycle"]) == ("FAILED", False, 1)
    assert row_counts()["uns_events"] == before["uns_events"] + 1
    assert Event.objects.get(notification_id=nid, kind="FAILURE_RESOLVED").payload == {"actor": "ops-olga"}
    assert operator.get(DLQ).json()["items"] == []

    # A repeat is idempotent; a replay is now refused.
    before = row_counts()
    again = operator.post(resolve_url(nid))
    assert (again.status_code, again.json()["dead_letter"]) == (200, False)
    assert_problem(operator.post(replay_url(nid)), 409, "not_dead_lettered")
    assert row_counts() == before
    assert Notification.objects.get(id=nid).status == "FAILED"


def test_resolve_of_a_live_or_unknown_notification(api_rt, channel, producer, operator):
    nid = submit(producer)["id"]
    before = row_counts()
    assert_problem(operator.post(resolve_url(nid)), 409, "not_dead_lettered")
    assert_problem(operator.post(resolve_url("no-such-id")), 404, "not_found")
    assert row_counts() == before


def test_dlq_pages_with_a_cursor_oldest_accepted_first(api_rt, clock, webhook, channel, producer, operator):
    ids = [drive_to_dlq(api_rt, clock, webhook, producer, title=f"n{i}") for i in range(3)]  # accepted in turn
    first = operator.get(DLQ, {"limit": 2}).json()
    assert [i["id"] for i in first["items"]] == ids[:2]
    assert first["next"]
    second = operator.get(DLQ, {"limit": 2, "cursor": first["next"]}).json()
    assert [i["id"] for i in second["items"]] == ids[2:]
    assert second["next"] is None
    assert [i["id"] for i in operator.get(DLQ, {"limit": 3}).json()["items"]] == ids
    assert_problem(operator.get(DLQ, {"after": ids[0]}), 400, "invalid_request")  # the old parameter is refused
    assert_problem(operator.get(DLQ, {"cursor": ids[0]}), 400, "invalid_cursor")


def test_dlq_readers(api, api_rt):
    for groups in (("operator",), ("console",), ("responder",)):
        assert api(groups=groups).get(DLQ).status_code == 200
    assert_problem(api(groups=("producer",)).get(DLQ), 403, "permission_denied")


def test_dlq_listing_reports_the_window_owner_that_blocks_replay(api_rt, clock, webhook, channel, producer,
                                                                  operator, django_assert_max_num_queries):
    """The listing and replay apply one rule: a newer live owner of the dead letter's dedup window
    blocks its replay, and the listing says so before the operator tries."""
    old = drive_to_dlq(api_rt, clock, webhook, producer, title="card declined", dedup_key="card-1")
    newer = submit(producer, title="card declined", dedup_key="card-1", idempotency_key="second")
    assert newer["dedup_role"] == "leader"  # a FAILED owner never suppresses
    with django_assert_max_num_queries(8):  # auth, page, and a batch of 3 for the blockers
        items = {i["id"]: i for i in operator.get(DLQ).json()["items"]}
    blocker = items[old]["replay_blocker"]
    assert items[old]["replay_blocked"] is True
    assert blocker == {"code": "replay_blocked", "successor_id": newer["id"], "successor_status": "PENDING"}
    response = operator.post(replay_url(old))
    assert_problem(response, 409, "replay_blocked")
    assert response.json()["successor_id"] == newer["id"]


def test_the_deprecated_paths_answer_as_their_successors(api_rt, clock, webhook, channel, producer, operator):
    """RFC 9745: every answer of an old path says it is deprecated and links the path that
    replaces it; the answer itself is the successor's."""
    def deprecated_as(response, successor):
        assert response["Deprecation"] == "@1796256000"
        assert response["Link"] == f'<{successor}>; rel="successor-version"'
        return response

    replayed = drive_to_dlq(api_rt, clock, webhook, producer)
    old = deprecated_as(operator.post(f"/api/v1/runtime/notifications/{replayed}/replay"), replay_url(replayed))
    assert (old.status_code, old.json()["cycle"]) == (200, 2)
    assert Event.objects.filter(notification_id=replayed, kind="REPLAY_REQUESTED").count() == 1
    assert_problem(deprecated_as(operator.post(f"/api/v1/runtime/notifications/{replayed}/replay"),
                                 replay_url(replayed)), 409, "not_dead_lettered")

    resolved = drive_to_dlq(api_rt, clock, webhook, producer, idempotency_key="second")
    old = deprecated_as(operator.delete(f"{DLQ}/{resolved}"), resolve_url(resolved))
    assert (old.status_code, old.json()["dead_letter"]) == (200, False)
    assert Event.objects.filter(notification_id=resolved, kind="FAILURE_RESOLVED").count() == 1
    refused = deprecated_as(producer.delete(f"{DLQ}/{resolved}"), resolve_url(resolved))
    assert_problem(refused, 403, "permission_denied")
    # The new paths carry no deprecation.
    assert "Deprecation" not in operator.post(resolve_url(resolved))
