"""OpenAPI 3 for the HTTP API (drf-spectacular): ``/api/schema/`` and Swagger UI at ``/api/docs/``.

Every body is a pydantic model, rendered by drf-spectacular's pydantic extension: a request
body is its verb's input schema (``notifications.runtime.schemas``, the model the views parse
with; ``UNSSchemaExtension`` only makes it emit OpenAPI 3.0 ``nullable``), a response body its
payload model (``notifications.payloads``, ``policies.payloads``; ``PayloadExtension``).
``tests/api/test_schemathesis.py`` checks every response against this description.

``UNSAutoSchema`` adds what every operation shares, so no view can forget it: the problem-details
responses (401/403 for capability-gated views, 400/413/415 for bodies, 404 for ``{id}`` paths),
the Bearer security scheme, and the capability each method needs (from ``view.capabilities``).
"""
from drf_spectacular.contrib.pydantic import PydanticExtension
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.openapi import AutoSchema
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.plumbing import ResolvedComponent
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse
from pydantic.json_schema import GenerateJsonSchema, model_json_schema
from rest_framework.permissions import AllowAny

from notifications import payloads

from .permissions import HasCapability

PROBLEM = "application/problem+json"


class BearerTokenScheme(OpenApiAuthenticationExtension):
    target_class = "notifications.api.auth.BearerTokenAuthentication"
    name = "bearerAuth"
    priority = 1

    def get_security_definition(self, auto_schema):
        return {"type": "http", "scheme": "bearer",
                "description": "A UNS API token (`python manage.py uns_token`), sent as `Authorization: Bearer <token>`."}


class RoutingKeyScheme(OpenApiAuthenticationExtension):
    """The PagerDuty endpoint authenticates by the ``routing_key`` body field; OpenAPI has no
    scheme for a body field, so the operation declares no security and documents the field."""

    target_class = "notifications.integrations.pagerduty.RoutingKeyAuthentication"
    name = "pagerDutyRoutingKey"
    priority = 1

    def get_security_requirement(self, auto_schema):
        return {}  # anonymous as far as OpenAPI can tell: the key is in the body

    def get_security_definition(self, auto_schema):
        return {"type": "apiKey", "in": "header", "name": "X-Unused-See-routing_key",
                "description": "Not a header: the PagerDuty routing_key body field carries the API token."}


class OpenAPI30JsonSchema(GenerateJsonSchema):
    """pydantic's JSON Schema as OpenAPI 3.0 reads it: ``X | None`` is ``X`` with ``nullable: true``
    (3.0 has no ``type: "null"``)."""

    def nullable_schema(self, schema):
        return {**self.generate_inner(schema["schema"]), "nullable": True}


class UNSSchemaExtension(PydanticExtension):
    """drf-spectacular's pydantic extension for the verbs' input schemas
    (``core.schema.Schema``): the same JSON Schema the MCP tools publish,
    nullable members spelled the OpenAPI 3.0 way, the component named after the class."""

    target_class = "core.schema.Schema"
    match_subclasses = True
    priority = 1

    def get_name(self, auto_schema, direction):
        # COMPONENT_SPLIT_REQUEST appends "Request" to request components: SendNotificationRequest
        # keeps its name.
        return super().get_name(auto_schema, direction).removesuffix("Request")

    def map_serializer(self, auto_schema, direction):
        # A nested model (a silence's matchers, an on-call schedule's layers) becomes a component of its own, named after its class.
        schema = model_json_schema(self.target, mode="validation", schema_generator=OpenAPI30JsonSchema,
                                   ref_template="#/components/schemas/{model}")
        for name, sub in schema.pop("$defs", {}).items():
            auto_schema.registry.register_on_missing(ResolvedComponent(
                name=name, type=ResolvedComponent.SCHEMA, object=name, schema=sub))
        return schema


class OpenAPI30PayloadSchema(OpenAPI30JsonSchema):
    """A ``Payload`` model (``notifications.payloads``) as drf-spectacular describes a serializer:
    no titles or defaults, ``format: double`` numbers, ``required`` sorted, and no
    ``additionalProperties`` on a model (a test validating a body still refuses unknown members)."""

    def float_schema(self, schema):
        return {**super().float_schema(schema), "format": "double"}

    def nullable_schema(self, schema):
        inner = self.generate_inner(schema["schema"])
        if "$ref" in inner:  # OpenAPI 3.0 ignores a $ref's siblings
            return {"allOf": [inner], "nullable": True}
        return {**inner, "nullable": True}

    def generate(self, schema, mode="validation"):
        return _as_serializer(super().generate(schema, mode=mode))


