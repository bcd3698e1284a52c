"""``/api/v1/policies``: the policy lifecycle over HTTP. Thin views: parse, call the policy store
or a selector, render. Capability ``policies.manage_policies`` (the ``policy_admin`` group);
simulation also accepts producers (``notifications.send_notification``). Errors are the store's
typed errors rendered as RFC 9457 problem details by the one handler."""
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status as http
from rest_framework.response import Response

from core.capabilities import MANAGE_POLICIES, SEND
from core.errors import InvalidRequest
from core.schema import parse, parse_dict
from notifications.api.openapi import problems
from notifications.api.views import UNSView
from notifications.apps import runtime
from notifications.runtime.schemas import SimulateRequest
from policies import selectors, simulation, store
from policies.models import STATUSES
from policies.payloads import PolicyList, PolicyRevisionList, PolicySimulation, PolicyTransition, PolicyVersion
from policies.schemas import (PolicyCloneRequest, PolicyDraftRequest, PolicyEditRequest,
                              PolicyTransitionRequest, is_policy_id)


TAG = ["policies"]
VERSION_404 = problems(c404="No such policy version.")


def _actor(request) -> str:
    return request.user.get_username()


def _version(row, *, with_content: bool = False) -> dict:
    _, content = selectors.get_version(row.policy_id, row.version)
    return selectors.version_view(row, content=content, with_content=with_content)


def _transition(result: store.Transition) -> dict:
    return {
        "policy": _version(result.policy),
        "replaced": _version(result.replaced) if result.replaced is not None else None,
        "revision": result.revision,
        "changed": result.changed,
    }


class PolicyCollectionView(UNSView):
    """``GET /api/v1/policies``: the current revision and every version (filters ``status``,
    ``policy_id``). ``POST /api/v1/policies``: ``{"policy_id", "content"}`` stores a new DRAFT
    version (201); 400 ``invalid_policy_content`` names each bad field."""

    capabilities = {"GET": MANAGE_POLICIES, "POST": MANAGE_POLICIES}

    @extend_schema(tags=TAG, responses={200: PolicyList, **problems(c400="Unknown status filter.")},
                   parameters=[OpenApiParameter("status", str, enum=list(STATUSES)),
                               OpenApiParameter("policy_id", str)])
    def get(self, request):
        status = request.query_params.get("status")
        if status is not None and status not in STATUSES:
            raise InvalidRequest("unknown status", errors=[{"field": "status", "message": f"one of {list(STATUSES)}"}])
        policy_id = request.query_params.get("policy_id")
        if policy_id is not None and not is_policy_id(policy_id):
            raise InvalidRequest("invalid policy_id", errors=[{"field": "policy_id", "message": "not a policy id"}])
        return Response({"current": selectors.current_view(),
                         "items": selectors.list_versions(status=status, policy_id=policy_id)})

    @extend_schema(tags=TAG, request=PolicyDraftRequest,
                   responses={201: PolicyVersion,
                              **problems(c409="Concurrent creations kept taking the next version; retry.")})
    def post(self, request):
        body = parse(PolicyDraftRequest, request.data)
        row = store.create_draft(body.policy_id, body.content, actor=_actor(request))
        return Response(_version(row, with_content=True), status=http.HTTP_201_CREATED,
                        headers={"Location": f"/api/v1/policies/{row.policy_id}/versions/{row.version}"})


