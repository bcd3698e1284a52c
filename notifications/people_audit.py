"""Who did what, when, to what: the vocabulary of ``uns_people_audit_records`` and the one
builder every write path calls, inside the transaction of the action it records (so a row
exists exactly when the action happened, and a refused or rolled-back action leaves none).

It sits with the tables (below ``policies`` and the runtime) because the policy store writes
policy lifecycle rows and the runtime everything else; both call ``record`` here.
Actions named by the spec keep its names (the ``uns_events`` kinds ACKED, DISMISSED,
REPLAY_REQUESTED, FAILURE_RESOLVED; SNOOZED and ESCALATED as the timeline names them); the
others are named after the audit rows they sit beside (``channel_audit_records.action``,
``notification_policy_audit_records.action``) with their object type in front.
"""
from core.keys import new_id

from .models import PeopleAuditRecord

NOTIFICATION = "notification"
DECISION = "decision"
BULK_ACTION = "bulk_action"
CHANNEL = "channel"
POLICY = "policy"
LOGIN = "login"
SILENCE = "silence"
TEAM = "team"
SCHEDULE = "schedule"
CONTACT_METHOD = "contact_method"

# action -> the type of object it acts on. Read models validate the ``action`` and
# ``object_type`` filters against these.
ACTIONS: dict[str, str] = {
    "ACKED": NOTIFICATION,
    "DISMISSED": NOTIFICATION,
    "SNOOZED": NOTIFICATION,
    "ESCALATED": NOTIFICATION,
    "REPLAY_REQUESTED": NOTIFICATION,
    "FAILURE_RESOLVED": NOTIFICATION,
    # a governance approval answered: an approver's explicit approve, or a deny (its dismiss)
    "APPROVED": DECISION,
    "DENIED": DECISION,
    "BULK_ACTION_CREATED": BULK_ACTION,
    "CHANNEL_CREATED": CHANNEL,
    "CHANNEL_UPDATED": CHANNEL,
    "CHANNEL_SECRET_ROTATED": CHANNEL,
    "CHANNEL_ENABLED": CHANNEL,
    "CHANNEL_DISABLED": CHANNEL,
    "CHANNEL_DELETED": CHANNEL,
    "CHANNEL_TESTED": CHANNEL,
    "POLICY_CREATED": POLICY,
    "POLICY_EDITED": POLICY,
    "POLICY_CLONED": POLICY,
    "POLICY_ACTIVATED": POLICY,
    "POLICY_RETIRED": POLICY,
    # a console login the throttle answered 429 (console.throttle): the username tried
    "LOGIN_REFUSED": LOGIN,
    # silences (runtime.silences; uns_silence_audit_records keeps each version's matchers)
    "SILENCE_CREATED": SILENCE,
    "SILENCE_UPDATED": SILENCE,
    "SILENCE_EXPIRED": SILENCE,
    # on-call (runtime.oncall; oncall_audit_records keeps the same with its detail)
    "TEAM_CREATED": TEAM,
    "TEAM_UPDATED": TEAM,
    "TEAM_DELETED": TEAM,
    "SCHEDULE_CREATED": SCHEDULE,
    "SCHEDULE_UPDATED": SCHEDULE,
    "SCHEDULE_DELETED": SCHEDULE,
    "SCHEDULE_LAYER_ADDED": SCHEDULE,
    "SCHEDULE_LAYER_UPDATED": SCHEDULE,
    "SCHEDULE_LAYER_DELETED": SCHEDULE,
    "SCHEDULE_OVERRIDE_ADDED": SCHEDULE,
    "SCHEDULE_OVERRIDE_DELETED": SCHEDULE,
    "SCHEDULE_IMPORTED": SCHEDULE,
    "SCHEDULE_FEED_TOKEN_ROTATED": SCHEDULE,
    "CONTACT_METHOD_CREATED": CONTACT_METHOD,
    "CONTACT_METHOD_UPDATED": CONTACT_METHOD,
    "CONTACT_METHOD_DELETED": CONTACT_METHOD,
    "CONTACT_METHOD_VERIFIED": CONTACT_METHOD,
}
ACTION_NAMES: tuple[str, ...] = tuple(ACTIONS)
OBJECT_TYPES: tuple[str, ...] = (NOTIFICATION, DECISION, BULK_ACTION, CHANNEL, POLICY, LOGIN, SILENCE, TEAM, SCHEDULE,
                                 CONTACT_METHOD)

