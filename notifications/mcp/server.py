"""UNS as MCP tools, on the official SDK's ``MCPServer``.

Tools: ``send_notification``, ``get_notification``, ``list_pending_acks``, ``acknowledge``,
``dismiss``, ``simulate_policy``, ``list_audit`` (who did what: ``GET /api/v1/audit``), the silences
(``silence``, ``list_silences``, ``expire_silence``; operators), and the governance pair ``request_approval`` (a decision at
once, never waiting for a human) and ``check_approval`` (its state, with an optional wait of at
most ``governance.schema.ApprovalWait``'s 30 seconds). Each one resolves the calling principal (``auth.py``), checks
the Django permission (capability) it declares in ``CAPABILITIES``, then calls the runtime or a
selector in a worker thread (``database_sync_to_async``: the ORM is sync). Nothing else writes.

A domain failure is an MCP tool error (``isError: true``) whose structured content is the same
RFC 9457 problem body the HTTP API answers, stable ``code`` included; its text content is that
body as JSON, for clients that read only text.

The write-enabled server owns its recovery loops: its SDK lifespan starts a ``Worker``
(dispatch, timeout, callback) when the server starts and stops it on shutdown (architecture,
"Delivery and recovery"). ``with_worker=False`` serves the tools alone.
"""
import json
import logging
import time
from contextlib import asynccontextmanager
from typing import Annotated, Any

import anyio
import anyio.to_thread
from channels.db import database_sync_to_async
from django.http import QueryDict
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import AfterValidator, ConfigDict, Field, ValidationError, create_model

from core.capabilities import MANAGE_POLICIES, RESPOND, SEND, SILENCE, VIEW_CONSOLE
from core.json_values import check_value
from core.problems import problem
from core.schema import Schema, errors_of
from notifications import oncall_selectors, payloads, selectors
from notifications.access import visible_notification
from notifications.apps import runtime as process_runtime
from notifications.pagination import check_limit
from notifications.models import Silence
from notifications.runtime import InvalidRequest, Runtime, UNSError, schemas, silences
from notifications.runtime.worker import Worker
from policies import selectors as policy_selectors, simulation
from policies.governance.payloads import GovernanceDecision
from policies.payloads import PolicySimulation
from policies.governance import schema as governance_schema, service as governance

from .auth import KnoxTokenVerifier, authorize

log = logging.getLogger("uns.mcp")

INSTRUCTIONS = (
    "UNS, a durable notification service. send_notification accepts an obligation exactly once "
    "(pass idempotency_key to make retries safe) and returns its id; get_notification shows its "
    "delivery status, acknowledgement state and timeline. list_pending_acks lists delivered "
    "notifications awaiting a response; acknowledge or dismiss one before its deadline. "
    "simulate_policy shows which policy settings a request would get, creating nothing. Before a "
    "risky action, request_approval asks whether you may perform it: ALLOW and DENY answer at once; "
    "REQUIRE_APPROVAL returns an approval_id at once (never blocking) that check_approval reports on "
    "(pending | approved | denied | expired), optionally waiting a bounded time. list_audit shows "
    "who did what, when, to what (ACKs, replays, channel and policy changes, approvals). silence mutes "
    "matching notifications for a while (operators: e.g. matchers [{name: source, op: '=', value: "
    "'db-01'}], duration_seconds 3600); list_silences and expire_silence manage them. who_is_on_call "
    "answers whom a schedule, team or user would be paged as now (or at a given time). Errors "
    "carry a stable `code` (as UNS's HTTP problem details do)."
)

