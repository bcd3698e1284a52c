"""One input schema per verb (``notifications.runtime.schemas``, ``policies.schemas``): the OpenAPI
request bodies and the MCP tool input schemas are both generated from it, so they agree member for
member (required members, types, limits, enums), and each HTTP operation's body is its verb's
model."""
import anyio
import pytest
from drf_spectacular.generators import SchemaGenerator

from core.errors import InvalidRequest
from core.schema import parse
from notifications.mcp.auth import StdioIdentity
from notifications.mcp.server import build_server
from notifications.runtime import schemas
from policies import schemas as policy_schemas

# (HTTP method, path, the verb's model)
VERBS = [
    ("post", "/api/v1/notifications", schemas.SendNotificationRequest),
    ("post", "/api/v1/notifications/{notification_id}/ack", schemas.RespondRequest),
    ("post", "/api/v1/notifications/{notification_id}/dismiss", schemas.RespondRequest),
    ("post", "/api/v1/notifications/{notification_id}/snooze", schemas.SnoozeRequest),
    ("post", "/api/v1/notifications/{notification_id}/escalate", schemas.EscalateRequest),
    ("post", "/api/v1/dlq/{notification_id}/replay", schemas.ReplayRequest),
    ("post", "/api/v1/dlq/{notification_id}/resolve", schemas.ResolveRequest),
    ("post", "/api/v1/policies", policy_schemas.PolicyDraftRequest),
    ("put", "/api/v1/policies/{policy_id}/versions/{version}", policy_schemas.PolicyEditRequest),
    ("post", "/api/v1/policies/{policy_id}/versions/{version}/clone", policy_schemas.PolicyCloneRequest),
    ("post", "/api/v1/policies/{policy_id}/versions/{version}/activate", policy_schemas.PolicyTransitionRequest),
    ("post", "/api/v1/policies/simulate", schemas.SimulateRequest),
    ("post", "/api/v1/governance/decisions", policy_schemas.GovernanceRequest),
]

# MCP tool -> (the HTTP operation of the same verb, the members the tool adds: HTTP's path parameters)
TOOLS = {
    "send_notification": (("post", "/api/v1/notifications"), set()),
    "acknowledge": (("post", "/api/v1/notifications/{notification_id}/ack"), {"notification_id"}),
    "dismiss": (("post", "/api/v1/notifications/{notification_id}/dismiss"), {"notification_id"}),
    "simulate_policy": (("post", "/api/v1/policies/simulate"), set()),
    "request_approval": (("post", "/api/v1/governance/decisions"), set()),
}

# What the comparison ignores: prose and presentation, not shape.
PROSE = {"title", "description"}


@pytest.fixture(scope="module")
def openapi():
    return SchemaGenerator().get_schema(request=None, public=True)


@pytest.fixture(scope="module")
def mcp_tools():
    async def listed():
        return await build_server(StdioIdentity("unused"), with_worker=False).list_tools()

    return {t.name: t.input_schema for t in anyio.run(listed)}


def _shape(node, components=None):
    """A schema in one spelling: ``$ref``/``allOf [$ref]`` inlined, OpenAPI 3.0 ``nullable: true``
    as JSON Schema's ``anyOf [X, {"type": "null"}]``, enums as sets, prose dropped."""
    if isinstance(node, list):
        return [_shape(n, components) for n in node]
    if not isinstance(node, dict):
        return node
    node = dict(node)
    if "$ref" in node:
        node = {**components[node.pop("$ref").rsplit("/", 1)[1]], **node}
    if len(node.get("allOf", [])) == 1:
        node = {**node.pop("allOf")[0], **node}
        return _shape(node, components)
    nullable = node.pop("nullable", False)
    out = {k: (frozenset(v) if k == "enum" else _shape(v, components)) for k, v in node.items() if k not in PROSE}
    if "properties" in node:  # member names, not keywords: keep them all
        out["properties"] = {k: _shape(v, components) for k, v in node["properties"].items()}
    if nullable:
        default = out.pop("default", None)
        out = {"anyOf": [out, {"type": "null"}], **({"default": default} if "default" in node else {})}
    return out


def _body(openapi, method, path):
    ref = openapi["paths"][path][method]["requestBody"]["content"]["application/json"]["schema"]
    return _shape(ref, openapi["components"]["schemas"])


@pytest.mark.parametrize(("method", "path", "model"), VERBS, ids=[f"{m} {p}" for m, p, _ in VERBS])
def test_each_operation_body_is_its_verbs_model(openapi, method, path, model):
    assert _body(openapi, method, path) == _shape(model.model_json_schema())


@pytest.mark.parametrize("tool", sorted(TOOLS))
def test_mcp_input_schema_and_openapi_body_are_the_same_definition(openapi, mcp_tools, tool):
    (method, path), addressing = TOOLS[tool]
    body = _body(openapi, method, path)
    arguments = _shape(mcp_tools[tool])
    assert set(arguments["properties"]) - addressing == set(body["properties"])
    assert set(arguments.get("required", [])) - addressing == set(body.get("required", []))
    for name, member in body["properties"].items():
        assert arguments["properties"][name] == member, name
    assert arguments["additionalProperties"] is False and body["additionalProperties"] is False


def test_the_tool_signature_is_not_a_second_description(mcp_tools):
    """A member added to the verb's model reaches the tool; the SDK's signature-derived model
    is not what the tools publish (``send_notification`` takes ``**request``)."""
    assert set(mcp_tools["send_notification"]["properties"]) == set(schemas.SendNotificationRequest.model_fields)
    assert mcp_tools["send_notification"]["required"] == ["source", "title"]


@pytest.mark.parametrize(("model", "data", "errors"), [
    (schemas.SnoozeRequest, {}, [{"field": "seconds", "message": "is required"}]),
    (schemas.SnoozeRequest, {"seconds": True}, [{"field": "seconds", "message": "must be a number"}]),
    (schemas.SnoozeRequest, {"seconds": 59}, [{"field": "seconds", "message": "must be at least 60"}]),
    (schemas.RespondRequest, {"actor": "x"}, [{"field": "actor", "message": "unknown field"}]),
    (schemas.SendNotificationRequest, {"source": "s", "title": "t", "channels": ["a", ""]},
     [{"field": "channels", "message": "must not be blank"}]),
    (schemas.SendNotificationRequest, {"source": "s", "title": "t", "metadata": {"uns_resolution": 1}},
     [{"field": "metadata.uns_resolution", "message": "is reserved for UNS"}]),
    (policy_schemas.PolicyDraftRequest, {"content": {}, "status": "ACTIVE"},
     [{"field": "policy_id", "message": "is required"}, {"field": "status", "message": "unknown field"}]),
])
def test_a_schema_failure_is_invalid_request_naming_each_field(model, data, errors):
    with pytest.raises(InvalidRequest) as err:
        parse(model, data)
    assert err.value.code == "invalid_request" and err.value.status == 400
    assert err.value.extra["errors"] == errors


def test_values_uns_cannot_store_are_refused_before_the_schema():
    with pytest.raises(InvalidRequest) as err:
        parse(schemas.RespondRequest, {"metadata": {"v": float("inf")}, "bogus": 1})
    assert err.value.code == "parse_error"
    assert err.value.extra["errors"][0]["field"] == "metadata.v"
