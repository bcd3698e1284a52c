"""POST /api/v1/notifications: 202 for new work, 200 for an idempotent repeat, 409 for a reused
key, 422 for an unknown channel; the principal is the token's user, never a body field."""
import re

import pytest

from notifications.models import Event, Notification

from .helpers import assert_problem, row_counts, submit

pytestmark = pytest.mark.django_db

URL = "/api/v1/notifications"
SUMMARY_KEYS = {"id", "status", "dedup_role", "owner_id", "policy_id", "policy_revision", "effective_hash"}


def test_new_notification_is_202_with_its_intake_summary(api, api_rt, channel):
    client = api(groups=("producer",), name="billing-svc")
    before = row_counts()
    response = client.post(URL, {"source": "billing", "title": "card declined", "channels": ["ops-hook"]},
                           format="json")
    assert response.status_code == 202, response.content
    assert response["Content-Type"] == "application/json"
    body = response.json()
    assert set(body) == SUMMARY_KEYS
    assert re.fullmatch(r"[0-9a-f-]{36}", body["id"])
    assert body["status"] == "PENDING"
    assert body["dedup_role"] == "leader" and body["owner_id"] is None
    assert body["policy_id"] == "uns-default" and body["policy_revision"] == 1
    assert re.fullmatch(r"[0-9a-f]{64}", body["effective_hash"])
    assert response["Location"] == f"{URL}/{body['id']}"

    row = Notification.objects.get(id=body["id"])
    assert row.principal == "billing-svc"
    assert row.notification["channels"] == ["ops-hook"]
    assert list(Event.objects.filter(notification_id=row.id).values_list("kind", flat=True)) == ["ACCEPTED"]
    after = row_counts()
    assert after["uns_notifications"] == before["uns_notifications"] + 1
    assert after["uns_events"] == before["uns_events"] + 1


def test_repeat_with_body_idempotency_key_is_200_with_the_same_body(api, api_rt, channel):
    client = api(groups=("producer",))
    request = {"source": "billing", "title": "card declined", "channels": ["ops-hook"], "idempotency_key": "k-1"}
    first = client.post(URL, request, format="json")
    assert first.status_code == 202
    before = row_counts()
    again = client.post(URL, request, format="json")
    assert again.status_code == 200, again.content
    assert again.json() == first.json()
    assert again["Location"] == first["Location"]
    assert row_counts() == before


def test_idempotency_key_header_stands_in_for_the_body_field(api, api_rt, channel):
    client = api(groups=("producer",))
    request = {"source": "billing", "title": "card declined", "channels": ["ops-hook"]}
    first = client.post(URL, request, format="json", HTTP_IDEMPOTENCY_KEY="hdr-1")
    assert first.status_code == 202
    before = row_counts()
    again = client.post(URL, request, format="json", HTTP_IDEMPOTENCY_KEY="hdr-1")
    assert (again.status_code, again.json()) == (200, first.json())
    # The header and the body field name the same key: the same request.
    both = client.post(URL, {**request, "idempotency_key": "hdr-1"}, format="json", HTTP_IDEMPOTENCY_KEY="hdr-1")
    assert (both.status_code, both.json()["id"]) == (200, first.json()["id"])
    body_only = client.post(URL, {**request, "idempotency_key": "hdr-1"}, format="json")
    assert (body_only.status_code, body_only.json()["id"]) == (200, first.json()["id"])
    assert row_counts() == before


ASCII_ONLY = "holds a character outside printable ASCII (RFC 8941 sf-string)"


@pytest.mark.parametrize("header,message", [("", "empty"), ("  ", "empty"),
                                            ("dup-a,dup-b", "sent more than once, or holds a comma"),
                                            ("\xff\xfe", ASCII_ONLY), ("a\tb", ASCII_ONLY), ("clé", ASCII_ONLY)])
def test_an_empty_or_repeated_idempotency_key_header_is_refused(api, api_rt, channel, header, message):
    """Trial findings: two headers arrived joined as the key "dup-a,dup-b", an empty one was
    stored as "" (and never matched a repeat), and raw bytes 0xff 0xfe were stored as "ÿþ"."""
    client = api(groups=("producer",))
    before = row_counts()
    refused = client.post(URL, {"source": "billing", "title": "t", "channels": ["ops-hook"]}, format="json",
                          HTTP_IDEMPOTENCY_KEY=header)
    assert refused.status_code == 400 and refused["content-type"] == "application/problem+json"
    assert refused.json()["code"] == "invalid_request"
    assert refused.json()["errors"] == [{"field": "idempotency_key", "message": message}]
    assert row_counts() == before


