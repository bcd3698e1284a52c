"""``/api/v1/policies``: the lifecycle over HTTP, capability-gated, errors as problem details."""
import pytest

from policies.content import DEFAULT_POLICY_ID
from policies.models import Policy, PolicyAuditRecord
from policyhelpers import content, table_fingerprint

pytestmark = pytest.mark.django_db

PROBLEM = "application/problem+json"


def problem(response, status, code):
    assert response.status_code == status, response.content
    assert response["Content-Type"].startswith(PROBLEM)
    body = response.json()
    assert (body["status"], body["code"], body["type"]) == (status, code, f"urn:uns:problem:{code}")
    return body


def test_create_draft_list_and_show(policy_admin):
    response = policy_admin.post("/api/v1/policies", {"policy_id": "billing", "content": content(priority=5)},
                                 format="json")
    assert response.status_code == 201, response.content
    body = response.json()
    assert (body["policy_id"], body["version"], body["status"], body["created_by"]) == ("billing", 1, "DRAFT", "pat")
    assert body["content"]["priority"] == 5 and len(body["content_hash"]) == 64
    assert response["Location"] == "/api/v1/policies/billing/versions/1"
    listing = policy_admin.get("/api/v1/policies").json()
    assert listing["current"]["revision"] == 1  # creating a draft initialised the authority
    assert {(i["policy_id"], i["version"], i["status"]) for i in listing["items"]} == \
        {("billing", 1, "DRAFT"), (DEFAULT_POLICY_ID, 1, "ACTIVE")}
    assert [i["policy_id"] for i in policy_admin.get("/api/v1/policies?status=DRAFT").json()["items"]] == ["billing"]
    shown = policy_admin.get("/api/v1/policies/billing/versions/1").json()
    assert shown["content"] == content(priority=5) and shown["created_at_iso"].endswith("Z")


def test_bad_content_is_a_problem_naming_each_field(policy_admin):
    bad = content(max_attempts=0)
    bad["rules"] = [{"name": "", "match": {"colour": "red"}, "set": {"delivery_mode": "SOMETIMES"}}]
    body = problem(policy_admin.post("/api/v1/policies", {"policy_id": "billing", "content": bad}, format="json"),
                   400, "invalid_policy_content")
    assert {e["field"] for e in body["errors"]} == {"defaults.max_attempts", "rules[0].name",
                                                    "rules[0].match.colour", "rules[0].set.delivery_mode"}
    problem(policy_admin.post("/api/v1/policies", {"policy_id": "no spaces", "content": content()}, format="json"),
            400, "invalid_policy_id")
    body = problem(policy_admin.post("/api/v1/policies", {"content": content(), "status": "ACTIVE"}, format="json"),
                   400, "invalid_request")
    assert {e["field"] for e in body["errors"]} == {"status", "policy_id"}
    problem(policy_admin.post("/api/v1/policies", [1, 2], format="json"), 400, "invalid_request")
    assert not Policy.objects.filter(policy_id="billing").exists()


def test_edit_activate_retire_clone(policy_admin):
    policy_admin.post("/api/v1/policies", {"policy_id": "billing", "content": content(priority=5)}, format="json")
    start = policy_admin.get("/api/v1/policies/billing/versions/1").json()["content_hash"]
    edited = policy_admin.put("/api/v1/policies/billing/versions/1",
                              {"content": content(priority=6), "expected_hash": start}, format="json")
    assert edited.status_code == 200 and edited.json()["content"]["priority"] == 6
    problem(policy_admin.put("/api/v1/policies/billing/versions/1", {"content": content(), "expected_hash": start},
                             format="json"), 409, "policy_edit_conflict")

    activated = policy_admin.post("/api/v1/policies/billing/versions/1/activate", {}, format="json")
    assert activated.status_code == 200, activated.content
    assert activated.json()["revision"] == 2 and activated.json()["changed"] is True
    assert activated.json()["policy"]["status"] == "ACTIVE" and activated.json()["replaced"] is None
    again = policy_admin.post("/api/v1/policies/billing/versions/1/activate", format="json")
    assert again.status_code == 200 and again.json()["changed"] is False

    problem(policy_admin.put("/api/v1/policies/billing/versions/1", {"content": content()}, format="json"),
            409, "policy_not_draft")

    retired = policy_admin.post("/api/v1/policies/billing/versions/1/retire", {}, format="json").json()
    assert (retired["policy"]["status"], retired["revision"]) == ("RETIRED", 3)
    problem(policy_admin.post("/api/v1/policies/billing/versions/1/activate", {}, format="json"),
            409, "policy_retired")

    cloned = policy_admin.post("/api/v1/policies/billing/versions/1/clone", {}, format="json")
    assert cloned.status_code == 201
    assert (cloned.json()["version"], cloned.json()["status"], cloned.json()["cloned_from"]) == (2, "DRAFT", "billing@1")
    elsewhere = policy_admin.post("/api/v1/policies/billing/versions/1/clone", {"policy_id": "billing-eu"},
                                  format="json")
    assert elsewhere.json()["policy_id"] == "billing-eu"

    revisions = policy_admin.get("/api/v1/policies/revisions").json()["items"]
    assert [r["revision"] for r in revisions] == [3, 2, 1]
    assert revisions[1]["active"][0] == {"policy_id": "billing", "version": 1,
                                        "content_hash": activated.json()["policy"]["content_hash"]}
    assert set(PolicyAuditRecord.objects.filter(policy_id="billing").values_list("actor", flat=True)) == {"pat"}