class PolicyVersionView(UNSView):
    """``GET /api/v1/policies/{policy_id}/versions/{version}``: one version with its content.
    ``PUT``: ``{"content", "expected_hash"?}`` replaces a DRAFT's content; 409
    ``policy_not_draft`` for ACTIVE and RETIRED versions, ``policy_edit_conflict`` when
    ``expected_hash`` is stale."""

    capabilities = {"GET": MANAGE_POLICIES, "PUT": MANAGE_POLICIES}

    @extend_schema(tags=TAG, responses={200: PolicyVersion, **VERSION_404})
    def get(self, request, policy_id, version):
        row, content = selectors.get_version(policy_id, version)
        return Response(selectors.version_view(row, content=content, with_content=True))

    @extend_schema(tags=TAG, request=PolicyEditRequest,
                   responses={200: PolicyVersion, **VERSION_404,
                              **problems(c409="Not a DRAFT, or edited concurrently.")})
    def put(self, request, policy_id, version):
        body = parse(PolicyEditRequest, request.data)
        row = store.edit_draft(policy_id, version, body.content, actor=_actor(request),
                               expected_hash=body.expected_hash)
        return Response(_version(row, with_content=True))


class ActivateView(UNSView):
    """``POST .../activate``: DRAFT -> ACTIVE; retires the policy's ACTIVE version, bumps the
    revision and writes its snapshot. 409 ``policy_retired`` (clone it instead), 400
    ``invalid_policy_content``; repeating on the ACTIVE version is a no-op (``changed`` false)."""

    capabilities = {"POST": MANAGE_POLICIES}

    @extend_schema(tags=TAG, request=PolicyTransitionRequest,
                   responses={200: PolicyTransition, **VERSION_404,
                              **problems(c409="The version is RETIRED (final).")})
    def post(self, request, policy_id, version):
        parse(PolicyTransitionRequest, request.data)
        return Response(_transition(store.activate(policy_id, version, actor=_actor(request))))


class RetireView(UNSView):
    """``POST .../retire``: ACTIVE -> RETIRED (new revision without it) or DRAFT -> RETIRED.
    409 ``default_policy_required`` for the default policy's ACTIVE version."""

    capabilities = {"POST": MANAGE_POLICIES}

    @extend_schema(tags=TAG, request=PolicyTransitionRequest,
                   responses={200: PolicyTransition, **VERSION_404,
                              **problems(c409="The default policy cannot be retired, only replaced.")})
    def post(self, request, policy_id, version):
        parse(PolicyTransitionRequest, request.data)
        return Response(_transition(store.retire(policy_id, version, actor=_actor(request))))


class CloneView(UNSView):
    """``POST .../clone``: a new DRAFT with this version's content (any status), optionally under
    another ``policy_id``. 201 with the new version."""

    capabilities = {"POST": MANAGE_POLICIES}

    @extend_schema(tags=TAG, request=PolicyCloneRequest, responses={201: PolicyVersion, **VERSION_404})
    def post(self, request, policy_id, version):
        body = parse(PolicyCloneRequest, request.data)
        row = store.clone(policy_id, version, actor=_actor(request), new_policy_id=body.policy_id)
        return Response(_version(row, with_content=True), status=http.HTTP_201_CREATED,
                        headers={"Location": f"/api/v1/policies/{row.policy_id}/versions/{row.version}"})


class RevisionListView(UNSView):
    """``GET /api/v1/policies/revisions``: the revision history, newest first (at most 100)."""

    capabilities = {"GET": MANAGE_POLICIES}

    @extend_schema(tags=TAG, responses={200: PolicyRevisionList})
    def get(self, request):
        return Response({"items": selectors.revision_history()})


class SimulateView(UNSView):
    """``POST /api/v1/policies/simulate``: body a ``SimulateRequest`` (a SendNotificationRequest
    whose ``title`` may be left out); answers what intake
    would resolve and decide for the caller now (effective settings, matched rule, revision and
    hashes, dedup role, idempotency outcome), creating no row anywhere."""

    capabilities = {"POST": (SEND, MANAGE_POLICIES)}

    @extend_schema(tags=TAG, request=SimulateRequest,
                   responses={200: PolicySimulation,
                              **problems(c422="A named channel is not configured.",
                                         c503="No usable policy revision (fails closed).")})
    def post(self, request):
        body = parse_dict(SimulateRequest, request.data)
        return Response(simulation.simulate(_actor(request), body, now=runtime().clock()))
