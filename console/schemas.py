"""The ``/ui`` read models described once, as pydantic models: the OpenAPI document of the
console (``document()``, committed as ``frontend/src/generated/ui-openapi.json``) is built from
them, the console's TypeScript types (``frontend/src/generated/ui.ts``) are generated from that
document by openapi-typescript, and ``tests/console/test_ui_schema.py`` validates every /ui
response against its model (unknown members refused), so a field added, renamed or dropped in
``console.selectors`` without a change here fails a test, and a change here without
regenerating fails ``scripts/check_ui_types.sh`` (``scripts/test.sh`` runs it).

Regenerate after changing a /ui payload: ``scripts/gen_ui_types.sh`` (or ``npm run gen:types``
in ``frontend/``). Times are Float epoch seconds beside their ISO-8601 UTC ``<name>_iso``.
"""
import json
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field
from pydantic.json_schema import models_json_schema

from notifications import payloads
from notifications.payloads import (BulkActionName, BulkItemResult, BulkListName, BulkProgress, BulkRun, DeadLetterItem,
                                    ListFilter, NotificationListItem, PendingAck)
from notifications.runtime import schemas as verbs
from notifications.runtime.lists import LIST_FILTERS
from notifications.runtime.silences import MAX_COMMENT as MAX_SILENCE_COMMENT
from policies import payloads as policy_payloads

Obj = dict[str, Any]


# Base of every /ui model: every member required unless it says so, no unknown members. The
# payloads /ui shares with /api/v1 (a notification list item, a bulk action's progress) are
# ``notifications.payloads``' models.
UI = payloads.Payload
_absent_unless_given = payloads.absent_unless_given


Page = payloads.Page


class NowPage(Page):
    now: float
    now_iso: str


class CountedPage(NowPage):
    """A /ui list that counts its matches (``pagination.bounded_total``)."""

    total: int = Field(description="Rows matching the list's filters on all pages, counted up to 10000.")
    total_capped: bool = Field(description="True when there are more than ``total`` (10000 or more).")


# --- /ui/me ------------------------------------------------------------------------------------

class Capabilities(UI):
    view_console: bool
    respond: bool
    operate_dlq: bool
    send: bool
    manage_policies: bool


class Me(UI):
    username: str
    groups: list[str]
    is_superuser: bool
    capabilities: Capabilities
    token_expiry: float | None
    token_expiry_iso: str | None
    csrf_token: str | None = Field(default=None, json_schema_extra=_absent_unless_given, description=(
        "With a console session only: the CSRF token its writes send (kept in memory by the app)."))


# --- /ui/overview ------------------------------------------------------------------------------

class OverviewDlq(UI):
    depth: int
    oldest_failed_at: float | None
    oldest_failed_at_iso: str | None
    oldest_age_seconds: float | None


class OverviewLastHour(UI):
    since: float
    since_iso: str
    deliveries: int
    failures: int
    retries: int


class OverviewFailed(UI):
    """``counts_by_status["FAILED"]`` split by the DLQ's definition (``runtime.dlq.failed_split``)."""

    dead_lettered: int = Field(description="In the DLQ (the same number as ``dlq.depth``).")
    not_dead_lettered: int = Field(description="Resolved dead letters and BEST_EFFORT failures.")


class Overview(UI):
    now: float
    now_iso: str
    counts_by_status: dict[str, int] = Field(description="By the reference's statuses; FAILED includes resolved "
                                                         "dead letters (see ``failed``).")
    counts_by_ack_status: dict[str, int]
    total: int
    failed: OverviewFailed
    dlq: OverviewDlq
    last_hour: OverviewLastHour
    pending_acks: int


# --- /ui/series ---------------------------------------------------------------------------------

class SeriesCounts(UI):
    accepted: list[int]
    delivered: list[int]
    retried: list[int]
    failed: list[int] = Field(description="Settled FAILED, dead-lettered or not (best effort).")
    dead_lettered: list[int]
    deduplicated: list[int]


class SeriesLatency(UI):
    basis: Literal["accepted"] = Field(description="Latency runs from acceptance to the DELIVERED settle "
                                       "(first cycle only).")
    p50: list[float | None]
    p95: list[float | None]
    p99: list[float | None]
    count: list[int] = Field(description="Deliveries measured per bucket.")


class SeriesGauges(UI):
    dlq_depth: list[int] = Field(description="Dead letters at each bucket's end.")
    ack_pending: list[int] = Field(description="Pending acknowledgements at each bucket's end.")


class SeriesChannel(UI):
    name: str
    attempts: list[int]
    failures: list[int]