def test_refused_transitions_and_unknown_versions(policy_admin):
    policy_admin.get("/api/v1/policies")
    policy_admin.post("/api/v1/policies", {"policy_id": "x", "content": content()}, format="json")
    problem(policy_admin.post(f"/api/v1/policies/{DEFAULT_POLICY_ID}/versions/1/retire", {}, format="json"),
            409, "default_policy_required")
    problem(policy_admin.post("/api/v1/policies/x/versions/9/activate", {}, format="json"), 404, "policy_not_found")
    problem(policy_admin.get("/api/v1/policies/x/versions/9"), 404, "policy_not_found")
    problem(policy_admin.post("/api/v1/policies/x/versions/1/activate", {"force": True}, format="json"),
            400, "invalid_request")
    problem(policy_admin.get("/api/v1/policies?status=LIVE"), 400, "invalid_request")


def test_nul_characters_are_refused_before_any_database_sees_them(policy_admin):
    bad = content()
    bad["rules"][0]["name"] = "crit\x00ical"
    # The API's one JSON parser refuses NUL in any string (400 parse_error); the store's own
    # field-named refusal, for Python callers, is covered in test_policy_store.py.
    body = problem(policy_admin.post("/api/v1/policies", {"policy_id": "x", "content": bad}, format="json"),
                   400, "parse_error")
    assert "U+0000" in body["detail"]
    problem(policy_admin.get("/api/v1/policies/a%00b/versions/1"), 404, "policy_not_found")
    problem(policy_admin.post("/api/v1/policies/a%00b/versions/1/activate", {}, format="json"), 404,
            "policy_not_found")
    problem(policy_admin.get("/api/v1/policies?policy_id=a%00"), 400, "invalid_query")
    problem(policy_admin.get("/api/v1/policies/trailing%0A/versions/1"), 404, "policy_not_found")


def test_activation_of_content_naming_an_unknown_channel_is_a_problem(policy_admin):
    policy_admin.post("/api/v1/policies", {"policy_id": "x", "content": content(channels=["pager"])}, format="json")
    body = problem(policy_admin.post("/api/v1/policies/x/versions/1/activate", {}, format="json"),
                   400, "invalid_policy_content")
    assert body["errors"] == [{"field": "defaults.channels", "message": "channel 'pager' is not configured or is disabled"}]


@pytest.mark.parametrize("groups", [("producer",), ("responder",), ("operator",), ("console",), ()])
def test_non_policy_admins_get_403_on_every_policy_endpoint(api, groups):
    client = api(groups=groups, name="p-" + ("-".join(groups) or "none"))
    before = table_fingerprint()
    calls = [
        ("get", "/api/v1/policies", None),
        ("post", "/api/v1/policies", {"policy_id": "x", "content": content()}),
        ("get", "/api/v1/policies/revisions", None),
        ("get", f"/api/v1/policies/{DEFAULT_POLICY_ID}/versions/1", None),
        ("put", f"/api/v1/policies/{DEFAULT_POLICY_ID}/versions/1", {"content": content()}),
        ("post", f"/api/v1/policies/{DEFAULT_POLICY_ID}/versions/1/activate", {}),
        ("post", f"/api/v1/policies/{DEFAULT_POLICY_ID}/versions/1/retire", {}),
        ("post", f"/api/v1/policies/{DEFAULT_POLICY_ID}/versions/1/clone", {}),
    ]
    for method, path, body in calls:
        response = getattr(client, method)(path, body, format="json") if body is not None else client.get(path)
        problem(response, 403, "permission_denied")
    simulate = client.post("/api/v1/policies/simulate", {"source": "s", "title": "t"}, format="json")
    if "producer" in groups:
        assert simulate.status_code == 200
    else:
        problem(simulate, 403, "permission_denied")
    assert table_fingerprint() == before


def test_unauthenticated_requests_are_401():
    from rest_framework.test import APIClient

    response = APIClient().get("/api/v1/policies")
    assert response.status_code == 401 and response["Content-Type"].startswith(PROBLEM)


def test_simulate_rejects_bad_requests_with_problem_details(policy_admin):
    problem(policy_admin.post("/api/v1/policies/simulate", {"title": "no source"}, format="json"),
            400, "invalid_request")
    problem(policy_admin.post("/api/v1/policies/simulate", {"source": "s", "title": "t", "channels": ["nowhere"]},
                              format="json"), 422, "unknown_channel")
