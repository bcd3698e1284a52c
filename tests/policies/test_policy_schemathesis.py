"""Property-based testing of the policy endpoints against the OpenAPI schema, as a policy admin
(who reaches the success and refusal paths that the API-wide run, as a producer, sees as 403).
No response may be a 5xx or break the schema."""
import itertools

import pytest
import schemathesis
from django.core import signals
from django.db import close_old_connections
from hypothesis import HealthCheck, settings

from policyhelpers import content

CHECKS = [
    schemathesis.checks.not_a_server_error,
    schemathesis.checks.status_code_conformance,
    schemathesis.checks.content_type_conformance,
    schemathesis.checks.response_schema_conformance,
    schemathesis.checks.response_headers_conformance,
]


def _wsgi_app():
    from django.core.wsgi import get_wsgi_application

    return get_wsgi_application()


schema = schemathesis.openapi.from_wsgi("/api/schema/?format=json", _wsgi_app()).include(path_regex=r"/policies")
_turn = itertools.count()


@pytest.fixture
def credentials(db, make_principal, api_rt):
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    from policies import store

    _, token = make_principal("fuzzy-admin", ("policy_admin", "producer"))
    draft = store.create_draft("fuzz", content(), actor="setup")
    try:
        yield {"headers": {"Authorization": f"Bearer {token}"}, "draft": draft}
    finally:
        signals.request_started.connect(close_old_connections)
        signals.request_finished.connect(close_old_connections)


@schema.parametrize()
@settings(max_examples=25, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
def test_policy_endpoints_conform_to_the_schema(case, credentials):
    turn = next(_turn) % 3
    params = case.path_parameters or {}
    if "policy_id" in params and turn:
        params["policy_id"] = "fuzz" if turn == 1 else "uns-default"
        params["version"] = 1
    if case.path == "/api/v1/policies" and case.method == "POST" and isinstance(case.body, dict) and turn == 1:
        case.body = {"policy_id": "fuzz", "content": content()}
    case.call_and_validate(headers=credentials["headers"], checks=CHECKS)
