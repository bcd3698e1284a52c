"""Path ids that cannot be notification ids (a NUL byte, junk, the wrong case) answer 404 on
every endpoint that takes one, never a database error (PostgreSQL refuses NUL in text)."""
import pytest

from .helpers import assert_problem

pytestmark = pytest.mark.django_db

BAD_IDS = ["a%00b", "%00" * 36, "nope", "x" * 300, "00000000-0000-4000-8000-00000000000G"]


@pytest.mark.parametrize("bad", BAD_IDS)
@pytest.mark.parametrize("method,suffix,body", [
    ("get", "", None), ("post", "/ack", {}), ("post", "/dismiss", {}), ("post", "/snooze", {"seconds": 600}),
    ("post", "/escalate", {}),
])
def test_malformed_ids_are_not_found(api, api_rt, bad, method, suffix, body):
    client = api(groups=("responder", "operator"))
    response = getattr(client, method)(f"/api/v1/notifications/{bad}{suffix}", body, format="json")
    assert_problem(response, 404, "not_found")


@pytest.mark.parametrize("bad", BAD_IDS)
def test_malformed_ids_are_not_found_for_dlq_operations(api, api_rt, bad):
    client = api(groups=("operator",))
    assert_problem(client.post(f"/api/v1/dlq/{bad}/replay", {}, format="json"), 404, "not_found")
    assert_problem(client.post(f"/api/v1/dlq/{bad}/resolve", {}, format="json"), 404, "not_found")
