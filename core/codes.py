"""The problem-code catalog: every ``code`` a UNS problem (RFC 9457) can carry, with its HTTP
status and the ``title`` the problem body carries.

Raise sites name a code by its constant here (``Conflict(..., code=codes.ACK_CONFLICT)``), never by
a string literal; ``tests/runtime/test_problem_codes.py`` proves every code raised is catalogued.
The console's copy (``frontend/src/generated/problem-codes.ts``) is generated from ``CATALOG`` by
``manage.py uns_problem_codes``.

A code raised through a generic error class (``Conflict``, ``InvalidRequest``...) carries that
class's status and title; the catalog records them so each code's status is written once.
``DRF`` codes are those Django REST framework gives its own exceptions (the DRF exception handler
keeps them, with the title catalogued here: one title per code, whichever layer refused).
"""
from typing import NamedTuple


class Problem(NamedTuple):
    status: int
    title: str


CATALOG: dict[str, Problem] = {}


def _code(code: str, status: int, title: str) -> str:
    CATALOG[code] = Problem(status, title)
    return code


# The generic error classes (core.errors).
UNS_ERROR = _code("uns_error", 400, "UNS error")
INVALID_REQUEST = _code("invalid_request", 400, "Invalid request")
UNKNOWN_CHANNEL = _code("unknown_channel", 422, "Unknown channel")
NOT_FOUND = _code("not_found", 404, "Not found")
CONFLICT = _code("conflict", 409, "Conflict")
POLICY_UNAVAILABLE = _code("policy_unavailable", 503, "Policy unavailable")
REPLAY_BLOCKED = _code("replay_blocked", 409, "Replay blocked")
REPLAY_LINEAGE_UNKNOWN = _code("replay_lineage_unknown", 409, "Replay lineage cannot be established")
PARSE_ERROR = _code("parse_error", 400, "Invalid JSON")
INTERNAL_ERROR = _code("internal_error", 500, "Internal server error")

# Credentials and capabilities (notifications.access, console.auth); DRF gives the same codes.
NOT_AUTHENTICATED = _code("not_authenticated", 401, "Not authenticated")
AUTHENTICATION_FAILED = _code("authentication_failed", 401, "Authentication failed")
PERMISSION_DENIED = _code("permission_denied", 403, "Forbidden")
INVALID_CREDENTIALS = _code("invalid_credentials", 401, "Login failed")
CONSOLE_ACCESS_DENIED = _code("console_access_denied", 403, "No console access")

# DRF's own exceptions, rendered by the DRF exception handler.
METHOD_NOT_ALLOWED = _code("method_not_allowed", 405, "Method not allowed")
NOT_ACCEPTABLE = _code("not_acceptable", 406, "Not acceptable")
UNSUPPORTED_MEDIA_TYPE = _code("unsupported_media_type", 415, "Unsupported media type")
THROTTLED = _code("throttled", 429, "Throttled")

# Transport guards: request size, query strings, WebSocket frames.
PAYLOAD_TOO_LARGE = _code("payload_too_large", 413, "Payload too large")
INVALID_QUERY = _code("invalid_query", 400, "Invalid query")
INVALID_CURSOR = _code("invalid_cursor", 400, "Invalid request")
UNSUPPORTED_FRAME = _code("unsupported_frame", 400, "Unsupported frame")
UNKNOWN_ACTION = _code("unknown_action", 400, "Invalid request")
TOO_MANY_SUBSCRIPTIONS = _code("too_many_subscriptions", 400, "Invalid request")

# Intake and the responder verbs.
ACTOR_REQUIRED = _code("actor_required", 400, "Invalid request")
PRINCIPAL_REQUIRED = _code("principal_required", 400, "Invalid request")
IDEMPOTENCY_CONFLICT = _code("idempotency_conflict", 409, "Conflict")
ACK_CONFLICT = _code("ack_conflict", 409, "Conflict")
ACK_TIMED_OUT = _code("ack_timed_out", 409, "Conflict")
ACK_NOT_REQUIRED = _code("ack_not_required", 409, "Conflict")
NOT_AWAITING_ACK = _code("not_awaiting_ack", 409, "Conflict")
ESCALATION_STOPPED = _code("escalation_stopped", 409, "Conflict")
ESCALATION_TARGET_UNAVAILABLE = _code("escalation_target_unavailable", 409, "Conflict")
NO_ESCALATION_TARGET = _code("no_escalation_target", 409, "Conflict")

