"""Bulk actions over HTTP: ``POST /api/v1/bulk-actions`` and ``.../run``, with the console's
``GET /ui/bulk-actions/preview`` (the N to confirm) and ``GET /ui/bulk-actions/{id}``."""
import pytest

from notifications.models import BulkAction, Event, Notification

from .helpers import assert_problem, row_counts, submit

pytestmark = pytest.mark.django_db

BULK = "/api/v1/bulk-actions"


@pytest.fixture
def producer(api):
    return api(groups=("producer",), name="billing-svc")


@pytest.fixture
def operator(api):
    return api(groups=("operator",), name="ops-olga")


@pytest.fixture
def responder(api):
    return api(groups=("responder",), name="resp-rita")


def dead_letter_many(api_rt, webhook, producer, n, **fields):
    from notifications.adapters.base import DeliveryResult

    webhook.default = DeliveryResult(False, retryable=False, error="HTTP 410 gone")
    ids = []
    for i in range(n):
        ids.append(submit(producer, title=f"refused {i}", **fields)["id"])
        api_rt.clock.advance(0.001)
    while api_rt.dispatch():
        pass
    return ids


def test_preview_create_and_run_to_the_end(api_rt, webhook, channel, producer, operator):
    ids = dead_letter_many(api_rt, webhook, producer, 7, source="db")
    dead_letter_many(api_rt, webhook, producer, 2, source="web")
    preview = operator.get("/ui/bulk-actions/preview?action=replay&source=db")
    assert preview.status_code == 200, preview.content
    assert preview.json() == {"action": "replay", "list": "dlq", "filter": {
        "q": None, "source": "db", "severity": None, "channel": None, "reason": None, "dedup_key": None,
        "failed_since": None, "failed_until": None}, "matched": 7, "max_items": 5000}
    created = operator.post(BULK, {"action": "replay", "filter": {"source": "db"}, "expected": 7}, format="json")
    assert created.status_code == 201, created.content
    body = created.json()
    assert (body["total"], body["remaining"], body["state"], body["created_by"]) == (7, 7, "RUNNING", "ops-olga")
    assert created["Location"] == f"/ui/bulk-actions/{body['id']}"
    seen = []
    for _ in range(5):
        out = operator.post(f"{BULK}/{body['id']}/run", {"limit": 3}, format="json")
        assert out.status_code == 200, out.content
        seen += out.json()["results"]
        if out.json()["state"] == "DONE":
            break
    assert out.json()["settled"] == 7 and len(seen) == 7
    assert {r["notification_id"] for r in seen} == set(ids)
    assert Notification.objects.filter(id__in=ids, status="PENDING").count() == 7
    page = operator.get(f"/ui/bulk-actions/{body['id']}?limit=5")
    assert page.status_code == 200
    items = page.json()["items"]
    assert [i["ordinal"] for i in items["items"]] == [0, 1, 2, 3, 4] and items["next"]
    assert items["items"][0]["title"] == "refused 0" and items["items"][0]["result"] == "settled"
    rest = operator.get(f"/ui/bulk-actions/{body['id']}?limit=5&cursor={items['next']}").json()["items"]
    assert [i["ordinal"] for i in rest["items"]] == [5, 6] and rest["next"] is None


def test_each_action_needs_its_verbs_capability(api_rt, clock, webhook, channel, producer, operator, responder):
    dead_letter_many(api_rt, webhook, producer, 1)
    before = row_counts()
    assert_problem(responder.post(BULK, {"action": "replay", "expected": 1}, format="json"), 403, "permission_denied")
    assert_problem(operator.post(BULK, {"action": "ack", "expected": 1}, format="json"), 403, "permission_denied")
    assert_problem(producer.post(BULK, {"action": "resolve", "expected": 1}, format="json"), 403, "permission_denied")
    assert row_counts() == before and BulkAction.objects.count() == 0
    created = operator.post(BULK, {"action": "resolve", "expected": 1}, format="json").json()
    assert_problem(responder.post(f"{BULK}/{created['id']}/run", {}, format="json"), 403, "permission_denied")
    assert Event.objects.filter(kind="FAILURE_RESOLVED").count() == 0
    # another operator may continue it: resumable by anyone who may do the verb
    done = api_rt and operator.post(f"{BULK}/{created['id']}/run", {}, format="json").json()
    assert done["settled"] == 1