class Series(UI):
    window: Literal["1h", "24h", "7d"]
    step_seconds: int
    points: int
    now: float
    now_iso: str
    start: float
    start_iso: str
    end: float
    end_iso: str
    buckets: list[float] = Field(description="Bucket starts (epoch seconds); each lasts step_seconds.")
    counts: SeriesCounts
    latency: SeriesLatency
    gauges: SeriesGauges
    channels: list[SeriesChannel]


# --- lists -------------------------------------------------------------------------------------

class Summary(UI):
    id: str
    title: str = Field(description="Required at intake, so always present.")
    source: str
    severity: str | None
    status: str
    ack_status: str | None
    dead_letter: bool


class Approval(UI):
    """``policies.governance.bridge.approval_summary``: what a responder decides on."""

    decision_id: str
    action: str | None
    resource: Any
    risk: str | None
    agent_id: str | None
    reason: str | None
    context: Any


class InboxItem(PendingAck):
    """``selectors.pending_ack_item`` and what the inbox adds; a pending acknowledgement always
    has a deadline."""

    deadline: float
    deadline_iso: str
    principal: str
    seconds_left: float
    overdue: bool
    channels: list[str]
    dedup_key: str | None
    can_escalate: bool = Field(description="Escalate applies now (``runtime.escalation.can_escalate``, the "
                                           "chain-aware rule the verb enforces).")
    approval: Approval | None = Field(description="For a governance approval, what is asked; null otherwise.")


class InboxPage(CountedPage):
    items: list[InboxItem]


class Group(UI):
    value: str | list[str] | None = Field(description="The group's value; for ``channel`` the list of channels.")
    count: int


class Groups(UI):
    """``GET /ui/inbox/groups`` and ``/ui/dlq/groups``: the 50 largest groups, largest first."""

    by: str
    groups: list[Group]


class ReplayBlocker(UI):
    code: str
    successor_id: str | None
    successor_status: str | None
    explanation: str


class DlqItem(Summary, DeadLetterItem):
    """``selectors.dlq_item`` (``notifications.payloads.DeadLetterItem``) and what the screen adds."""

    principal: str
    channels_succeeded: list[str]
    max_attempts: int | None
    replay_blocker: ReplayBlocker | None
    dedup_key: str | None
    age_seconds: float | None = Field(description="Seconds since the failure, at the answer's ``now``.")
    failure_hint: str | None = Field(description="What usually causes this failure and what to check "
                                                 "(``notifications.failure_hints``).")


class DlqPage(CountedPage):
    items: list[DlqItem]


class ConsoleNotificationListItem(NotificationListItem):
    """A listing entry (``notifications.payloads.NotificationListItem``) and what the screen adds."""

    resolved: bool = Field(description="Taken out of the DLQ by an operator without a replay "
                                        "(``FAILURE_RESOLVED``; status stays FAILED, dead_letter false): "
                                        "shown apart from live failures (``selectors.settled_without_delivery``).")
    withheld: bool = Field(description="Never sent (``DELIVERY_WITHHELD``; status FAILED, dead_letter false): "
                                        "its source resolved it before delivery, or a silence held it until it "
                                        "was stale (``selectors.settled_without_delivery``).")


class NotificationListPage(CountedPage):
    items: list[ConsoleNotificationListItem]


# --- /ui/channels --------------------------------------------------------------------------------

class ChannelFailure(UI):
    at: float
    at_iso: str
    notification_id: str | None
    error: str | None
    attempt: int | None
    retryable: bool | None


class ChannelLastHour(UI):
    successes: int
    failures: int
    failure_rate: float | None = Field(description="failures / answers; null without answers.")


class ChannelHealth(UI):
    name: str
    kind: str
    enabled: bool
    last_success_at: float | None
    last_success_at_iso: str | None
    last_failure: ChannelFailure | None
    last_hour: ChannelLastHour


class Channels(UI):
    now: float
    now_iso: str
    since: float
    since_iso: str
    items: list[ChannelHealth]


# --- /ui/notifications/{id} ---------------------------------------------------------------------

class ChannelAttempt(UI):
    at: float
    at_iso: str
    attempt: int | None
    cycle: int | None
    cycle_attempt: int | None
    success: bool | None
    error: str | None
    message_id: str | None
    retryable: bool | None
    status_code: int | None
    provider_attempt: int | None
    service: str | None
    hint: str | None = Field(description="For a failure, what usually causes it (``notifications.failure_hints``).")
    host: str | None = Field(description="The receiver's host[:port] (webhook), never credentials.")


class ChannelResult(UI):
    channel: str | None
    attempts: list[ChannelAttempt]
    last: ChannelAttempt | None
    succeeded: bool