# The dead-letter queue, bulk actions and retention.
NOT_DEAD_LETTERED = _code("not_dead_lettered", 409, "Conflict")
CONCURRENT_CHANGE = _code("concurrent_change", 409, "Conflict")
BULK_NOTHING_MATCHES = _code("bulk_nothing_matches", 409, "Conflict")
BULK_ACTION_NOT_FOUND = _code("bulk_action_not_found", 404, "Not found")
INVALID_OLDER_THAN = _code("invalid_older_than", 400, "Invalid request")
INVALID_BATCH_SIZE = _code("invalid_batch_size", 400, "Invalid request")
INVALID_MAX_ROWS = _code("invalid_max_rows", 400, "Invalid request")
ARCHIVE_FAILED = _code("archive_failed", 500, "Archive failed")
ARCHIVE_VERIFICATION_FAILED = _code("archive_verification_failed", 500, "Archive verification failed")

# Channels.
INVALID_CHANNEL = _code("invalid_channel", 400, "Invalid request")
CHANNEL_NOT_FOUND = _code("channel_not_found", 404, "Not found")
CHANNEL_EXISTS = _code("channel_exists", 409, "Conflict")
CHANNEL_ROUTED = _code("channel_routed", 409, "Conflict")
NO_ADAPTER = _code("no_adapter", 409, "Conflict")

# On-call: teams, schedules, overrides, contact methods (notifications.runtime.oncall).
INVALID_ONCALL = _code("invalid_oncall", 400, "Invalid request")
TEAM_NOT_FOUND = _code("team_not_found", 404, "Not found")
SCHEDULE_NOT_FOUND = _code("schedule_not_found", 404, "Not found")
OVERRIDE_NOT_FOUND = _code("override_not_found", 404, "Not found")
LAYER_NOT_FOUND = _code("layer_not_found", 404, "Not found")
CONTACT_METHOD_NOT_FOUND = _code("contact_method_not_found", 404, "Not found")
USER_NOT_FOUND = _code("user_not_found", 404, "Not found")
TEAM_EXISTS = _code("team_exists", 409, "Conflict")
SCHEDULE_EXISTS = _code("schedule_exists", 409, "Conflict")
TARGET_ROUTED = _code("target_routed", 409, "Conflict")

# Policies.
INVALID_POLICY_CONTENT = _code("invalid_policy_content", 400, "Invalid request")
INVALID_POLICY_ID = _code("invalid_policy_id", 400, "Invalid request")
CHANNEL_NOT_ALLOWED = _code("channel_not_allowed", 400, "Invalid request")
POLICY_NOT_FOUND = _code("policy_not_found", 404, "Not found")
POLICY_NOT_DRAFT = _code("policy_not_draft", 409, "Conflict")
POLICY_RETIRED = _code("policy_retired", 409, "Conflict")
INVALID_TRANSITION = _code("invalid_transition", 409, "Conflict")
DEFAULT_POLICY_REQUIRED = _code("default_policy_required", 409, "Conflict")
POLICY_CONFLICT = _code("policy_conflict", 409, "Conflict")
POLICY_EDIT_CONFLICT = _code("policy_edit_conflict", 409, "Conflict")
POLICY_VERSION_CONFLICT = _code("policy_version_conflict", 409, "Conflict")
POLICY_REVISION_CONFLICT = _code("policy_revision_conflict", 409, "Conflict")
POLICY_UNINITIALIZED = _code("policy_uninitialized", 503, "Policy unavailable")
POLICY_NO_DEFAULT = _code("policy_no_default", 503, "Policy unavailable")
POLICY_REVISION_MISSING = _code("policy_revision_missing", 503, "Policy unavailable")
POLICY_CONTENT_MISSING = _code("policy_content_missing", 503, "Policy unavailable")
POLICY_CONTENT_CORRUPT = _code("policy_content_corrupt", 503, "Policy unavailable")
POLICY_SNAPSHOT_MISSING = _code("policy_snapshot_missing", 503, "Policy unavailable")
POLICY_SNAPSHOT_MISMATCH = _code("policy_snapshot_mismatch", 503, "Policy unavailable")
POLICY_SNAPSHOT_CORRUPT = _code("policy_snapshot_corrupt", 503, "Policy unavailable")

# Governance.
SELF_APPROVAL = _code("self_approval", 409, "Conflict")
APPROVAL_NOT_EXPLICIT = _code("approval_not_explicit", 409, "Conflict")
APPROVAL_SKIPPED = _code("approval_skipped", 409, "Conflict")
APPROVAL_NOT_SNOOZABLE = _code("approval_not_snoozable", 409, "Conflict")

# Silences (notifications.runtime.silences).
INVALID_SILENCE = _code("invalid_silence", 400, "Invalid request")
SILENCE_NOT_FOUND = _code("silence_not_found", 404, "Not found")
SILENCE_EXPIRED = _code("silence_expired", 409, "Conflict")
