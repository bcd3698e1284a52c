"""The response bodies of ``/api/v1`` (and the payloads ``/ui``, the MCP tools and the WebSocket
frames share with it), one pydantic model each, beside the selectors that build them.

drf-spectacular renders these models into the OpenAPI document of ``/api/v1``
(``notifications.api.openapi.PayloadExtension``), ``console.schemas`` reuses them in the ``/ui``
document, and ``tests/api/test_payloads.py`` validates responses against them. Every member is
required unless it says so; unknown members are refused when a test validates a body. Times are
Float epoch seconds beside their ISO-8601 UTC ``<name>_iso`` (``selectors.iso``).
"""
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from core import channel_kinds

from . import people_audit
from .runtime import dedup

FreeObject = dict[str, Any]
EPOCH = "Unix epoch seconds."


class Payload(BaseModel):
    """Base of every response model: members required unless they say so, no unknown members."""

    model_config = ConfigDict(extra="forbid")


def absent_unless_given(schema: dict) -> None:
    """A member the payload leaves out (not null) when it does not apply: no ``default`` in the
    document, so the generated TypeScript member is optional (``name?:``)."""
    schema.pop("default", None)


def optional(description: str | None = None, **kwargs):
    """A member that may be absent (never null when present)."""
    return Field(default=None, description=description, json_schema_extra=absent_unless_given, **kwargs)


class Problem(Payload):
    """RFC 9457 problem details; extension members (``errors``, ``limit_bytes``, ...) may follow."""

    model_config = ConfigDict(extra="allow")
    type: str = Field(description="`urn:uns:problem:<code>`")
    title: str
    status: int
    detail: str
    code: str = Field(description="Stable machine-readable error code.")
    instance: str = optional("The request path.")
    errors: Any = optional("For invalid input: a list of `{field, message}`.")


class Page(Payload):
    """The response of a paged list, ``pagination.page_body``: ``{"items": [...], "next"}``."""

    next: str | None = Field(description="Cursor of the next page; null on the last page.")


# --- notifications ----------------------------------------------------------------------------

DedupRole = Literal[dedup.ROLES]


# A timeline event (``selectors.event_view``).
class Event(Payload):
    id: str
    kind: str = Field(description="An event kind of the support reference (ACCEPTED, ACKED, ...).")
    at: float = Field(description=EPOCH)
    at_iso: str
    payload: FreeObject


class EventPage(Page):
    items: list[Event]


# What ``POST /api/v1/notifications`` answers (``selectors.intake_summary``).
class IntakeSummary(Payload):
    id: str
    status: str
    dedup_role: DedupRole
    owner_id: str | None
    policy_id: str
    policy_revision: int
    effective_hash: str


class Times(Payload):
    """The reference's Float epoch-second columns, each beside its ISO-8601 UTC rendering."""

    next_attempt: float | None = Field(description=EPOCH)
    next_attempt_iso: str | None
    lease_until: float | None = Field(description="Unix epoch seconds; 0 when unleased.")
    lease_until_iso: str | None = Field(description="Null when unleased (lease_until 0).")
    delivered_at: float | None = Field(description=EPOCH)
    delivered_at_iso: str | None
    deadline: float | None = Field(description="Unix epoch seconds: the ACK deadline.")
    deadline_iso: str | None
    responded_at: float | None = Field(description=EPOCH)
    responded_at_iso: str | None


class Notification(Times, IntakeSummary):
    """One notification (``selectors.notification_detail``)."""

    principal: str
    notification: FreeObject = Field(description="The accepted request, frozen, with `metadata.uns_resolution`.")
    outcome: FreeObject
    attempts: int
    cycle: int
    cycle_attempts: int
    dead_letter: bool
    dedup_generation: int | None
    dedup_successor_id: str | None
    leased: bool
    ack_status: str | None
    actor: str | None
    response_metadata: FreeObject | None
    timeline: list[Event] = optional("Only on `GET /api/v1/notifications/{id}`.")