class DedupMember(Summary):
    role: str
    owner_id: str | None
    generation: int | None
    successor_id: str | None


class MissingMember(UI):
    id: str | None
    missing: Literal[True]


class DedupGroup(UI):
    dedup_key: str
    generation: int | None
    role: str
    leader: DedupMember | MissingMember
    followers: list[DedupMember]
    successor: DedupMember | MissingMember | None


class ChainLevel(UI):
    level: int
    channels: list[str]
    wait_seconds: float
    repeat: int


class ChainNext(UI):
    level: int | None = None
    repetition: int | None = None
    exhausted: bool | None = None


class ChainFired(UI):
    number: int | None
    level: int
    repetition: int
    channels: list[str | None]
    at: float
    actor: str | None
    reason: str | None
    escalation_id: str | None
    status: str | None
    ack_status: str | None
    responded_by: str | None
    responded_at: float | None
    closed_by_chain: bool = Field(description="The chain closed this escalation when it stopped or ran out "
                                              "(its acknowledgement is the chain's, not a response of its own).")


class ChainFailed(UI):
    level: int
    repetition: int
    channels: list[str | None]
    at: float
    code: str | None
    detail: str | None


class ChainStopped(UI):
    actor: str | None
    response: str | None
    responded_on: str | None
    level: int | None
    at: float


class EscalationChain(UI):
    """``runtime.escalation.chain_view``: the chain, which level is active, what fired when, who
    responded."""

    levels: list[ChainLevel]
    state: Literal["ACTIVE", "RESPONDED", "EXHAUSTED"] | None
    active_level: int
    steps_fired: int
    next_due: float | None
    next: ChainNext | None
    fired: list[ChainFired]
    failed: list[ChainFailed]
    stopped: ChainStopped | None
    exhausted_at: float | None
    can_escalate: bool
    starts_on_timeout: bool = Field(description="Whether the chain starts when the deadline passes (false for an "
                                                "escalation: only Escalate starts its chain).")


class EscalatedFrom(UI):
    id: str
    level: int


class TimelineEntry(payloads.Event):
    """A timeline event (``notifications.payloads.Event``)."""


class Resolution(BaseModel):
    """The frozen ``uns_resolution`` (as intake wrote it) and ``why`` in words."""

    model_config = ConfigDict(extra="allow")
    policy_id: str | None = None
    policy_version: int | None = None
    policy_hash: str | None = None
    revision: int | None = None
    snapshot_hash: str | None = None
    effective: Obj | None = None
    effective_hash: str | None = None
    rule: str | None = None
    why: str


class Outcome(BaseModel):
    """The notification's delivery outcome (``uns_notifications.outcome``)."""

    model_config = ConfigDict(extra="allow")
    channels_attempted: list[str] = []
    channels_succeeded: list[str] = []
    channels_failed: list[str] = []
    error_message: str | None = None


class NotificationDetail(Summary):
    principal: str
    request: Obj
    resolution: Resolution
    outcome: Outcome
    attempts: int
    cycle: int
    cycle_attempts: int
    max_attempts: int | None
    leased: bool
    actor: str | None
    response_metadata: Obj | None
    channels: list[ChannelResult]
    dedup: DedupGroup | None
    timeline: list[TimelineEntry]
    replay_blocker: ReplayBlocker | None
    failure_hint: str | None
    escalation: EscalationChain | None
    escalated_from: EscalatedFrom | None
    next_attempt: float | None
    next_attempt_iso: str | None
    delivered_at: float | None
    delivered_at_iso: str | None
    deadline: float | None
    deadline_iso: str | None
    responded_at: float | None
    responded_at_iso: str | None


# --- /ui/policies --------------------------------------------------------------------------------

class PolicyVersion(policy_payloads.PolicyVersion):
    """``policies.selectors.version_view`` with its content, and the verbs a policy admin may use."""

    content: Obj | None
    transitions: list[Literal["activate", "retire", "clone"]] = Field(
        description="The lifecycle verbs the server would carry out (policies.lifecycle.verbs).")


class PolicyEntry(UI):
    policy_id: str
    versions: list[PolicyVersion]
    active_version: int | None


class CurrentRevision(UI):
    revision: int
    updated_by: str
    updated_at: float
    updated_at_iso: str | None


class RevisionItem(UI):
    revision: int
    reason: str
    created_by: str
    created_at: float
    created_at_iso: str | None
    snapshot_hash: str
    active: list[str]


class PolicyTransition(UI):
    policy_id: str
    version: int
    action: str
    from_status: str | None
    to_status: str
    actor: str
    at: float
    at_iso: str | None
    revision: int | None


