"""Bad input: each is RFC 9457 problem details with a stable ``code``, and nothing is written
(row counts in every table the write path touches are unchanged)."""
import json

import pytest
from django.conf import settings

from core.json_values import MAX_JSON_DEPTH

from .helpers import assert_problem, row_counts, submit

pytestmark = pytest.mark.django_db

URL = "/api/v1/notifications"
JSON = "application/json"
VALID = {"source": "billing", "title": "card declined", "channels": ["ops-hook"]}


def dumps(value) -> bytes:
    return json.dumps(value).encode()


def nested(depth: int) -> bytes:
    """A valid request whose metadata nests ``depth`` objects deep."""
    return b'{"source":"s","title":"t","metadata":' + b'{"a":' * depth + b"1" + b"}" * (depth + 1)


CASES = [
    # (id, content type, raw body, status, code, fields named in "errors")
    ("empty-object", JSON, b"{}", 400, "invalid_request", {"source", "title"}),
    ("empty-body", JSON, b"", 400, "invalid_request", {"source", "title"}),
    ("missing-title", JSON, dumps({"source": "s"}), 400, "invalid_request", {"title"}),
    ("blank-source", JSON, dumps({"source": "  ", "title": "t"}), 400, "invalid_request", {"source"}),
    ("mistyped", JSON, dumps({"source": 1, "title": ["t"], "body": 5, "severity": "urgent", "channels": "ops-hook",
                              "require_ack": "yes", "metadata": [], "dedup_key": 7}),
     400, "invalid_request", {"source", "title", "body", "severity", "channels", "require_ack", "metadata",
                              "dedup_key"}),
    ("title-too-long", JSON, dumps({"source": "s", "title": "x" * 501}), 400, "invalid_request", {"title"}),
    ("too-many-channels", JSON, dumps({**VALID, "channels": [f"c{i}" for i in range(17)]}),
     400, "invalid_request", {"channels"}),
    ("empty-channel-name", JSON, dumps({**VALID, "channels": [""]}), 400, "invalid_request", {"channels"}),
    ("unknown-field", JSON, dumps({**VALID, "titel": "typo"}), 400, "invalid_request", {"titel"}),
    ("reserved-metadata", JSON, dumps({**VALID, "metadata": {"uns_resolution": {}}}),
     400, "invalid_request", {"metadata.uns_resolution"}),
    ("metadata-too-big", JSON, dumps({**VALID, "metadata": {"blob": "x" * (17 * 1024)}}),
     400, "invalid_request", {"metadata"}),
    ("invalid-utf8", JSON, b'{"source": "s", "title": "\xff\xfe"}', 400, "parse_error", None),
    ("invalid-json", JSON, b'{"source": "s", "title": ', 400, "parse_error", None),
    ("trailing-garbage", JSON, b'{"source": "s", "title": "t"} x', 400, "parse_error", None),
    ("nan", JSON, b'{"source": "s", "title": "t", "metadata": {"x": NaN}}', 400, "parse_error", None),
    ("deeply-nested-array", JSON, b"[" * 5000 + b"]" * 5000, 400, "parse_error", None),
    ("deeply-nested-metadata", JSON, nested(5000), 400, "parse_error", None),
    ("nested-one-past-the-limit", JSON, nested(MAX_JSON_DEPTH), 400, "parse_error", None),
    ("json-array", JSON, b"[]", 400, "invalid_request", {""}),
    ("json-string", JSON, b'"hello"', 400, "invalid_request", {""}),
    ("json-number", JSON, b"42", 400, "invalid_request", {""}),
    ("json-null", JSON, b"null", 400, "invalid_request", {""}),
    ("json-true", JSON, b"true", 400, "invalid_request", {""}),
    ("text-plain", "text/plain", dumps(VALID), 415, "unsupported_media_type", None),
    ("form", "application/x-www-form-urlencoded", b"source=s&title=t", 415, "unsupported_media_type", None),
    ("xml", "application/xml", b"<n/>", 415, "unsupported_media_type", None),
]