class Escalation(Payload):
    id: str = Field(description="The escalation notification.")
    number: int
    level: int = Field(description="The escalation chain level (1-based) it was sent for.")
    channels: list[str] = Field(description="That level's channels.")
    target: str = Field(description="The first of `channels` (the one-target form's target).")
    status: str


class EscalatedNotification(Notification):
    escalation: Escalation


class NotificationListItem(Times):
    """One listing entry (``selectors.notification_list_item``) of ``GET /api/v1/notifications``
    and ``GET /ui/notifications``. ``source`` and ``title`` are required at intake, so never null."""

    id: str
    principal: str
    source: str
    title: str
    severity: str | None
    dedup_key: str | None = Field(description="The request's dedup_key.")
    require_ack: bool
    status: str
    dead_letter: bool
    dedup_role: DedupRole
    owner_id: str | None
    attempts: int
    cycle: int
    ack_status: str | None
    actor: str | None
    accepted_at: float | None = Field(description="Acceptance time, Unix epoch seconds.")
    accepted_at_iso: str | None


class NotificationPage(Page):
    items: list[NotificationListItem]


# One DLQ entry (``selectors.dlq_item``).
class DeadLetterItem(Payload):
    id: str
    source: str
    title: str
    error_message: str | None
    channels_failed: list[str]
    cycle: int
    cycle_attempts: int
    attempts: int
    accepted_at: float = Field(description="Acceptance time, epoch seconds (the list's order).")
    accepted_at_iso: str
    failed_at: float | None = Field(description="When the settle that dead-lettered it happened, epoch seconds "
                                                "(its newest FAILED delivery audit record).")
    failed_at_iso: str | None
    replay_blocked: bool
    replay_blocker: FreeObject | None = Field(description="`{code, successor_id, successor_status}` or null.")


class DeadLetterPage(Page):
    items: list[DeadLetterItem]


# --- what the MCP tools and the WebSocket consumers answer -------------------------------------

class SentNotification(IntakeSummary):
    """The MCP tool ``send_notification``'s result: the intake summary and whether this call
    created it (false for an idempotent repeat)."""

    created: bool


class PendingAck(Payload):
    """One entry of ``selectors.pending_acks`` (``selectors.pending_ack_item``)."""

    id: str
    source: str
    title: str
    severity: str | None
    intent: str | None
    status: str
    ack_status: str | None
    delivered_at: float | None = Field(description=EPOCH)
    delivered_at_iso: str | None
    deadline: float | None = Field(description="Unix epoch seconds: the ACK deadline.")
    deadline_iso: str | None


class PendingAcks(Payload):
    """The MCP tool ``list_pending_acks``'s result."""

    items: list[PendingAck]
    count: int


class LiveEvent(Event):
    """A timeline event as ``/ws/timeline/`` sends it (``live.event_message``)."""

    notification_id: str


class TimelineSubscribed(Payload):
    """``/ws/timeline/``'s answer to a subscribe: the catch-up, oldest first."""

    type: Literal["subscribed"]
    request_id: str | None
    notification_id: str = optional("A one-notification subscription.")
    stream: Literal["all"] = optional("The all-notifications stream.")
    events: list[LiveEvent]
    truncated: bool


class TimelineUnsubscribed(Payload):
    type: Literal["unsubscribed"]
    request_id: str | None
    notification_id: str = optional()
    stream: Literal["all"] = optional()


class TimelineEventFrame(Payload):
    """An event committed after the subscribe, pushed to ``/ws/timeline/``."""

    type: Literal["event"]
    event: LiveEvent


class TimelineError(Payload):
    type: Literal["error"]
    request_id: str | None
    problem: Problem


class RespondReply(Payload):
    """``/ws/respond/``'s answer to ack, dismiss or snooze: the notification without its timeline."""

    request_id: str
    ok: Literal[True]
    notification: Notification


