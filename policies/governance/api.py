"""``/api/v1/governance/decisions``: governance over HTTP. Thin views: parse, call
``policies.governance.service``, render ``Decision.as_dict``. Errors are the runtime's typed errors
rendered as RFC 9457 problem details by the one handler."""
from drf_spectacular.utils import OpenApiParameter, extend_schema
from drf_spectacular.types import OpenApiTypes
from rest_framework import serializers
from rest_framework import status as http
from rest_framework.response import Response

from core.capabilities import MANAGE_POLICIES, SEND, VIEW_CONSOLE
from notifications.api.openapi import FreeObjectField, problems
from notifications.api.parsers import with_idempotency_header
from notifications.api.views import UNSView
from notifications.apps import runtime

from policies import selectors as policy_selectors, simulation

from . import service
from .models import STATES
from .schema import OUTCOMES, RISKS, GovernanceRequest

TAG = ["governance"]
DECISION_ID = OpenApiParameter("decision_id", OpenApiTypes.STR, OpenApiParameter.PATH,
                               description="The decision id (also the approval id of a REQUIRE_APPROVAL decision).")


class DecisionSerializer(serializers.Serializer):
    """``service.Decision.as_dict`` (keep in step)."""

    id = serializers.CharField()
    outcome = serializers.ChoiceField(choices=OUTCOMES, help_text="What the governance rules said.")
    state = serializers.ChoiceField(choices=STATES, help_text="pending | approved | denied | expired.")
    allowed = serializers.BooleanField(help_text="The action may go ahead now (`state` is approved).")
    approval_id = serializers.CharField(allow_null=True, help_text="For REQUIRE_APPROVAL: the id to check.")
    approval_notification_ids = serializers.ListField(child=serializers.CharField(),
                                                      help_text="The require_ack notifications approvers answer.")
    action = serializers.CharField()
    agent_id = serializers.CharField(allow_null=True)
    autonomy_mode = serializers.CharField(allow_null=True)
    intent = serializers.CharField(allow_null=True)
    resource = serializers.CharField(allow_null=True)
    risk = serializers.ChoiceField(choices=RISKS)
    reason = serializers.CharField()
    context = FreeObjectField()
    rule = serializers.CharField(allow_null=True, help_text="The matching rule; null: a risk default.")
    policy_id = serializers.CharField(allow_null=True)
    policy_version = serializers.IntegerField(allow_null=True)
    policy_hash = serializers.CharField(allow_null=True)
    revision = serializers.IntegerField(help_text="The policy revision the decision was made under.")
    snapshot_hash = serializers.CharField()
    approvals_required = serializers.IntegerField()
    approval_timeout_seconds = serializers.FloatField(allow_null=True)
    approver_channels = serializers.ListField(child=serializers.CharField())
    approved_by = serializers.ListField(child=serializers.CharField())
    decided_by = serializers.CharField(allow_null=True, help_text="Who settled it (`uns-policy` for ALLOW/DENY).")
    decided_at = serializers.FloatField(allow_null=True, help_text="Unix epoch seconds.")
    decided_at_iso = serializers.CharField(allow_null=True)
    principal = serializers.CharField()
    created_at = serializers.FloatField(help_text="Unix epoch seconds.")
    created_at_iso = serializers.CharField()
    created = serializers.BooleanField(help_text="False for an idempotent repeat or a read.")

    class Meta:
        ref_name = "GovernanceDecision"


class DecisionCollectionView(UNSView):
    """``POST /api/v1/governance/decisions``: may this agent perform this action now?

    Body: a ``GovernanceRequest``; an ``Idempotency-Key`` header stands in for
    ``idempotency_key``. Answers at once, never waiting for a human: 201 with the decision
    (ALLOW ``approved``, DENY ``denied``, REQUIRE_APPROVAL ``pending`` with ``approval_id``), 200
    with the same body for an idempotent repeat; 409 ``idempotency_conflict``; 422
    ``unknown_channel`` (an approver channel is not configured); 503 ``policy_unavailable``.
    """

    capabilities = {"POST": SEND}

    @extend_schema(tags=TAG, summary="Ask for a governance decision", request=GovernanceRequest,
                   parameters=[OpenApiParameter("Idempotency-Key", str, OpenApiParameter.HEADER,
                                                description="Stands in for `idempotency_key` (they must agree).")],
                   responses={201: DecisionSerializer, 200: DecisionSerializer, **problems(
                       c409="`idempotency_conflict`: the key was used with another request.",
                       c422="`unknown_channel`: an approver channel is not configured or disabled.",
                       c503="`policy_unavailable`: no policy can be resolved (fails closed).")})
    def post(self, request):
        body = request.data
        body = with_idempotency_header(body, request.headers.get("Idempotency-Key"))
        decision = service.decide_request(runtime(), request.user.get_username(), body)
        return Response(decision.as_dict(), status=http.HTTP_201_CREATED if decision.created else http.HTTP_200_OK,
                        headers={"Location": f"/api/v1/governance/decisions/{decision.id}"})


class DecisionDetailView(UNSView):
    """``GET /api/v1/governance/decisions/{id}``: the decision's state (pending | approved |
    denied | expired), who decided and when. Console readers see any decision; a producer the
    ones it asked for; 404 otherwise."""

    capabilities = {"GET": (VIEW_CONSOLE, SEND)}

    @extend_schema(tags=TAG, summary="One governance decision", parameters=[DECISION_ID],
                   responses={200: DecisionSerializer, **problems(c404="No such decision (or not one you may see).")})
    def get(self, request, decision_id):
        return Response(policy_selectors.visible_decision(request.user, decision_id).as_dict())


class ApprovalSettingsSerializer(serializers.Serializer):
    channels = serializers.ListField(child=serializers.CharField())
    timeout_seconds = serializers.FloatField()
    approvals_required = serializers.IntegerField()

    class Meta:
        ref_name = "GovernanceApproval"


class GovernanceIdempotencySerializer(serializers.Serializer):
    outcome = serializers.ChoiceField(choices=("new", "repeat", "conflict"))
    decision_id = serializers.CharField(allow_null=True)

    class Meta:
        ref_name = "GovernanceIdempotency"


class GovernanceSimulationSerializer(serializers.Serializer):
    """``policies.simulation.simulate_governance`` (keep in step)."""

    revision = serializers.IntegerField()
    snapshot_hash = serializers.CharField()
    initialized = serializers.BooleanField()
    outcome = serializers.ChoiceField(choices=OUTCOMES)
    rule = serializers.CharField(allow_null=True)
    reason = serializers.CharField()
    policy_id = serializers.CharField(allow_null=True)
    policy_version = serializers.IntegerField(allow_null=True)
    policy_hash = serializers.CharField(allow_null=True)
    approval = ApprovalSettingsSerializer(allow_null=True)
    idempotency = GovernanceIdempotencySerializer()

    class Meta:
        ref_name = "GovernanceSimulation"


class DecisionSimulateView(UNSView):
    """``POST /api/v1/governance/simulate``: what a decision request would get now (outcome,
    rule, policy identity, approval settings, idempotency outcome), creating nothing."""

    capabilities = {"POST": (SEND, MANAGE_POLICIES)}

    @extend_schema(tags=TAG, summary="Simulate a governance decision", request=GovernanceRequest,
                   responses={200: GovernanceSimulationSerializer,
                              **problems(c503="No usable policy revision (fails closed).")})
    def post(self, request):
        return Response(simulation.simulate_governance(request.user.get_username(), request.data))
