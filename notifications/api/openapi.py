"""OpenAPI 3 for the HTTP API (drf-spectacular): ``/api/schema/`` and Swagger UI at ``/api/docs/``.

Request bodies are not described here: each verb's body is its input schema
(``notifications.runtime.schemas``, pydantic), the model the views parse with, rendered by
drf-spectacular's pydantic extension (``UNSSchemaExtension`` below only makes it emit OpenAPI 3.0
``nullable``). The serializers here describe response bodies (the views render ``selectors``
dicts, not serializers); keep them in step with ``selectors``. ``tests/api/test_schemathesis.py``
checks every response against this description.

``UNSAutoSchema`` adds what every operation shares, so no view can forget it: the problem-details
responses (401/403 for capability-gated views, 400/413/415 for bodies, 404 for ``{id}`` paths),
the Bearer security scheme, and the capability each method needs (from ``view.capabilities``).
"""
from drf_spectacular.contrib.pydantic import PydanticExtension
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.openapi import AutoSchema
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema_field
from rest_framework import serializers
from pydantic.json_schema import GenerateJsonSchema, model_json_schema
from rest_framework.permissions import AllowAny

from core import channel_kinds
from notifications.runtime import dedup

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
        return model_json_schema(self.target, mode="validation", schema_generator=OpenAPI30JsonSchema)


# --- shared shapes ---------------------------------------------------------------------------

@extend_schema_field({"type": "object", "additionalProperties": True})
class FreeObjectField(serializers.JSONField):
    """A JSON object with any members."""


@extend_schema_field({})
class AnyJSONField(serializers.JSONField):
    """Any JSON value."""


class ProblemSerializer(serializers.Serializer):
    """RFC 9457 problem details; extension members (``errors``, ``limit_bytes``, ...) may follow."""

    type = serializers.CharField(help_text="`urn:uns:problem:<code>`")
    title = serializers.CharField()
    status = serializers.IntegerField()
    detail = serializers.CharField()
    code = serializers.CharField(help_text="Stable machine-readable error code.")
    instance = serializers.CharField(required=False, help_text="The request path.")
    errors = AnyJSONField(required=False, help_text="For invalid input: a list of `{field, message}`.")

    class Meta:
        ref_name = "Problem"


def page_of(item: type[serializers.Serializer], ref_name: str) -> type[serializers.Serializer]:
    """The response of a paged list, ``pagination.page_body``: ``{"items": [item, ...], "next"}``,
    described once for every list (component ``ref_name``)."""
    meta = type("Meta", (), {"ref_name": ref_name})
    return type(f"{ref_name}Serializer", (serializers.Serializer,), {
        "items": item(many=True),
        "next": serializers.CharField(allow_null=True, help_text="Cursor of the next page; null on the last page."),
        "Meta": meta,
    })


def problem(description: str) -> OpenApiResponse:
    return OpenApiResponse(ProblemSerializer, description=description)


def problems(**codes: str) -> dict:
    """``problems(c404="...", c409="...")`` -> extend_schema ``responses`` entries."""
    return {(int(k[1:]), PROBLEM): problem(v) for k, v in codes.items()}


class EventSerializer(serializers.Serializer):
    id = serializers.CharField()
    kind = serializers.CharField(help_text="An event kind of the support reference (ACCEPTED, ACKED, ...).")
    at = serializers.FloatField(help_text="Unix epoch seconds.")
    at_iso = serializers.CharField()
    payload = FreeObjectField()

    class Meta:
        ref_name = "Event"


class IntakeSummarySerializer(serializers.Serializer):
    id = serializers.CharField()
    status = serializers.CharField()
    dedup_role = serializers.ChoiceField(choices=dedup.ROLES)
    owner_id = serializers.CharField(allow_null=True)
    policy_id = serializers.CharField()
    policy_revision = serializers.IntegerField()
    effective_hash = serializers.CharField()

    class Meta:
        ref_name = "IntakeSummary"


class TimesSerializer(serializers.Serializer):
    """The reference's Float epoch-second columns, each beside its ISO-8601 UTC rendering."""

    next_attempt = serializers.FloatField(allow_null=True, help_text="Unix epoch seconds.")
    next_attempt_iso = serializers.CharField(allow_null=True)
    lease_until = serializers.FloatField(allow_null=True, help_text="Unix epoch seconds; 0 when unleased.")
    lease_until_iso = serializers.CharField(allow_null=True)
    delivered_at = serializers.FloatField(allow_null=True, help_text="Unix epoch seconds.")
    delivered_at_iso = serializers.CharField(allow_null=True)
    deadline = serializers.FloatField(allow_null=True, help_text="Unix epoch seconds: the ACK deadline.")
    deadline_iso = serializers.CharField(allow_null=True)
    responded_at = serializers.FloatField(allow_null=True, help_text="Unix epoch seconds.")
    responded_at_iso = serializers.CharField(allow_null=True)