class RespondError(Payload):
    request_id: str | None
    ok: Literal[False]
    problem: Problem


# --- channels -----------------------------------------------------------------------------------

class Channel(Payload):
    """``selectors.channel_view``: a channel without its secret."""

    name: str
    kind: Literal[channel_kinds.KINDS]
    enabled: bool
    config: FreeObject = Field(description="Kind-specific settings; URL credentials masked.")
    has_secret: bool = Field(description="Whether a secret is set (it is write-only).")
    delivers_to: str = Field(description="Where it delivers, credentials masked.")
    created_at: float = Field(description=EPOCH)
    created_at_iso: str


class ChannelList(Payload):
    items: list[Channel]
    next: str | None = Field(description="Cursor of the next page, or null on the last.")


class ChannelTestResult(Payload):
    """``runtime.channels.TestResult``."""

    success: bool
    answer: str = Field(description="The provider's answer (HTTP status and first bytes, SMTP reply, "
                                    "Apprise result), masked.")
    error: str | None


# --- bulk actions ------------------------------------------------------------------------------

BulkActionName = Literal["replay", "resolve", "ack", "snooze"]
BulkListName = Literal["dlq", "inbox"]


class ListFilter(Payload):
    """A list's filter as ``notifications.selectors.parse_list_filter`` returns it (the inbox has
    no ``reason``)."""

    q: str | None
    source: str | None
    severity: str | None = None
    channel: str | None = None
    dedup_key: str | None = None
    reason: str | None = None
    failed_since: str | None = Field(default=None, description="DLQ only: failed at or after (epoch seconds).")
    failed_until: str | None = Field(default=None, description="DLQ only: failed before (epoch seconds).")
    ids: list[str] | None = None


# One item of a bulk action (``runtime.bulk.item_view``).
class BulkItemResult(Payload):
    ordinal: int = Field(description="Position in the bulk action (list order).")
    notification_id: str
    result: Literal["settled", "refused"] | None = Field(description="null: not run yet.")
    code: str | None = Field(description="For a refusal: the runtime's problem code.")
    detail: str | None
    actor: str | None
    at: float | None = Field(description=EPOCH)
    at_iso: str | None


class BulkProgress(Payload):
    """``runtime.bulk.progress``."""

    id: str
    action: BulkActionName
    list: BulkListName
    filter: ListFilter
    params: FreeObject
    created_by: str
    created_at: float
    created_at_iso: str
    expected: int = Field(description="The N the operator confirmed.")
    matched: int = Field(description="How many matched the filter at creation.")
    total: int = Field(description="Items taken: min(expected, matched).")
    settled: int
    refused: int
    remaining: int
    cursor: int | None = Field(description="Ordinal of the next unsettled item.")
    state: Literal["RUNNING", "DONE"]
    finished_at: float | None
    finished_at_iso: str | None


class BulkRun(BulkProgress):
    """``POST /api/v1/bulk-actions/{id}/run``."""

    results: list[BulkItemResult] = Field(description="This call's per-item results.")


# --- console login (``console.auth``) -------------------------------------------------------------

# The body of ``POST /api/v1/auth/login`` (``console.auth.LoginView``).
class LoginRequest(Payload):
    username: str = Field(min_length=1)
    password: str = Field(min_length=1)


class Login(Payload):
    username: str
    expiry: float = Field(description="When the session ends, Unix epoch seconds.")
    expiry_iso: str
    csrf_token: str = Field(description="Send as X-CSRFToken on every state-changing request made with the session "
                                        "(set in an HttpOnly, SameSite=Strict cookie by this answer); keep it in memory.")


# --- the people audit ------------------------------------------------------------------------------

AuditAction = Literal[people_audit.ACTION_NAMES]
AuditObjectType = Literal[people_audit.OBJECT_TYPES]