@pytest.mark.parametrize("content_type,raw,status,code,fields", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_submission_is_a_problem_and_writes_nothing(api, api_rt, channel, content_type, raw, status, code,
                                                        fields):
    client = api(groups=("producer",))
    before = row_counts()
    response = client.generic("POST", URL, raw, content_type=content_type)
    body = assert_problem(response, status, code)
    assert body["instance"] == URL
    if fields is not None:
        assert {e["field"] for e in body["errors"]} == fields, body["errors"]
        assert all(isinstance(e["message"], str) and e["message"] for e in body["errors"])
    assert row_counts() == before


def test_nesting_up_to_the_limit_is_accepted(api, api_rt, channel):
    client = api(groups=("producer",))
    response = client.generic("POST", URL, nested(MAX_JSON_DEPTH - 1), content_type=JSON)
    assert response.status_code == 202, response.content


def _padded(size: int) -> bytes:
    """A syntactically valid request of exactly ``size`` bytes."""
    head = dumps({**VALID, "body": ""})
    raw = head[:-2] + b"x" * (size - len(head)) + b'"}'
    assert len(raw) == size
    return raw


def test_oversized_body_is_413_before_parsing(api, api_rt, channel):
    limit = settings.UNS_MAX_BODY_BYTES
    assert limit == 64 * 1024
    client = api(groups=("producer",))
    before = row_counts()
    body = assert_problem(client.generic("POST", URL, _padded(limit + 1), content_type=JSON),
                          413, "payload_too_large")
    assert body["limit_bytes"] == limit
    # Oversized garbage is refused for its size, not parsed.
    assert_problem(client.generic("POST", URL, b"\xff" * (limit * 2), content_type=JSON), 413, "payload_too_large")
    assert_problem(client.generic("POST", "/api/v1/notifications/x/ack", b"{" * (limit + 1), content_type=JSON),
                   413, "payload_too_large")
    assert row_counts() == before


def test_a_body_at_the_limit_is_parsed(api, api_rt, channel):
    client = api(groups=("producer",))
    before = row_counts()
    # Exactly at the limit: not 413; refused by field validation (body is at most 20000 characters).
    body = assert_problem(client.generic("POST", URL, _padded(settings.UNS_MAX_BODY_BYTES), content_type=JSON),
                          400, "invalid_request")
    assert {e["field"] for e in body["errors"]} == {"body"}
    assert row_counts() == before


def test_oversized_body_is_refused_even_without_credentials(api_rt, channel):
    from rest_framework.test import APIClient

    response = APIClient().generic("POST", URL, b" " * (settings.UNS_MAX_BODY_BYTES + 1), content_type=JSON)
    assert_problem(response, 413, "payload_too_large")


RESPOND_CASES = [
    ("unknown-field", JSON, dumps({"metadata": {}, "actor": "someone-else"}), 400, "invalid_request"),
    ("metadata-not-object", JSON, dumps({"metadata": ["x"]}), 400, "invalid_request"),
    ("invalid-json", JSON, b"{", 400, "parse_error"),
    ("invalid-utf8", JSON, b'{"metadata": {"a": "\xff"}}', 400, "parse_error"),
    ("deeply-nested", JSON, b'{"metadata":' + b'{"a":' * 5000 + b"1" + b"}" * 5001, 400, "parse_error"),
    ("json-array", JSON, b"[]", 400, "invalid_request"),
    ("huge-integer", JSON, b'{"metadata": {"n": ' + b"9" * 5000 + b"}}", 400, "parse_error"),
    ("json-null", JSON, b"null", 400, "invalid_request"),
    ("text-plain", "text/plain", b"{}", 415, "unsupported_media_type"),
]


@pytest.mark.parametrize("action", ["ack", "dismiss"])
@pytest.mark.parametrize("content_type,raw,status,code", [c[1:] for c in RESPOND_CASES],
                         ids=[c[0] for c in RESPOND_CASES])
def test_bad_response_body_is_a_problem_and_settles_nothing(api, api_rt, channel, action, content_type, raw,
                                                            status, code):
    producer, responder = api(groups=("producer",)), api(groups=("responder",))
    nid = submit(producer, require_ack=True)["id"]
    api_rt.dispatch()
    before = row_counts()
    response = responder.generic("POST", f"{URL}/{nid}/{action}", raw, content_type=content_type)
    assert_problem(response, status, code)
    assert row_counts() == before
    assert producer.get(f"{URL}/{nid}").json()["ack_status"] == "PENDING"


def test_bad_dlq_limit_is_400(api, api_rt):
    operator = api(groups=("operator",))
    for limit in ("0", "501", "x", "-1", "1.5"):
        body = assert_problem(operator.get("/api/v1/dlq", {"limit": limit}), 400, "invalid_request")
        assert body["errors"] == [{"field": "limit", "message": "must be 1..500"}]


def test_unknown_route_under_the_api_is_a_problem(api):
    client = api(groups=("producer",))
    assert_problem(client.get("/api/v1/no-such-thing"), 404, "not_found")


def test_a_host_this_server_does_not_serve_is_a_problem_not_an_html_page(api):
    """Trial finding: Django's own 400 (``DisallowedHost``) answered with its HTML page."""
    client = api(groups=("producer",))
    body = assert_problem(client.post("/api/v1/notifications", {"source": "s", "title": "t"}, format="json",
                                      HTTP_HOST="evil.example"), 400, "invalid_request")
    assert "evil.example" not in json.dumps(body)


def test_an_integer_too_long_to_parse_is_named_without_the_interpreters_advice(api, api_rt, channel):
    """Trial finding: a 5000-digit integer's refusal told the client to call
    ``sys.set_int_max_str_digits()``. Over HTTP and through ``core.json_values.loads`` (WebSocket,
    MCP) it is the same ``parse_error`` naming the limit."""
    from core.errors import InvalidJSON
    from core.json_values import loads

    raw = b'{"source": "s", "title": "t", "metadata": {"n": ' + b"9" * 5000 + b"}}"
    before = row_counts()
    body = assert_problem(api(groups=("producer",)).generic("POST", URL, raw, content_type=JSON), 400, "parse_error")
    assert body["errors"] == [{"field": "", "message": "integers may have at most 4300 digits"}]
    assert "sys." not in json.dumps(body) and row_counts() == before
    with pytest.raises(InvalidJSON) as refused:
        loads(raw.decode())
    assert refused.value.detail == body["detail"]
    with pytest.raises(ValueError) as not_json:
        loads("{not json")
    assert not isinstance(not_json.value, InvalidJSON)