class NotificationDetailSerializer(IntakeSummarySerializer, TimesSerializer):
    principal = serializers.CharField()
    notification = FreeObjectField(help_text="The accepted request, frozen, with `metadata.uns_resolution`.")
    outcome = FreeObjectField()
    attempts = serializers.IntegerField()
    cycle = serializers.IntegerField()
    cycle_attempts = serializers.IntegerField()
    dead_letter = serializers.BooleanField()
    dedup_generation = serializers.IntegerField(allow_null=True)
    dedup_successor_id = serializers.CharField(allow_null=True)
    leased = serializers.BooleanField()
    ack_status = serializers.CharField(allow_null=True)
    actor = serializers.CharField(allow_null=True)
    response_metadata = FreeObjectField(allow_null=True)
    timeline = EventSerializer(many=True, required=False, help_text="Only on `GET /api/v1/notifications/{id}`.")

    class Meta:
        ref_name = "Notification"


class NotificationListItemSerializer(TimesSerializer):
    id = serializers.CharField()
    principal = serializers.CharField()
    source = serializers.CharField(allow_null=True)
    title = serializers.CharField(allow_null=True)
    severity = serializers.CharField(allow_null=True)
    dedup_key = serializers.CharField(allow_null=True, help_text="The request's dedup_key.")
    require_ack = serializers.BooleanField()
    status = serializers.CharField()
    dead_letter = serializers.BooleanField()
    dedup_role = serializers.ChoiceField(choices=dedup.ROLES)
    owner_id = serializers.CharField(allow_null=True)
    attempts = serializers.IntegerField()
    cycle = serializers.IntegerField()
    ack_status = serializers.CharField(allow_null=True)
    actor = serializers.CharField(allow_null=True)
    accepted_at = serializers.FloatField(allow_null=True, help_text="Acceptance time, Unix epoch seconds.")
    accepted_at_iso = serializers.CharField(allow_null=True)

    class Meta:
        ref_name = "NotificationListItem"


NotificationPageSerializer = page_of(NotificationListItemSerializer, "NotificationPage")


EventPageSerializer = page_of(EventSerializer, "EventPage")


class DeadLetterItemSerializer(serializers.Serializer):
    id = serializers.CharField()
    source = serializers.CharField(allow_null=True)
    title = serializers.CharField(allow_null=True)
    error_message = serializers.CharField(allow_null=True)
    channels_failed = AnyJSONField()
    cycle = serializers.IntegerField()
    cycle_attempts = serializers.IntegerField()
    attempts = serializers.IntegerField()
    accepted_at = serializers.FloatField(help_text="Acceptance time, epoch seconds (the list's order).")
    accepted_at_iso = serializers.CharField()
    failed_at = serializers.FloatField(allow_null=True, help_text="When the settle that dead-lettered it happened, "
                                                                 "epoch seconds (its newest FAILED delivery audit record).")
    failed_at_iso = serializers.CharField(allow_null=True)
    replay_blocked = serializers.BooleanField()
    replay_blocker = FreeObjectField(allow_null=True, help_text="`{code, successor_id, successor_status}` or null.")

    class Meta:
        ref_name = "DeadLetterItem"


DeadLetterPageSerializer = page_of(DeadLetterItemSerializer, "DeadLetterPage")


class EscalationSerializer(serializers.Serializer):
    id = serializers.CharField(help_text="The escalation notification.")
    number = serializers.IntegerField()
    level = serializers.IntegerField(help_text="The escalation chain level (1-based) it was sent for.")
    channels = serializers.ListField(child=serializers.CharField(), help_text="That level's channels.")
    target = serializers.CharField(help_text="The first of `channels` (the one-target form's target).")
    status = serializers.CharField()

    class Meta:
        ref_name = "Escalation"


class EscalatedNotificationSerializer(NotificationDetailSerializer):
    escalation = EscalationSerializer()

    class Meta:
        ref_name = "EscalatedNotification"


IDEMPOTENCY_KEY = OpenApiParameter("Idempotency-Key", OpenApiTypes.STR, OpenApiParameter.HEADER,
                                   description="A retry with the same key by the same principal returns the first result.")
RESPONSE_CONFLICTS = "`ack_not_required`, `not_awaiting_ack`, `ack_timed_out` or `ack_conflict`."