class AuditItem(Payload):
    """One action a person or token took (``uns_people_audit_records``; ``selectors.audit_item``)."""

    id: str
    at: float = Field(description=EPOCH)
    at_iso: str
    actor: str = Field(description="The user or token name that acted (`(unknown user)` for a refused "
                                   "login of a name that is no user's).")
    action: AuditAction
    object_type: AuditObjectType
    object_id: str = Field(description="Notification or decision id, channel name, policy id, bulk action "
                                       "id, or the username of a login.")
    object_title: str = Field(description="The object's title when the action happened: the notification's "
                                          "title, `name (kind)` of a channel, `policy_id vN`, an approval's "
                                          "action and resource.")
    bulk_action_id: str | None = Field(description="The bulk action this action was part of, if any.")
    detail: FreeObject = Field(description="The action's arguments (never a secret or a config value).")


class AuditPage(Page):
    items: list[AuditItem]


# --- silences (notifications.api.silence_views) ---------------------------------------------------

class SilenceMatcher(Payload):
    name: str = Field(description="`source`, `severity`, `dedup_key` or `metadata.<key>[.<key>...]`.")
    op: Literal["=", "!=", "=~", "!~"]
    value: str = Field(description="The value, or an RE2 pattern anchored at both ends (`=~`, `!~`).")


class Silence(Payload):
    """``selectors.silence_view``."""

    id: str
    matchers: list[SilenceMatcher]
    comment: str
    created_by: str
    expired_by: str | None = Field(description="Who expired it early, or null.")
    state: Literal["active", "pending", "expired"]
    starts_at: float = Field(description=EPOCH)
    starts_at_iso: str
    ends_at: float = Field(description=EPOCH)
    ends_at_iso: str
    created_at: float = Field(description=EPOCH)
    created_at_iso: str
    updated_at: float = Field(description=EPOCH)
    updated_at_iso: str


class SilenceDetail(Silence):
    audit: list[FreeObject] = Field(description="`{action, actor, at, at_iso, matchers, starts_at, ends_at, comment}`, "
                                                "oldest first (CREATE, UPDATE, EXPIRE).")


class SilenceList(Payload):
    items: list[Silence]
    next: str | None = Field(description="Cursor of the next page, or null on the last.")


class SilencePreview(Payload):
    """``runtime.silences.preview``."""

    matched: int = Field(description="Open notifications the matchers match now (of those scanned).")
    scanned: int
    complete: bool = Field(description="False when there were more open notifications than a preview reads.")
    sample: list[FreeObject] = Field(description="Up to 10: `{id, title, source, severity, status, ack_status}`.")


# --- on-call (``/api/v1/oncall``; ``notifications.oncall_selectors``) --------------------------

OncallSource = Literal["override", "layer", "team", "user"]


class Restriction(Payload):
    days: list[int] = Field(description="Weekdays, 0 Monday .. 6 Sunday.")
    start: str = Field(description="Wall clock HH:MM in the layer's zone.")
    end: str = Field(description="Wall clock HH:MM (24:00: midnight); at or before start: over midnight.")


class OncallLayer(Payload):
    """One rotation layer (``oncall.models.Layer``); a higher ``position`` wins."""

    position: int
    name: str
    members: list[str] = Field(description="User names in rotation order.")
    rotation_unit: Literal["hours", "days", "weeks"]
    rotation_count: int
    start: str = Field(description="Local wall clock YYYY-MM-DDTHH:MM of the first hand-off.")
    time_zone: str = Field(description="IANA time zone name.")
    restrictions: list[Restriction]
    end: float | None = Field(description=EPOCH + " Null: open-ended.")


class Shift(Payload):
    """``oncall.rotation.Shift``: ``user`` on call from ``start`` to ``end`` (end exclusive)."""

    user: str
    start: float = Field(description=EPOCH)
    start_iso: str
    end: float = Field(description=EPOCH)
    end_iso: str
    source: Literal["override", "layer"]
    layer: str | None = Field(description="The layer's name, when from a layer.")
    override: str | None = Field(description="The override's id, when from one.")