# channel_audit_records.action / notification_policy_audit_records.action -> action here
CHANNEL_ACTIONS = {"CREATE": "CHANNEL_CREATED", "UPDATE": "CHANNEL_UPDATED", "ROTATE_SECRET": "CHANNEL_SECRET_ROTATED",
                   "ENABLE": "CHANNEL_ENABLED", "DISABLE": "CHANNEL_DISABLED", "DELETE": "CHANNEL_DELETED"}
SILENCE_ACTIONS = {"CREATE": "SILENCE_CREATED", "UPDATE": "SILENCE_UPDATED", "EXPIRE": "SILENCE_EXPIRED"}
# oncall_audit_records (entity, action) -> action here
ONCALL_ACTIONS = {
    ("team", "CREATE"): "TEAM_CREATED", ("team", "UPDATE"): "TEAM_UPDATED", ("team", "DELETE"): "TEAM_DELETED",
    ("schedule", "CREATE"): "SCHEDULE_CREATED", ("schedule", "UPDATE"): "SCHEDULE_UPDATED",
    ("schedule", "DELETE"): "SCHEDULE_DELETED", ("schedule", "ADD_LAYER"): "SCHEDULE_LAYER_ADDED",
    ("schedule", "UPDATE_LAYER"): "SCHEDULE_LAYER_UPDATED", ("schedule", "DELETE_LAYER"): "SCHEDULE_LAYER_DELETED",
    ("schedule", "ADD_OVERRIDE"): "SCHEDULE_OVERRIDE_ADDED", ("schedule", "DELETE_OVERRIDE"): "SCHEDULE_OVERRIDE_DELETED",
    ("schedule", "IMPORT"): "SCHEDULE_IMPORTED", ("schedule", "ROTATE_FEED_TOKEN"): "SCHEDULE_FEED_TOKEN_ROTATED",
    ("contact_method", "CREATE"): "CONTACT_METHOD_CREATED", ("contact_method", "UPDATE"): "CONTACT_METHOD_UPDATED",
    ("contact_method", "DELETE"): "CONTACT_METHOD_DELETED", ("contact_method", "VERIFY"): "CONTACT_METHOD_VERIFIED",
}
POLICY_ACTIONS = {"CREATE": "POLICY_CREATED", "EDIT": "POLICY_EDITED", "CLONE": "POLICY_CLONED",
                  "ACTIVATE": "POLICY_ACTIVATED", "RETIRE": "POLICY_RETIRED"}

TITLE_MAX = 500


def record(actor: str, action: str, object_id: str, *, at: float, title: str | None = "",
           bulk_action_id: str | None = None, detail: dict | None = None) -> PeopleAuditRecord:
    """Insert one ``uns_people_audit_records`` row: ``actor`` did ``action`` (a key of
    ``ACTIONS``, which names the object's type) to ``object_id`` (titled ``title``, cut to
    500 characters) at ``at`` (epoch seconds). Call it inside the action's transaction.
    ``detail``: the action's arguments, JSON, never a secret. Raises ``KeyError`` for an
    action outside ``ACTIONS`` (a programming error)."""
    return PeopleAuditRecord.objects.create(
        id=new_id(), at=at, actor=actor[:255], action=action, object_type=ACTIONS[action],
        object_id=str(object_id)[:255], object_title=(title or "")[:TITLE_MAX], bulk_action_id=bulk_action_id,
        detail=detail or {})
