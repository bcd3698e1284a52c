"""``/api/v1/governance/decisions``: governance over HTTP. Thin views: parse, call
``policies.governance.service``, render ``Decision.as_dict``. Errors are the runtime's typed errors
rendered as RFC 9457 problem details by the one handler."""
from drf_spectacular.utils import OpenApiParameter, extend_schema
from drf_spectacular.types import OpenApiTypes
from rest_framework import status as http
from rest_framework.response import Response

from core.capabilities import MANAGE_POLICIES, SEND, VIEW_CONSOLE
from notifications.api.openapi import problems
from notifications.api.parsers import with_idempotency_header
from notifications.api.views import UNSView
from notifications.apps import runtime

from policies import selectors as policy_selectors, simulation

from . import service
from .payloads import GovernanceDecision, GovernanceSimulation
from .schema import GovernanceRequest

TAG = ["governance"]
DECISION_ID = OpenApiParameter("decision_id", OpenApiTypes.STR, OpenApiParameter.PATH,
                               description="The decision id (also the approval id of a REQUIRE_APPROVAL decision).")


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
                   responses={201: GovernanceDecision, 200: GovernanceDecision, **problems(
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
                   responses={200: GovernanceDecision, **problems(c404="No such decision (or not one you may see).")})
    def get(self, request, decision_id):
        return Response(policy_selectors.visible_decision(request.user, decision_id).as_dict())


class DecisionSimulateView(UNSView):
    """``POST /api/v1/governance/simulate``: what a decision request would get now (outcome,
    rule, policy identity, approval settings, idempotency outcome), creating nothing."""

    capabilities = {"POST": (SEND, MANAGE_POLICIES)}

    @extend_schema(tags=TAG, summary="Simulate a governance decision", request=GovernanceRequest,
                   responses={200: GovernanceSimulation,
                              **problems(c503="No usable policy revision (fails closed).")})
    def post(self, request):
        return Response(simulation.simulate_governance(request.user.get_username(), request.data))