def test_bulk_ack_from_the_inbox_filter(api_rt, clock, webhook, channel, producer, responder):
    from notifications.adapters.base import DeliveryResult

    webhook.default = DeliveryResult(True, message_id="ok")
    ids = [submit(producer, title=f"Node health check {i}", require_ack=True)["id"] for i in range(4)]
    submit(producer, title="other", require_ack=True)
    clock.advance(1)
    api_rt.dispatch()
    assert responder.get("/ui/bulk-actions/preview?action=ack&q=node+health").json()["matched"] == 4
    assert len(responder.get("/ui/inbox?q=node+health").json()["items"]) == 4
    created = responder.post(BULK, {"action": "ack", "filter": {"q": "node health"}, "expected": 4}, format="json")
    out = responder.post(f"{BULK}/{created.json()['id']}/run", format="json").json()
    assert out["settled"] == 4
    assert Notification.objects.filter(id__in=ids, ack_status="ACKED", actor="resp-rita").count() == 4


def test_the_preview_takes_the_lists_filters_and_refuses_unknown_ones(api_rt, webhook, channel, producer, operator):
    """``/ui/bulk-actions/preview`` parses the filter with the list's own parser: what the DLQ
    shows with ``reason``/``channel`` is the N to confirm; a parameter the list does not know
    (or a DLQ-only filter on an inbox action) is a 400, never a wider action."""
    dead_letter_many(api_rt, webhook, producer, 3, source="db")
    query = "source=db&channel=ops-hook&reason=http"
    listed = operator.get(f"/ui/dlq?{query}").json()
    preview = operator.get(f"/ui/bulk-actions/preview?action=resolve&{query}").json()
    assert preview["matched"] == listed["total"] == 3
    assert operator.get("/ui/bulk-actions/preview?action=resolve&reason=nothing-like-this").json()["matched"] == 0
    for path in ("/ui/bulk-actions/preview?action=resolve&colour=red", "/ui/bulk-actions/preview?action=ack&reason=x",
                 "/ui/dlq?colour=red"):
        assert_problem(operator.get(path), 400, "invalid_request")


@pytest.mark.parametrize("body, status, code", [
    ({"action": "replay"}, 400, "invalid_request"),
    ({"action": "replay", "expected": "3"}, 400, "invalid_request"),
    ({"action": "nope", "expected": 3}, 400, "invalid_request"),
    ({"action": {}, "expected": 1, "filter": {}, "seconds": 60}, 400, "invalid_request"),  # schemathesis found it: a 500
    ({"action": "replay", "expected": 3, "filter": {"q": "a\u0000"}}, 400, "parse_error"),
    ({"action": "replay", "expected": 3, "filter": "billing"}, 400, "invalid_request"),
    ({"action": "replay", "expected": 3, "filter": {"source": "none-such"}}, 409, "bulk_nothing_matches"),
    ({"action": "replay", "expected": 1, "filter": {"ids": ["not-a-uuid"]}}, 400, "invalid_request"),
    ({"action": "replay", "expected": 1, "filter": {"ids": ["00000000-0000-4000-8000-000000000000"]}}, 409,
     "bulk_nothing_matches"),
    ([1, 2], 400, "invalid_request"),
])
def test_bad_bodies_are_problems_and_store_nothing(api_rt, webhook, channel, producer, operator, body, status, code):
    dead_letter_many(api_rt, webhook, producer, 1)
    assert_problem(operator.post(BULK, body, format="json"), status, code)
    assert BulkAction.objects.count() == 0


def test_run_and_read_problems(api_rt, webhook, channel, producer, operator):
    assert_problem(operator.post(f"{BULK}/nope/run", {}, format="json"), 404, "bulk_action_not_found")
    assert_problem(operator.get("/ui/bulk-actions/nope"), 404, "bulk_action_not_found")
    assert_problem(operator.get("/ui/bulk-actions/preview"), 400, "invalid_request")
    assert_problem(operator.get("/ui/bulk-actions/preview?action=replay&q=a&q=b"), 400, "invalid_request")
    dead_letter_many(api_rt, webhook, producer, 1)
    created = operator.post(BULK, {"action": "replay", "expected": 1}, format="json").json()
    for body in ({"limit": 0}, {"limit": 101}, {"limit": "5"}, {"colour": 1}):
        assert_problem(operator.post(f"{BULK}/{created['id']}/run", body, format="json"), 400, "invalid_request")
    assert BulkAction.objects.get().items.filter(result__isnull=True).count() == 1


def test_run_without_a_body_as_curl_sends_it(api_rt, webhook, channel, producer, operator):
    dead_letter_many(api_rt, webhook, producer, 2)
    created = operator.post(BULK, {"action": "resolve", "expected": 2}, format="json").json()
    from django.test import Client

    out = Client().generic("POST", f"{BULK}/{created['id']}/run", "", content_type="",
                           HTTP_AUTHORIZATION=operator._credentials["HTTP_AUTHORIZATION"])  # no body, no type
    assert out.status_code == 200, out.content
    assert (out.json()["settled"], out.json()["state"]) == (2, "DONE")