class LoginRequestSerializer(serializers.Serializer):
    username = serializers.CharField()
    password = serializers.CharField()

    class Meta:
        ref_name = "LoginRequest"


class LoginSerializer(serializers.Serializer):
    username = serializers.CharField()
    expiry = serializers.FloatField(help_text="When the session ends, Unix epoch seconds.")
    expiry_iso = serializers.CharField()
    csrf_token = serializers.CharField(help_text="Send as X-CSRFToken on every state-changing request made with the "
                                       "session (set in an HttpOnly, SameSite=Strict cookie by this answer); keep it in memory.")

    class Meta:
        ref_name = "Login"


# --- compatible intake (notifications/integrations/) --------------------------------------------------------------

class PagerDutyPayloadSerializer(serializers.Serializer):
    summary = serializers.CharField(max_length=1024, help_text="The title (clipped to 500 characters).")
    source = serializers.CharField(max_length=255)
    severity = serializers.ChoiceField(choices=["critical", "error", "warning", "info"])
    timestamp = serializers.DateTimeField(required=False, help_text="ISO-8601.")
    component = serializers.CharField(required=False)
    group = serializers.CharField(required=False)
    # "class" is a Python keyword: declared below
    custom_details = AnyJSONField(required=False)

    class Meta:
        ref_name = "PagerDutyPayload"


PagerDutyPayloadSerializer._declared_fields["class"] = serializers.CharField(required=False)


class PagerDutyLinkSerializer(serializers.Serializer):
    href = serializers.CharField()
    text = serializers.CharField(required=False)

    class Meta:
        ref_name = "PagerDutyLink"


class PagerDutyImageSerializer(serializers.Serializer):
    src = serializers.CharField()
    href = serializers.CharField(required=False)
    alt = serializers.CharField(required=False)

    class Meta:
        ref_name = "PagerDutyImage"


class PagerDutyEventSerializer(serializers.Serializer):
    """A PagerDuty Events API v2 alert event. Unknown members are ignored."""

    routing_key = serializers.CharField(help_text="A UNS API token (producer; responder to acknowledge/resolve).")
    event_action = serializers.ChoiceField(choices=["trigger", "acknowledge", "resolve"])
    dedup_key = serializers.CharField(max_length=255, required=False,
                                      help_text="Required to acknowledge/resolve; generated for a trigger without one.")
    payload = PagerDutyPayloadSerializer(required=False, help_text="Required to trigger.")
    links = PagerDutyLinkSerializer(many=True, required=False)
    images = PagerDutyImageSerializer(many=True, required=False)
    client = serializers.CharField(required=False)
    client_url = serializers.CharField(required=False)

    class Meta:
        ref_name = "PagerDutyEvent"


class PagerDutyResultSerializer(serializers.Serializer):
    status = serializers.CharField(help_text='"success"')
    message = serializers.CharField(help_text='"Event processed"')
    dedup_key = serializers.CharField()
    uns = FreeObjectField(help_text="UNS' own account: `{notification_id, status, dedup_role}` for a trigger, "
                                    "`{settled, unsettled}` for acknowledge/resolve.")

    class Meta:
        ref_name = "PagerDutyResult"


class PagerDutyErrorSerializer(serializers.Serializer):
    status = serializers.CharField(help_text='"invalid event" for 400')
    message = serializers.CharField()
    errors = serializers.ListField(child=serializers.CharField())

    class Meta:
        ref_name = "PagerDutyError"


@extend_schema_field({"type": "object", "additionalProperties": {"type": "string"}})
class StringMapField(serializers.JSONField):
    """A JSON object of strings (labels, annotations)."""


class AlertSerializer(serializers.Serializer):
    status = serializers.ChoiceField(choices=["firing", "resolved"])
    labels = StringMapField()
    annotations = StringMapField(required=False)
    startsAt = serializers.DateTimeField()
    endsAt = serializers.CharField(required=False)
    generatorURL = serializers.CharField(required=False)
    fingerprint = serializers.CharField(max_length=255)

    class Meta:
        ref_name = "AlertmanagerAlert"


class AlertmanagerMessageSerializer(serializers.Serializer):
    """Alertmanager's webhook message, payload version 4. Unknown members are ignored."""

    version = serializers.ChoiceField(choices=["4"])
    groupKey = serializers.CharField(required=False)
    truncatedAlerts = serializers.IntegerField(required=False)
    status = serializers.ChoiceField(choices=["firing", "resolved"], required=False)
    receiver = serializers.CharField(required=False)
    groupLabels = StringMapField(required=False)
    commonLabels = StringMapField(required=False)
    commonAnnotations = StringMapField(required=False)
    externalURL = serializers.CharField(required=False)
    alerts = AlertSerializer(many=True)

    class Meta:
        ref_name = "AlertmanagerMessage"