# The capability (Django permission) each tool needs; any one of a tuple suffices. Where the HTTP
# API has the same action it declares the same tuple (tests/mcp/test_mcp_capabilities.py). A tool
# not listed here cannot be registered (``_tool`` raises), so none is reachable undeclared.
CAPABILITIES: dict[str, tuple[str, ...]] = {
    "send_notification": (SEND,),
    "get_notification": (VIEW_CONSOLE, SEND),
    "list_pending_acks": (RESPOND, VIEW_CONSOLE),
    "acknowledge": (RESPOND,),
    "dismiss": (RESPOND,),
    "simulate_policy": (SEND, MANAGE_POLICIES),
    "request_approval": (SEND,),  # POST /api/v1/governance/decisions
    "check_approval": (VIEW_CONSOLE, SEND),  # GET /api/v1/governance/decisions/{id}
    "list_audit": (VIEW_CONSOLE,),  # GET /api/v1/audit
    "silence": (SILENCE,),  # POST /api/v1/silences
    "list_silences": (VIEW_CONSOLE,),  # GET /api/v1/silences
    "expire_silence": (SILENCE,),  # POST /api/v1/silences/{id}/expire
    "who_is_on_call": (VIEW_CONSOLE,),  # GET /api/v1/oncall/who
}
SILENCE_STATES = (silences.ACTIVE, silences.PENDING_STATE, silences.EXPIRED)
# How often check_approval re-reads a pending decision while it waits (seconds).
APPROVAL_POLL_SECONDS = 0.25

READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False)
RESPONSE = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
SEND_ANNOTATIONS = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False,
                                   open_world_hint=True)


def error_result(exc: UNSError, tool: str) -> CallToolResult:
    """A tool error carrying the problem-details body the HTTP API would answer."""
    body = problem(exc.status, exc.code, exc.title, exc.detail, f"mcp:tools/{tool}", **exc.extra)
    return CallToolResult(content=[TextContent(type="text", text=json.dumps(body))], structured_content=body,
                          is_error=True)


class _UNSServer(MCPServer):
    """``MCPServer`` whose tool calls refuse bad arguments with the HTTP API's problem body instead
    of the SDK's bare string: first the values ``core.json_values.check_value`` refuses (NUL, lone
    surrogates, non-finite numbers: ``parse_error``), then what the tool's argument model refuses
    (a verb's ``schemas`` model, see ``_arguments``: unknown names, wrong types, limits;
    ``invalid_request`` with ``errors_of``, as HTTP and WebSocket answer)."""

    async def call_tool(self, name, arguments, context=None):
        if self._tool_manager.get_tool(name) is None:
            return await super().call_tool(name, arguments, context)
        try:
            check_value(arguments)
        except UNSError as exc:
            return error_result(exc, name)
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            if isinstance(exc, UnexpectedToolError) or not isinstance(exc.__cause__, ValidationError):
                raise
            return error_result(InvalidRequest("the arguments are invalid", errors=errors_of(exc.__cause__)),
                                name)


# The members a tool adds to its verb's body: what HTTP carries in the path.
NOTIFICATION_ID = (str, Field(description="The notification id (a 36-character UUID string)."))


def _arguments(tool, schema: type[Schema] | None, **addressing) -> None:
    """Make ``tool``'s argument model (what the SDK validates and publishes as its input schema)
    the verb's input schema ``schema`` plus ``addressing`` members (``NOTIFICATION_ID``); a tool
    without a verb keeps the model of its signature, refusing unknown names as well."""
    if schema is None:
        class model(tool.fn_metadata.arg_model):
            model_config = ConfigDict(extra="forbid", title=tool.fn_metadata.arg_model.__name__)
    else:
        model = create_model(f"{tool.name}Arguments", __base__=(schema, ArgModelBase), **addressing)
    tool.fn_metadata.arg_model = model
    tool.parameters = model.model_json_schema(by_alias=True)


def _result(tool, model: type[payloads.Payload]) -> None:
    """Publish ``model`` (``notifications.payloads``, the HTTP API's response model) as
    ``tool``'s output schema; the SDK checks each structured result against it, which is sent as
    the tool built it."""
    def check(value: dict) -> dict:
        model.model_validate(value)
        return value

    tool.fn_metadata.output_model = Annotated[dict[str, Any], AfterValidator(check)]
    tool.fn_metadata.output_schema = model.model_json_schema()


