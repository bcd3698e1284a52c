"""Property-based API testing with schemathesis against our own OpenAPI schema (/api/schema/).

Every operation gets generated requests, schema-valid and schema-violating alike (schemathesis'
positive and negative modes), sent in-process through the WSGI app with the Bearer token of a
producer + responder + operator principal. No response may be a 5xx or break the schema: status
code documented, content type documented, body valid against the documented schema, documented
headers well-formed. Examples are bounded per operation so the module runs in about a minute.

Some generated requests also use a real notification (one that awaits an ACK) as the path
parameter, so the ack/dismiss/detail/timeline operations reach their success paths.
"""
import itertools

import pytest
import schemathesis
from django.core import signals
from django.core.cache import cache
from django.db import close_old_connections
from hypothesis import HealthCheck, settings
from knox.models import AuthToken

MAX_EXAMPLES = 25

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


# Loaded at collection (the schema view needs no database). schemathesis' lazy fixture loader
# does not work with pytest 9, so the schema is not a fixture.
schema = schemathesis.openapi.from_wsgi("/api/schema/?format=json", _wsgi_app())


@pytest.fixture
def in_test_transaction(db):
    """Switch off Django's per-request connection closing (as Django's own test client does),
    so the WSGI requests run inside the test's transaction."""
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    try:
        yield
    finally:
        signals.request_started.connect(close_old_connections)
        signals.request_finished.connect(close_old_connections)


@pytest.fixture
def credentials(in_test_transaction, make_principal, api_rt, channel):
    """The Bearer header of an all-capabilities principal and the id of a real notification
    awaiting an ACK."""
    user, token = make_principal("schemathesis", ("producer", "responder", "operator"))
    awaiting = api_rt.accept(user.username, {"source": "st", "title": "awaiting", "require_ack": True,
                                             "channels": ["ops-hook"]}).notification.id
    api_rt.dispatch()
    def throwaway():
        return {"Authorization": f"Bearer {AuthToken.objects.create(user=user, expiry=None)[1]}"}

    cache.clear()  # the console login throttle counts per address in the cache
    yield {"headers": {"Authorization": f"Bearer {token}"}, "token": token, "ids": [awaiting], "throwaway": throwaway}
    cache.clear()  # leave no exhausted login throttle to later tests


# Every other generated request targets a real notification / carries the real routing key.
# (Not random.random(): Hypothesis reseeds the global RNG for each example.)
_turn = itertools.count()


@schema.parametrize()
@settings(max_examples=MAX_EXAMPLES, deadline=None, derandomize=True,
          suppress_health_check=list(HealthCheck))
def test_api_conforms_to_its_schema(case, credentials):
    real = next(_turn) % 2 == 0
    if real and "notification_id" in (case.path_parameters or {}):
        case.path_parameters["notification_id"] = credentials["ids"][0]
    if real and case.path.endswith(("/pagerduty/v2/enqueue", "/pagerduty/v2/change/enqueue")) \
            and isinstance(case.body, dict):
        case.body["routing_key"] = credentials["token"]  # the routing key is the API token
    headers = credentials["headers"]
    if case.path == "/api/v1/auth/logout":
        headers = credentials["throwaway"]()  # logout revokes the token it carries
    case.call_and_validate(headers=headers, checks=CHECKS)
