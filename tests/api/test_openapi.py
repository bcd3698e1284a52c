"""The OpenAPI 3 schema (/api/schema/) and Swagger UI (/api/docs/, assets from the sidecar)."""
import json
import re

import pytest
import yaml
from django.urls import URLPattern, URLResolver, get_resolver
from rest_framework.test import APIClient

PROBLEM = "application/problem+json"


@pytest.fixture(scope="module")
def openapi():
    response = APIClient().get("/api/schema/?format=json")
    assert response.status_code == 200, response.content
    return json.loads(response.content)


def _operations(openapi):
    for path, item in openapi["paths"].items():
        for method, op in item.items():
            if method in ("get", "post", "put", "patch", "delete"):
                yield path, method, op


def test_schema_is_served_as_yaml_and_json_without_credentials(db):
    client = APIClient()
    as_yaml = client.get("/api/schema/")
    assert as_yaml.status_code == 200 and as_yaml["Content-Type"].startswith("application/vnd.oai.openapi")
    document = yaml.safe_load(as_yaml.content)
    assert document["openapi"].startswith("3.") and document["info"]["title"] == "UNS API"


def test_schema_generation_has_no_warnings_or_errors():
    from drf_spectacular.drainage import GENERATOR_STATS
    from drf_spectacular.generators import SchemaGenerator

    GENERATOR_STATS.reset()
    with GENERATOR_STATS.silence():
        SchemaGenerator().get_schema(request=None, public=True)
    assert not GENERATOR_STATS._warn_cache and not GENERATOR_STATS._error_cache, (
        list(GENERATOR_STATS._warn_cache), list(GENERATOR_STATS._error_cache))


def _api_v1_routes(resolver=None, prefix=""):
    resolver = resolver or get_resolver()
    for entry in resolver.url_patterns:
        if isinstance(entry, URLResolver):
            yield from _api_v1_routes(entry, prefix + str(entry.pattern))
        elif isinstance(entry, URLPattern):
            route = prefix + str(entry.pattern)
            if route.startswith("api/v1/") and hasattr(entry.callback, "cls"):
                yield route, entry.callback.cls


def test_every_api_v1_view_method_is_documented(openapi):
    documented = {(re.sub(r"\{[^}]+\}", "{}", p), m) for p, m, _ in _operations(openapi)}
    missing = []
    for route, cls in _api_v1_routes():
        path = "/" + re.sub(r"<(?:\w+:)?\w+>", "{}", route)
        for method in ("get", "post", "put", "patch", "delete"):
            if hasattr(cls, method) and (path, method) not in documented:
                missing.append(f"{method.upper()} {path}")
    assert not missing, missing


def test_every_operation_documents_auth_capability_and_problems(openapi):
    for path, method, op in _operations(openapi):
        where = f"{method.upper()} {path}"
        assert "**Capability:**" in op["description"], where  # from the view's declaration
        if path.endswith(("/pagerduty/v2/enqueue", "/pagerduty/v2/change/enqueue")):
            assert op.get("security") in (None, [{}], [])  # the routing key is in the body
            assert op["responses"]["400"]["content"]["application/json"]["schema"]["$ref"].endswith("/PagerDutyError")
            continue
        needs_capability = "none (declared" not in op["description"]
        if needs_capability or {"bearerAuth": []} in op.get("security", []):
            assert {"bearerAuth": []} in op["security"], where
            assert PROBLEM in op["responses"]["401"]["content"], where
        if needs_capability:
            assert PROBLEM in op["responses"]["403"]["content"], where
        if method in ("post", "put", "patch"):
            for code in ("400", "413", "415"):
                assert PROBLEM in op["responses"][code]["content"], (where, code)
        if "{notification_id}" in path:
            assert PROBLEM in op["responses"]["404"]["content"], where
        success = [c for c in op["responses"] if c.startswith("2")]
        assert success, where
        if path.endswith(".ics"):  # an iCalendar feed (RFC 5545) answers text/calendar
            assert all("text/calendar" in op["responses"][c]["content"] for c in success), where
            continue
        assert all("application/json" in op["responses"][c].get("content", {"application/json": 0})
                   for c in success), where


def test_bearer_scheme_and_problem_component(openapi):
    schemes = openapi["components"]["securitySchemes"]
    assert schemes["bearerAuth"] == {**schemes["bearerAuth"], "type": "http", "scheme": "bearer"}
    problem = openapi["components"]["schemas"]["Problem"]
    assert set(problem["required"]) == {"type", "title", "status", "detail", "code"}


def test_listing_parameters_are_documented(openapi):
    op = openapi["paths"]["/api/v1/notifications"]["get"]
    names = {p["name"] for p in op["parameters"]}
    assert names == {"status", "ack_status", "source", "dead_letter", "principal", "since", "until", "order", "limit",
                     "cursor"}
    assert set(openapi["paths"]["/api/v1/notifications"]) >= {"get", "post"}


def test_login_documents_the_session_it_starts_not_a_token(openapi):
    """The login answers a session cookie and a CSRF token, no credential: its summary and
    description must not promise a token it no longer returns."""
    op = openapi["paths"]["/api/v1/auth/login"]["post"]
    ref = op["responses"]["200"]["content"]["application/json"]["schema"]["$ref"]
    returned = openapi["components"]["schemas"][ref.rsplit("/", 1)[1]]["properties"]
    assert sorted(returned) == ["csrf_token", "expiry", "expiry_iso", "username"]
    assert "session" in op["summary"] and "token" not in op["summary"].lower()
    assert "short-lived token" not in op["description"] and "module docstring" not in op["description"]


def test_swagger_ui_is_served_with_local_assets(db):
    client = APIClient()
    page = client.get("/api/docs/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "/api/schema/" in html
    # nothing loads from the internet: every script, stylesheet and icon is a local path
    assert re.findall(r'(?:src|href)="([^"]*)"', html) and all(
        u.startswith("/") for u in re.findall(r'(?:src|href)="([^"]*)"', html)), html
    for asset in ("swagger-ui-bundle.js", "swagger-ui-standalone-preset.js", "swagger-ui.css"):
        url = f"/static/drf_spectacular_sidecar/swagger-ui-dist/{asset}"
        assert url in html
        response = client.get(url)
        assert response.status_code == 200, url
        assert b"".join(response.streaming_content)[:1]
    outside = APIClient(raise_request_exception=False).get("/static/drf_spectacular_sidecar/../../__init__.py")
    assert outside.status_code in (400, 404)  # only the sidecar's own files are served