def _base_url(host: str, port: int) -> str:
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def build_server(identity, *, runtime: Runtime | None = None, with_worker: bool = True,
                 poll_interval: float | None = None, host: str = "127.0.0.1", port: int = 8000) -> MCPServer:
    """The UNS MCP server acting for ``identity`` (``auth.StdioIdentity`` or ``auth.HttpIdentity``).

    ``runtime``: the Runtime tools and loops share (default: the process's, ``notifications.apps.runtime()``).
    ``with_worker``: whether the lifespan owns dispatch/timeout/callback loops.
    ``host``/``port``: only name the HTTP server in its auth settings.
    """
    runtime = runtime or process_runtime()

    @asynccontextmanager
    async def lifespan(_server):
        worker = None
        if with_worker:
            worker = Worker(runtime, poll_interval=poll_interval)
            await anyio.to_thread.run_sync(worker.start)
            log.info("mcp worker loops started (dispatch, timeout, callback)")
        try:
            yield {"worker": worker}
        finally:
            if worker is not None:
                # Shielded: a cancelled server (SIGTERM, closed stdin) still settles its batch.
                with anyio.CancelScope(shield=True):
                    await anyio.to_thread.run_sync(worker.stop)
                log.info("mcp worker loops stopped")

    http = identity.transport == "http"
    server = _UNSServer(
        "uns",
        title="UNS notifications",
        instructions=INSTRUCTIONS,
        lifespan=lifespan,
        # Over HTTP the SDK's bearer middleware refuses requests without a valid knox token
        # (401) before any MCP message is read. UNS issues its own tokens; the issuer URL is
        # required by the settings model and only names this server.
        token_verifier=KnoxTokenVerifier() if http else None,
        auth=AuthSettings(issuer_url=_base_url(host, port), resource_server_url=None) if http else None,
    )

    async def call(ctx: Context, tool: str, fn, *args):
        """Authenticate, check ``tool``'s capability, run ``fn(user, *args)`` in a DB thread."""
        capabilities = CAPABILITIES[tool]
        token = identity.token(ctx.request_context.request)

        def run():
            user = authorize(token, capabilities)
            return fn(user, *args)

        try:
            return await database_sync_to_async(run)()
        except UNSError as exc:
            return error_result(exc, tool)

    def _tool(annotations: ToolAnnotations, title: str, result: type[payloads.Payload],
              schema: type[Schema] | None = None, **addressing):
        """Register ``fn`` as a tool whose arguments are ``schema`` (a verb's input schema) plus
        ``addressing`` members (without ``schema``, the arguments of ``fn``'s signature) and whose
        result is ``result``."""
        def register(fn):
            if fn.__name__ not in CAPABILITIES:
                raise RuntimeError(f"MCP tool {fn.__name__} declares no capability")
            server.tool(title=title, annotations=annotations)(fn)
            tool = server._tool_manager.get_tool(fn.__name__)
            _arguments(tool, schema, **addressing)
            _result(tool, result)
            return fn

        return register

    # --- tools ----------------------------------------------------------------------------
    @_tool(SEND_ANNOTATIONS, "Send a notification", payloads.SentNotification, schemas.SendNotificationRequest)
    async def send_notification(ctx: Context, **request: Any) -> dict[str, Any]:
        """Submit one notification obligation; UNS accepts it durably and delivers it.

        source, title: required. channels: channel names (default: the policy's). require_ack:
        ask for an ACK (policy may require one anyway). idempotency_key: retrying with the same
        key and request returns the same notification (created=false); the same key with another
        request fails with code idempotency_conflict. dedup_key: coalesce duplicates of live work.
        The principal is the calling token's user, never an argument. Returns {id, status,
        dedup_role, owner_id, policy_id, policy_revision, effective_hash, created}. Error codes:
        invalid_request, unknown_channel, channel_not_allowed, idempotency_conflict,
        policy_unavailable, permission_denied.
        """

        def send(user):
            result = runtime.accept(user.get_username(), request)
            return {**selectors.intake_summary(result.notification), "created": result.created}

        return await call(ctx, "send_notification", send)

    @_tool(READ_ONLY, "Get a notification", payloads.Notification)
    async def get_notification(ctx: Context, notification_id: str, include_timeline: bool = True) -> dict[str, Any]:
        """One notification: delivery status, outcome, acknowledgement state (ack_status, actor,
        deadline) and, unless include_timeline is false, its event timeline. Times are epoch
        seconds with an ISO-8601 UTC twin (<field>_iso). Console readers see any notification; a
        producer sees the ones it sent. Error codes: not_found, permission_denied.
        """

        def read(user):
            row = visible_notification(user, notification_id)  # else exactly the unknown-id error
            return selectors.notification_detail(row, with_timeline=include_timeline)

        return await call(ctx, "get_notification", read)

    @_tool(READ_ONLY, "List notifications awaiting acknowledgement", payloads.PendingAcks)
    async def list_pending_acks(ctx: Context, limit: int = 50) -> dict[str, Any]:
        """Delivered notifications whose acknowledgement is pending, soonest deadline first.
        limit: 1..500 (default 50). Returns {"items": [{id, source, title, severity, intent,
        status, ack_status, delivered_at, deadline, ...}], "count": n}.
        Error codes: invalid_request, permission_denied.
        """

        def read(user):
            items = [selectors.pending_ack_item(r) for r in selectors.pending_acks(limit=check_limit(limit))]
            return {"items": items, "count": len(items)}

        return await call(ctx, "list_pending_acks", read)

    def _respond(dismiss: bool, arguments: dict):
        def respond(user):
            row = runtime.acknowledge(arguments["notification_id"], user.get_username(), dismiss=dismiss,
                                      metadata=arguments["metadata"], approve=arguments.get("approve", False))
            return selectors.notification_detail(row, with_timeline=False)

        return respond

    @_tool(RESPONSE, "Acknowledge a notification", payloads.Notification, schemas.RespondRequest,
           notification_id=NOTIFICATION_ID)
    async def acknowledge(ctx: Context, **arguments: Any) -> dict[str, Any]:
        """ACK a delivered notification that requires acknowledgement, before its deadline; the
        actor is the calling principal. Repeating it as the same actor is idempotent. metadata:
        optional JSON object stored with the response. approve: must be true to ACK a governance
        approval notification (that ACK approves the agent's action). Returns the notification.
        Error codes: not_found, ack_not_required, not_awaiting_ack (not delivered yet),
        ack_timed_out, ack_conflict (another actor or response won), approval_not_explicit (an
        approval ACKed without approve: true), self_approval, permission_denied.
        """
        return await call(ctx, "acknowledge", _respond(False, arguments))

    @_tool(RESPONSE, "Dismiss a notification", payloads.Notification, schemas.RespondRequest,
           notification_id=NOTIFICATION_ID)
    async def dismiss(ctx: Context, **arguments: Any) -> dict[str, Any]:
        """Dismiss (settle without acting on) a delivered notification awaiting acknowledgement.
        Same rules, result and error codes as acknowledge; ack_status becomes DISMISSED.
        """
        return await call(ctx, "dismiss", _respond(True, arguments))

    @_tool(READ_ONLY, "Simulate policy resolution", PolicySimulation, schemas.SimulateRequest)
    async def simulate_policy(ctx: Context, **request: Any) -> dict[str, Any]:
        """What send_notification would resolve and decide for this request, sent by you now,
        creating nothing: {revision, snapshot_hash, initialized, policy_id, policy_version,
        policy_hash, rule, effective (channels, delivery_mode, max_attempts, backoff,
        dedup_window_seconds, require_ack, ack_timeout_minutes, escalation), effective_hash,
        dedup {role: leader | follower | deduplicated, ...}, idempotency {outcome: new | repeat |
        conflict, notification_id}}. Error codes: invalid_request, unknown_channel,
        channel_not_allowed, policy_unavailable, permission_denied.
        """

        def simulate(user):
            return simulation.simulate(user.get_username(), request, now=runtime.clock())

        return await call(ctx, "simulate_policy", simulate)

    @_tool(SEND_ANNOTATIONS, "Ask whether an action may be performed", GovernanceDecision,
           governance_schema.GovernanceRequest)
    async def request_approval(ctx: Context, **request: Any) -> dict[str, Any]:
        """Ask UNS, before acting, whether you may perform action (e.g. deploy.release) on
        resource at the declared risk (low | medium | high | critical; undeclared counts as
        high). Answers at once and never waits for a human: outcome ALLOW (state approved: go
        ahead), DENY (state denied: do not), or REQUIRE_APPROVAL (state pending: a human was
        asked; poll check_approval with the returned approval_id, and do not act until its state
        is approved; denied or expired means do not). idempotency_key makes retries safe.
        reason and context are shown to the approvers. Returns the decision {id, outcome, state,
        allowed, approval_id, approval_notification_ids, rule, revision, policy_hash, ...}. Error
        codes: invalid_request, idempotency_conflict, unknown_channel, policy_unavailable,
        permission_denied.
        """

        def ask(user):
            return governance.decide_request(runtime, user.get_username(), request).as_dict()

        return await call(ctx, "request_approval", ask)

    @_tool(READ_ONLY, "Check an approval", GovernanceDecision, governance_schema.ApprovalWait)
    async def check_approval(ctx: Context, **arguments: Any) -> dict[str, Any]:
        """The state of a decision from request_approval: pending | approved | denied | expired,
        with decided_by and approved_by. wait_seconds (0..30, default 0): while it is pending,
        wait up to that long for it to settle before answering (bounded: call again to keep
        waiting). Only state approved means go ahead. Error codes: not_found, invalid_request,
        permission_denied.
        """
        deadline = anyio.current_time() + float(arguments["wait_seconds"])

        def read(user):
            return policy_selectors.visible_decision(user, arguments["approval_id"]).as_dict()

        while True:
            result = await call(ctx, "check_approval", read)
            left = deadline - anyio.current_time()
            if not isinstance(result, dict) or result["state"] != "pending" or left <= 0:
                return result
            await anyio.sleep(min(APPROVAL_POLL_SECONDS, left))

    @_tool(READ_ONLY, "List people's actions (the audit)", payloads.AuditPage)
    async def list_audit(ctx: Context, actor: str | None = None, action: str | None = None,
                         object_type: str | None = None, object_id: str | None = None,
                         bulk_action_id: str | None = None, since: str | None = None, until: str | None = None,
                         limit: int = 100, cursor: str | None = None) -> dict[str, Any]:
        """Who did what, when, to what: ACK, dismiss, snooze, escalate, replay, resolve, bulk
        actions, approvals (APPROVED / DENIED), channel and policy changes, logins refused by the
        throttle; newest first. Filters (each optional, exact): actor (user or token name),
        action (e.g. REPLAY_REQUESTED, POLICY_ACTIVATED), object_type (notification, decision,
        bulk_action, channel, policy, login) with object_id, bulk_action_id, since (inclusive) /
        until (exclusive) as epoch seconds or ISO-8601. limit 1..500; cursor: the previous
        page's next. Returns {"items": [{id, at, at_iso, actor, action, object_type, object_id,
        object_title, bulk_action_id, detail}], "next"}. Error codes: invalid_request,
        invalid_cursor, permission_denied.
        """
        given = {"actor": actor, "action": action, "object_type": object_type, "object_id": object_id,
                 "bulk_action_id": bulk_action_id, "since": since, "until": until, "cursor": cursor}

        def read(user):
            params = QueryDict(mutable=True)
            for name, value in given.items():
                if value is not None:
                    params[name] = value
            params["limit"] = str(check_limit(limit))  # the one limit rule; the rest as GET /api/v1/audit
            return selectors.people_audit_page(params)

        return await call(ctx, "list_audit", read)

    @_tool(SEND_ANNOTATIONS, "Silence matching notifications", payloads.Silence, silences.SilenceRequest)
    async def silence(ctx: Context, **request: Any) -> dict[str, Any]:
        """Silence notifications that match all matchers for a while ("silence db-01 for 1 h":
        matchers [{"name": "source", "op": "=", "value": "db-01"}], duration_seconds 3600, comment
        saying why). A matching notification is still accepted and visible, but not sent, not
        escalated and its ACK deadline does not run while the silence holds. name: source,
        severity, dedup_key or metadata.<key>[.<key>...]; op: = != =~ !~ (regular expressions are
        RE2, anchored at both ends). starts_at (epoch seconds, default now: a later one makes a
        maintenance window); ends_at or duration_seconds. The creator is the calling principal.
        Returns the silence {id, matchers, starts_at, ends_at, state, ...}. Error codes:
        invalid_request, invalid_silence (unknown matcher field, bad regular expression, matchers
        that match everything, an end not after the start), permission_denied (operators only).
        """

        def create(user):
            return selectors.silence_view(runtime.create_silence(user.get_username(), request), runtime.clock())

        return await call(ctx, "silence", create)

    @_tool(READ_ONLY, "List silences", payloads.SilenceList)
    async def list_silences(ctx: Context, state: str | None = None, limit: int = 50) -> dict[str, Any]:
        """Silences, newest first. state: active | pending | expired (default: all). limit:
        1..500 (default 50). Returns {"items": [silence], "next": null}. Error codes:
        invalid_request, permission_denied.
        """

        def read(user):
            if state is not None and state not in SILENCE_STATES:
                raise InvalidRequest("unknown state", errors=[{"field": "state",
                                                               "message": f"must be one of {list(SILENCE_STATES)}"}])
            now = runtime.clock()
            qs = Silence.objects.all() if state is None else Silence.objects.filter(silences.state_filter(state, now))
            rows = qs.order_by("-created_at", "-id")[:check_limit(limit)]
            return {"items": [selectors.silence_view(s, now) for s in rows], "next": None}

        return await call(ctx, "list_silences", read)

    @_tool(RESPONSE, "Expire a silence now", payloads.Silence)
    async def expire_silence(ctx: Context, silence_id: str) -> dict[str, Any]:
        """End a silence now (idempotent); what it held is released (a notification held longer
        than the freshness bound is not sent late). Error codes: silence_not_found,
        permission_denied (operators only).
        """

        def expire(user):
            return selectors.silence_view(runtime.expire_silence(silence_id, user.get_username()), runtime.clock())

        return await call(ctx, "expire_silence", expire)

    @_tool(READ_ONLY, "Who is on call", payloads.TargetResolution, schemas.WhoIsOnCallRequest)
    async def who_is_on_call(ctx: Context, **arguments: Any) -> dict[str, Any]:
        """Whom a page to target would reach now (or at `at`, epoch seconds), as UNS resolves it
        when it sends: target is schedule:<name> (or just a schedule's name), team:<name> or
        user:<name>. Returns {target, at, at_iso, people: [{user, source (override | layer |
        team | user), layer, override, contact_methods: [{id, kind, label}]}], reason} (reason
        says why nobody can be paged, else null; only verified contact methods are listed).
        Error codes: invalid_request, permission_denied.
        """
        at = arguments.get("at")

        def read(user):
            return oncall_selectors.who(arguments["target"], time.time() if at is None else at)

        return await call(ctx, "who_is_on_call", read)

    return server