def _as_serializer(schema):
    """``schema`` (pydantic's JSON Schema of a ``Payload``) in the form drf-spectacular gives a
    DRF serializer: the changes ``OpenAPI30PayloadSchema`` lists, and an enum as a ChoiceField's
    (its choices in the description, ``null`` among them when nullable), which the enum
    post-processing hook turns into the named enum components."""
    if isinstance(schema, list):
        return [_as_serializer(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {}
    for key, value in schema.items():
        if key in ("title", "default"):
            continue
        if key in ("properties", "$defs"):
            out[key] = {name: _as_serializer(sub) for name, sub in value.items()}
        elif key == "required":
            out[key] = sorted(value)
        elif key in ("items", "anyOf", "oneOf", "allOf", "additionalProperties"):
            out[key] = _as_serializer(value)
        else:
            out[key] = value
    if "properties" in out and isinstance(out.get("additionalProperties"), bool):
        del out["additionalProperties"]
    if "const" in out:
        out["enum"] = [out.pop("const")]
    if "enum" in out:  # as a DRF ChoiceField: its choices listed, null one of them when nullable
        choices = "\n".join(f"* `{v}` - {v}" for v in out["enum"])
        out["description"] = f"{out['description']}\n\n{choices}" if out.get("description") else choices
        if out.get("nullable") and None not in out["enum"]:
            out["enum"] = [*out["enum"], None]
    if "allOf" in out and len(out["allOf"]) == 1 and set(out) == {"allOf"}:
        return out["allOf"][0]
    return out


class PayloadExtension(PydanticExtension):
    """drf-spectacular's pydantic extension for the response models (``notifications.payloads``,
    ``policies.payloads``, ``notifications.integrations.payloads``): each model and the models it
    nests become components named after their classes (``<name>Request`` for request bodies)."""

    target_class = "notifications.payloads.Payload"
    match_subclasses = True
    priority = 1

    def map_serializer(self, auto_schema, direction):
        suffix = "Request" if direction == "request" else ""
        schema = model_json_schema(self.target, mode="validation", schema_generator=OpenAPI30PayloadSchema,
                                   ref_template="#/components/schemas/{model}" + suffix)
        for name, sub in schema.pop("$defs", {}).items():
            auto_schema.registry.register_on_missing(ResolvedComponent(
                name=name + suffix, type=ResolvedComponent.SCHEMA, object=name + suffix, schema=sub))
        return schema


def problem(description: str) -> OpenApiResponse:
    return OpenApiResponse(payloads.Problem, description=description)


def problems(**codes: str) -> dict:
    """``problems(c404="...", c409="...")`` -> extend_schema ``responses`` entries."""
    return {(int(k[1:]), PROBLEM): problem(v) for k, v in codes.items()}


IDEMPOTENCY_KEY = OpenApiParameter("Idempotency-Key", OpenApiTypes.STR, OpenApiParameter.HEADER,
                                   description="A retry with the same key by the same principal returns the first result.")
RESPONSE_CONFLICTS = "`ack_not_required`, `not_awaiting_ack`, `ack_timed_out` or `ack_conflict`."


NOTIFICATION_ID = OpenApiParameter("notification_id", OpenApiTypes.STR, OpenApiParameter.PATH,
                                   description="The notification id (a 36-character UUID string).")
LIMIT = OpenApiParameter("limit", OpenApiTypes.INT, description="Page size, 1..500 (default 100).")
CURSOR = OpenApiParameter("cursor", OpenApiTypes.STR, description="The `next` cursor of the previous page.")


# --- the AutoSchema ---------------------------------------------------------------------------

class UNSAutoSchema(AutoSchema):
    """Adds the responses, security and capability notes every UNS operation shares."""

    def get_operation(self, path, path_regex, path_prefix, method, registry):
        operation = super().get_operation(path, path_regex, path_prefix, method, registry)
        if operation is None or not path.startswith("/api/v1/"):
            return operation
        responses = operation["responses"]
        shape = getattr(self.view, "error_shape", "problem")
        wanted = {}
        if self.method in ("POST", "PUT", "PATCH", "DELETE"):
            wanted["413"] = "The body is larger than UNS_MAX_BODY_BYTES."
        if shape == "problem":
            permissions = self.view.get_permissions()
            if any(not isinstance(p, AllowAny) for p in permissions):
                wanted["401"] = "Missing, unknown or expired credentials."
            if any(isinstance(p, HasCapability) for p in permissions):
                wanted["403"] = "The principal lacks the capability this method needs."
            wanted["400"] = ("Invalid input (`errors` lists each problem), a body that is not JSON text UNS can store "
                             "(`parse_error`: also NUL or lone surrogates), or a query with NUL (`invalid_query`).")
            if self.method in ("POST", "PUT", "PATCH"):
                wanted["415"] = "The body is not JSON."
            if "{notification_id}" in path:
                wanted["404"] = "No such notification (or not one the caller may see)."
            if "{name}" in path and path.startswith("/api/v1/channels/"):
                wanted["404"] = "`channel_not_found`: no channel of that name."
        if wanted:
            ref = self.resolve_serializer(payloads.Problem, "response").ref
            for code, description in wanted.items():
                responses.setdefault(code, {"description": description, "content": {PROBLEM: {"schema": ref}}})
        declared = getattr(self.view, "capabilities", {})
        if self.method in declared:
            needed = declared[self.method]
            if needed:
                names = (needed,) if isinstance(needed, str) else needed
                note = "**Capability:** " + " or ".join(f"`{n}`" for n in names)
            else:
                note = "**Capability:** none (declared as needing none)"
            operation["description"] = f"{operation.get('description', '')}\n\n{note}".strip()
        return operation

    def get_response_serializers(self):
        serializers_ = super().get_response_serializers()
        # A view nobody described still answers JSON: say "an object" rather than "no body".
        return OpenApiTypes.OBJECT if serializers_ is None else serializers_

    def _get_serializer(self):
        view = self.view
        if not hasattr(view, "get_serializer") and not hasattr(view, "serializer_class"):
            return None  # plain APIViews parse with the runtime; don't warn about guessing
        return super()._get_serializer()


def only_public_api(endpoints, **kwargs):
    """Preprocessing hook: the schema describes ``/api/v1/``; the console's ``/ui/`` read models
    are not a public API."""
    return [e for e in endpoints if e[0].startswith("/api/v1/")]