class Policies(UI):
    available: bool
    current_revision: CurrentRevision | None
    policies: list[PolicyEntry]
    revisions: list[RevisionItem]
    transitions: list[PolicyTransition]


class PolicyDiff(UI):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    policy_id: str
    from_: int = Field(alias="from")
    to: int
    from_hash: str
    to_hash: str
    identical: bool
    lines: list[str]


class SimulatedOutcome(UI):
    """A request resolved against one ACTIVE set: the policy and settings, or the refusal."""

    policy_id: str | None = None
    policy_version: int | None = None
    rule: str | None = None
    effective: Obj | None = None
    effective_hash: str | None = None
    error: str | None = None
    detail: str | None = None


class SampleRequest(UI):
    source: str | None
    title: str | None
    severity: str | None
    intent: str | None


class SimulatedSample(UI):
    request: SampleRequest
    before: SimulatedOutcome
    after: SimulatedOutcome
    changed: bool


class Simulation(UI):
    revision: int
    samples: list[SimulatedSample]
    changed: int


class ActivationPreview(UI):
    policy_id: str
    version: int
    active_version: int | None
    diff: PolicyDiff | None
    simulation: Simulation


# --- /ui/audit -----------------------------------------------------------------------------------

AuditPage = payloads.AuditPage  # the same list as GET /api/v1/audit


# --- bulk actions ----------------------------------------------------------------------------------

class BulkPreview(UI):
    action: BulkActionName
    list: BulkListName
    filter: ListFilter
    matched: int
    max_items: int


class BulkItem(BulkItemResult):
    title: str | None


class BulkItemPage(Page):
    items: list[BulkItem]


class BulkAction(BulkProgress):
    items: BulkItemPage


# --- /ui/silences --------------------------------------------------------------------------------

class SilenceMatcher(UI):
    name: str
    op: Literal["=", "!=", "=~", "!~"]
    value: str


class SilenceItem(UI):
    id: str
    matchers: list[SilenceMatcher]
    comment: str
    created_by: str
    expired_by: str | None
    state: Literal["active", "pending", "expired"]
    starts_at: float
    starts_at_iso: str
    ends_at: float
    ends_at_iso: str
    created_at: float
    created_at_iso: str
    updated_at: float
    updated_at_iso: str
    held: int = Field(description="Notifications this silence held (deliveries, deadlines or escalations).")


class Silences(UI):
    now: float
    now_iso: str
    active: list[SilenceItem]
    pending: list[SilenceItem]
    expired: list[SilenceItem] = Field(description="The most recently ended (at most 50).")


# --- the document ----------------------------------------------------------------------------------

# /ui route (as in console/urls.py) -> (model, summary). ``test_ui_schema`` checks every route is here.
# --- /ui/oncall ----------------------------------------------------------------------------------
# The on-call shapes are /api/v1/oncall's (``notifications.payloads``), gathered per screen.

class OncallBoard(UI):
    """``GET /ui/oncall``: each schedule with who is on call now and next, and the teams."""

    now: float
    now_iso: str
    schedules: list[payloads.OncallScheduleSummary]
    teams: list[payloads.Team]


class CalendarLayer(payloads.OncallLayer):
    """A layer and its shifts in the window as if it were alone (no other layer, no override)."""

    shifts: list[payloads.Shift]


class OncallCalendar(UI):
    """``GET /ui/oncall/schedules/{name}/calendar?start=&end=``: per layer its own shifts, the
    final resolved shifts (overrides included, each naming its layer or override), and the
    overrides overlapping the window."""

    schedule: str
    time_zone: str
    team: str | None
    start: float
    start_iso: str
    end: float
    end_iso: str
    layers: list[CalendarLayer]
    shifts: list[payloads.Shift]
    overrides: list[payloads.Override]


class MyOncall(UI):
    """``GET /ui/oncall/me``: the caller's contact methods and latest pages."""

    user: str
    contact_methods: list[payloads.ContactMethod]
    pages: list[payloads.PersonPage]