class AlertResultSerializer(serializers.Serializer):
    fingerprint = serializers.CharField()
    status = serializers.ChoiceField(choices=["firing", "resolved"])
    result = serializers.ChoiceField(choices=["accepted", "duplicate", "resolved"])
    notification_id = serializers.CharField(required=False, allow_null=True, help_text="For firing alerts.")
    settled = serializers.ListField(child=serializers.CharField(), required=False,
                                    help_text="Resolved: the notifications acknowledged.")
    unsettled = serializers.ListField(child=FreeObjectField(), required=False,
                                      help_text="Resolved: open notifications not acknowledged, `{id, code}`.")

    class Meta:
        ref_name = "AlertmanagerAlertResult"


class AlertmanagerResultSerializer(serializers.Serializer):
    status = serializers.CharField(help_text='"success"')
    received = serializers.IntegerField()
    alerts = AlertResultSerializer(many=True)

    class Meta:
        ref_name = "AlertmanagerResult"


class BulkItemResultSerializer(serializers.Serializer):
    ordinal = serializers.IntegerField(help_text="Position in the bulk action (list order).")
    notification_id = serializers.CharField()
    result = serializers.ChoiceField(choices=["settled", "refused"], allow_null=True,
                                     help_text="null: not run yet.")
    code = serializers.CharField(allow_null=True, help_text="For a refusal: the runtime's problem code.")
    detail = serializers.CharField(allow_null=True)
    actor = serializers.CharField(allow_null=True)
    at = serializers.FloatField(allow_null=True, help_text="Unix epoch seconds.")
    at_iso = serializers.CharField(allow_null=True)

    class Meta:
        ref_name = "BulkItemResult"


class BulkProgressSerializer(serializers.Serializer):
    """``runtime.bulk.progress``."""

    id = serializers.CharField()
    action = serializers.ChoiceField(choices=["replay", "resolve", "ack", "snooze"])
    list = serializers.ChoiceField(choices=["dlq", "inbox"])
    filter = FreeObjectField()
    params = FreeObjectField()
    created_by = serializers.CharField()
    created_at = serializers.FloatField()
    created_at_iso = serializers.CharField()
    expected = serializers.IntegerField(help_text="The N the operator confirmed.")
    matched = serializers.IntegerField(help_text="How many matched the filter at creation.")
    total = serializers.IntegerField(help_text="Items taken: min(expected, matched).")
    settled = serializers.IntegerField()
    refused = serializers.IntegerField()
    remaining = serializers.IntegerField()
    cursor = serializers.IntegerField(allow_null=True, help_text="Ordinal of the next unsettled item.")
    state = serializers.ChoiceField(choices=["RUNNING", "DONE"])
    finished_at = serializers.FloatField(allow_null=True)
    finished_at_iso = serializers.CharField(allow_null=True)

    class Meta:
        ref_name = "BulkProgress"


class BulkRunSerializer(BulkProgressSerializer):
    results = BulkItemResultSerializer(many=True, help_text="This call's per-item results.")

    class Meta:
        ref_name = "BulkRun"


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
            ref = self.resolve_serializer(ProblemSerializer, "response").ref
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


class ChannelSerializer(serializers.Serializer):
    """``selectors.channel_view``: a channel without its secret."""

    name = serializers.CharField()
    kind = serializers.ChoiceField(choices=channel_kinds.KINDS)
    enabled = serializers.BooleanField()
    config = FreeObjectField(help_text="Kind-specific settings; URL credentials masked.")
    has_secret = serializers.BooleanField(help_text="Whether a secret is set (it is write-only).")
    delivers_to = serializers.CharField(help_text="Where it delivers, credentials masked.")
    created_at = serializers.FloatField(help_text="Unix epoch seconds.")
    created_at_iso = serializers.CharField()

    class Meta:
        ref_name = "Channel"


class ChannelListSerializer(serializers.Serializer):
    items = ChannelSerializer(many=True)
    next = serializers.CharField(allow_null=True, help_text="Cursor of the next page, or null on the last.")

    class Meta:
        ref_name = "ChannelList"


class ChannelTestSerializer(serializers.Serializer):
    """``runtime.channels.TestResult``."""

    success = serializers.BooleanField()
    answer = serializers.CharField(help_text="The provider's answer (HTTP status and first bytes, SMTP reply, "
                                             "Apprise result), masked.")
    error = serializers.CharField(allow_null=True)

    class Meta:
        ref_name = "ChannelTestResult"