class OnCallNow(Payload):
    """Who is on call at ``at``: ``user`` null when nobody."""

    user: str | None
    source: Literal["override", "layer"] | None
    layer: str | None
    override: str | None


class OncallScheduleSummary(Payload):
    """A schedule in the list: who is on call now and who is next."""

    name: str
    description: str
    time_zone: str
    team: str | None
    at: float = Field(description=EPOCH + " The instant `on_call` is for.")
    at_iso: str
    on_call: OnCallNow
    current_shift: Shift | None = Field(description="The shift in progress (null: nobody on call).")
    next_shift: Shift | None = Field(description="The next shift with someone else on call (within 366 days).")
    updated_at: float = Field(description=EPOCH)


class OncallScheduleList(Payload):
    items: list[OncallScheduleSummary]


class Override(Payload):
    id: str
    user: str
    start: float = Field(description=EPOCH)
    start_iso: str
    end: float = Field(description=EPOCH)
    end_iso: str
    source: Literal["manual", "ical"]
    created_by: str
    created_at: float = Field(description=EPOCH)


class OverrideList(Payload):
    items: list[Override]


class OncallSchedule(OncallScheduleSummary):
    """One schedule whole: its layers (lowest precedence first) and its overrides not yet ended.
    ``feed_url``: the iCalendar feed's path with its token, shown to operators only (null for
    others)."""

    layers: list[OncallLayer]
    overrides: list[Override]
    feed_url: str | None


class ShiftList(Payload):
    schedule: str
    start: float = Field(description=EPOCH)
    end: float = Field(description=EPOCH)
    items: list[Shift]


class OnCallAt(Payload):
    """``GET .../on-call``: who is on call at ``at`` and the next shift."""

    schedule: str
    at: float = Field(description=EPOCH)
    at_iso: str
    on_call: OnCallNow
    current_shift: Shift | None
    next_shift: Shift | None


class Team(Payload):
    name: str
    description: str
    members: list[str] = Field(description="User names in order.")
    schedules: list[str]


class TeamList(Payload):
    items: list[Team]


class ContactMethod(Payload):
    """A person's contact method; never its secret, URL credentials masked."""

    id: str
    user: str
    position: int = Field(description="The order it is tried in (lowest first).")
    label: str
    kind: Literal[channel_kinds.KINDS]
    config: FreeObject = Field(description="Kind-specific settings, as a channel's; URL credentials masked.")
    has_secret: bool
    delivers_to: str = Field(description="Where it delivers, credentials masked.")
    verification: Literal["UNVERIFIED", "VERIFIED", "FAILED"] = Field(
        description="Only a VERIFIED method is paged.")
    verified_at: float | None = Field(description=EPOCH)
    last_test_at: float | None = Field(description=EPOCH)
    last_test_error: str


class ContactMethodList(Payload):
    items: list[ContactMethod]


class ContactMethodVerification(Payload):
    """``POST .../verify``: the test send's outcome and the method as it now is."""

    success: bool
    answer: str
    error: str | None
    contact_method: ContactMethod


class PagedPerson(Payload):
    user: str
    source: OncallSource
    layer: str | None
    override: str | None
    contact_methods: list[FreeObject] = Field(description="`{id, kind, label}` of the verified methods, in order.")


class TargetResolution(Payload):
    """``GET /api/v1/oncall/who``: whom a target pages at ``at`` (what the dispatch would do)."""

    target: str
    at: float = Field(description=EPOCH)
    at_iso: str
    people: list[PagedPerson]
    reason: str | None = Field(description="Why nobody can be paged, else null.")


class PersonPage(Payload):
    """One page of a person (an ``ONCALL_RESOLVED`` event naming them)."""

    notification_id: str
    target: str
    at: float = Field(description=EPOCH)
    at_iso: str
    title: str
    severity: str
    status: str


class PersonPageList(Payload):
    items: list[PersonPage]