def test_repeat_after_delivery_answers_the_current_state_of_the_same_notification(api, api_rt, channel):
    client = api(groups=("producer",))
    request = {"source": "billing", "title": "card declined", "channels": ["ops-hook"], "idempotency_key": "k-2"}
    first = client.post(URL, request, format="json").json()
    api_rt.dispatch()
    again = client.post(URL, request, format="json")
    assert again.status_code == 200
    assert again.json() == {**first, "status": "DELIVERED"}


def test_header_and_body_keys_that_disagree_are_refused(api, api_rt, channel):
    client = api(groups=("producer",))
    before = row_counts()
    response = client.post(URL, {"source": "billing", "title": "t", "idempotency_key": "a"}, format="json",
                           HTTP_IDEMPOTENCY_KEY="b")
    body = assert_problem(response, 400, "invalid_request")
    assert body["errors"] == [{"field": "idempotency_key", "message": "differs from the header"}]
    assert row_counts() == before


def test_same_key_with_another_request_is_409_idempotency_conflict(api, api_rt, channel):
    client = api(groups=("producer",))
    first = submit(client, idempotency_key="k-3")
    before = row_counts()
    response = client.post(URL, {"source": "billing", "title": "a different title", "channels": ["ops-hook"],
                                 "idempotency_key": "k-3"}, format="json")
    body = assert_problem(response, 409, "idempotency_conflict")
    assert body["notification_id"] == first["id"]
    # The header form collides the same way.
    response = client.post(URL, {"source": "billing", "title": "another one"}, format="json",
                           HTTP_IDEMPOTENCY_KEY="k-3")
    assert_problem(response, 409, "idempotency_conflict")
    assert row_counts() == before


def test_idempotency_is_scoped_to_principal_and_source(api, api_rt, channel):
    alice, bob = api(groups=("producer",), name="alice"), api(groups=("producer",), name="bob")
    a = submit(alice, idempotency_key="shared")
    b = submit(bob, idempotency_key="shared")
    other_source = submit(alice, source="payments", idempotency_key="shared")
    assert len({a["id"], b["id"], other_source["id"]}) == 3
    assert Notification.objects.get(id=b["id"]).principal == "bob"


def test_duplicates_coalesce_behind_a_leader(api, api_rt, channel):
    client = api(groups=("producer",))
    leader = submit(client, dedup_key="disk-full")
    follower = submit(client, dedup_key="disk-full")
    assert (follower["status"], follower["dedup_role"], follower["owner_id"]) == ("PENDING", "follower", leader["id"])
    api_rt.dispatch()
    late = submit(client, dedup_key="disk-full")
    assert (late["status"], late["dedup_role"], late["owner_id"]) == ("DEDUPLICATED", "deduplicated", leader["id"])
    detail = client.get(f"{URL}/{follower['id']}").json()
    assert (detail["status"], detail["dedup_role"]) == ("DEDUPLICATED", "deduplicated")


def test_the_principal_comes_from_the_token_not_the_body(api, api_rt, channel):
    client = api(groups=("producer",), name="real-producer")
    before = row_counts()
    response = client.post(URL, {"source": "s", "title": "t", "principal": "someone-else"}, format="json")
    body = assert_problem(response, 400, "invalid_request")
    assert {"field": "principal", "message": "unknown field"} in body["errors"]
    assert row_counts() == before


def test_unknown_channel_is_422_and_writes_nothing(api, api_rt, channel):
    client = api(groups=("producer",))
    before = row_counts()
    response = client.post(URL, {"source": "s", "title": "t", "channels": ["ops-hook", "no-such-hook"]},
                           format="json")
    body = assert_problem(response, 422, "unknown_channel")
    assert "no-such-hook" in body["detail"]
    assert body["errors"][0]["field"] == "channels"
    assert row_counts() == before


def test_disabled_channel_is_unknown(api, api_rt, channel):
    channel.enabled = False
    channel.save()
    client = api(groups=("producer",))
    before = row_counts()
    assert_problem(client.post(URL, {"source": "s", "title": "t", "channels": ["ops-hook"]}, format="json"),
                   422, "unknown_channel")
    assert row_counts() == before


def test_no_channels_uses_the_policy_default(api, api_rt):
    client = api(groups=("producer",))
    body = submit(client, channels=[])
    row = Notification.objects.get(id=body["id"])
    assert row.notification["channels"] == ["console"]
    assert row.notification["requested_channels"] == []