ROUTES: dict[str, tuple[type[BaseModel], str]] = {
    "/ui/overview": (Overview, "Counts by state, DLQ depth and age, the last hour"),
    "/ui/inbox": (InboxPage, "Pending acknowledgements, oldest deadline first"),
    "/ui/inbox/groups": (Groups, "The largest groups of the filtered inbox"),
    "/ui/notifications": (NotificationListPage, "Every notification, filtered as GET /api/v1/notifications"),
    "/ui/notifications/{notification_id}": (NotificationDetail, "One notification, everything the screen shows"),
    "/ui/dlq": (DlqPage, "Dead letters with failure reason and replay blocker"),
    "/ui/dlq/groups": (Groups, "The largest groups of the filtered DLQ"),
    "/ui/channels": (Channels, "Per channel: kind, enabled, last success and failure, last hour's failure rate"),
    "/ui/series": (Series, "Time series of a window (1h, 24h, 7d) for the charts"),
    "/ui/silences": (Silences, "Silences and maintenance windows: active, pending, recently expired"),
    "/ui/policies": (Policies, "Policy versions, revisions and transitions"),
    "/ui/policies/{policy_id}/diff": (PolicyDiff, "Unified diff of two versions' content"),
    "/ui/policies/{policy_id}/versions/{version}/activation-preview": (
        ActivationPreview, "Before Activate: diff against the ACTIVE version and simulated recent requests"),
    "/ui/audit": (AuditPage, "Who did what, when, to what: people's actions, newest first"),
    "/ui/bulk-actions/preview": (BulkPreview, "How many items a bulk action would take now"),
    "/ui/bulk-actions/{bulk_id}": (BulkAction, "A bulk action's progress and per-item results"),
    "/ui/me": (Me, "The caller and its capabilities"),
    "/ui/oncall": (OncallBoard, "Each schedule's on call now and next, and the teams"),
    "/ui/oncall/me": (MyOncall, "The caller's contact methods and pages"),
    "/ui/oncall/schedules/{name}/calendar": (OncallCalendar, "A schedule's shifts per layer and final, and overrides"),
}
EXTRA_MODELS = (BulkRun, BulkProgress)  # console payloads of /api/v1/bulk-actions


def document() -> dict:
    """The OpenAPI 3.1 document of /ui (GET only), components from the models above."""
    models = [m for m, _ in ROUTES.values()] + list(EXTRA_MODELS)
    _, defs = models_json_schema([(m, "validation") for m in models],
                                 ref_template="#/components/schemas/{model}")
    paths = {}
    for path, (model, summary) in ROUTES.items():
        params = [{"name": p.strip("{}"), "in": "path", "required": True, "schema": {"type": "string"}}
                  for p in path.split("/") if p.startswith("{")]
        paths[path] = {"get": {
            "summary": summary, "operationId": "ui_" + "_".join(p.strip("{}") for p in path.split("/")[2:]).replace("-", "_"),
            **({"parameters": params} if params else {}),
            "responses": {"200": {"description": summary, "content": {"application/json": {
                "schema": {"$ref": f"#/components/schemas/{model.__name__}"}}}}},
        }}
    return {
        "openapi": "3.1.0",
        "info": {"title": "UNS console read models (/ui)", "version": "1",
                 "description": "GET only (INV-UI-001); generated from console/schemas.py."},
        "paths": paths,
        "components": {"schemas": defs.get("$defs", {})},
    }


def limits() -> dict[str, int]:
    """Input limits of the verbs the console sends (``runtime.schemas``, ``runtime.silences``),
    generated into ``frontend/src/generated/limits.ts`` so a form's bound cannot drift from the server's."""
    return {"MAX_REASON_LENGTH": verbs.MAX_REASON_LENGTH, "MIN_SNOOZE_SECONDS": verbs.MIN_SNOOZE_SECONDS,
            "MAX_SNOOZE_SECONDS": verbs.MAX_SNOOZE_SECONDS, "MAX_BULK_ITEMS": verbs.MAX_BULK_ITEMS,
            "MAX_BULK_CHUNK": verbs.MAX_BULK_CHUNK, "MAX_SILENCE_COMMENT_LENGTH": MAX_SILENCE_COMMENT}


def rendered() -> dict[str, str]:
    """``{relative path: text}`` of the generated files this module owns (the TypeScript types
    are openapi-typescript's, from the first): the document, and ``limits.ts`` with the verbs'
    limits and each list's filter names."""
    lines = ["// Generated by scripts/gen_ui_types.sh from notifications/runtime/schemas.py: do not edit.", ""]
    lines += [f"export const {k} = {v};" for k, v in limits().items()]
    # The filters each console list (and a bulk action on it) accepts: ``runtime.lists.LIST_FILTERS``.

    lines += [f"export const {name.upper()}_FILTERS = {json.dumps(list(names))} as const;"
              for name, names in LIST_FILTERS.items()]
    return {
        "frontend/src/generated/ui-openapi.json": json.dumps(document(), indent=2, sort_keys=True) + "\n",
        "frontend/src/generated/limits.ts": "\n".join(lines) + "\n",
    }
