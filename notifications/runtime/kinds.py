"""The ``uns_events.kind`` values (support reference, section 3, and the kinds beyond its
catalog). ``timeline`` re-exports them (``timeline.ACCEPTED``); modules below ``timeline``
that need them (``series``) import them from here."""

# Event kinds of the support reference, section 3.
ACCEPTED = "ACCEPTED"
DEDUP_LINKED = "DEDUP_LINKED"
ATTEMPT_STARTED = "ATTEMPT_STARTED"
CHANNEL_ATTEMPT_STARTED = "CHANNEL_ATTEMPT_STARTED"
CHANNEL_ATTEMPT_RESULT = "CHANNEL_ATTEMPT_RESULT"
LEASE_LOST = "LEASE_LOST"
DELIVERY_RESULT = "DELIVERY_RESULT"
OBLIGATION_HANDED_OFF = "OBLIGATION_HANDED_OFF"
DEDUP_SATISFIED = "DEDUP_SATISFIED"
DEDUP_OWNER_PROMOTED = "DEDUP_OWNER_PROMOTED"
DEDUP_RELINKED = "DEDUP_RELINKED"
ACKED = "ACKED"
DISMISSED = "DISMISSED"
TIMED_OUT = "TIMED_OUT"
REPLAY_REQUESTED = "REPLAY_REQUESTED"
FAILURE_RESOLVED = "FAILURE_RESOLVED"
# A retention receipt (maintenance.maintain): its notification_id is its own id, never pruned.
RETENTION_APPLIED = "RETENTION_APPLIED"
# Response verbs beyond the reference's catalog: snooze and escalation.
SNOOZED = "SNOOZED"
ESCALATED = "ESCALATED"
ESCALATION_FAILED = "ESCALATION_FAILED"
# Governance: an approval notification's response settled its decision
# (payload: decision_id, state approved | denied | expired, decided_by, approved_by, action, agent_id).
APPROVAL_SETTLED = "APPROVAL_SETTLED"
# Beyond the catalog: the callback outbox gave up on a response event's callback
# (``callbacks.deliver_callbacks``), and a channel's delivery failed over to a policy fallback
# channel (``dispatch``).
CALLBACK_FAILED = "CALLBACK_FAILED"
CHANNEL_FAILED_OVER = "CHANNEL_FAILED_OVER"
# Escalation chains (``escalation``): a response stopped the chain; its last level's
# wait passed with no response (the chain's end).
ESCALATION_STOPPED = "ESCALATION_STOPPED"
ESCALATION_EXHAUSTED = "ESCALATION_EXHAUSTED"
# Silences (``silences``): a silence held the notification (payload silence_id, scope delivery |
# deadline | escalation, until, comment, created_by; deadline: deadline_before, deadline_after).
SILENCED = "SILENCED"
# Settled FAILED without a page (``withhold``): its source resolved it first, or a silence held it
# until it was stale (payload reason, status, dead_letter, outcome, and actor or silence_id).
DELIVERY_WITHHELD = "DELIVERY_WITHHELD"
# An acknowledge or resolve that came before the delivery, remembered (``early``; payload
# response ACKED | DISMISSED, actor, metadata); honoured when the notification is delivered.
RESPONSE_BEFORE_DELIVERY = "RESPONSE_BEFORE_DELIVERY"
# On-call (issue 22): a people target (``schedule:``, ``team:``, ``user:``) was resolved at send
# time to the people it pages and their verified contact methods (``dispatch.people``); each
# contact method's answer follows as a CHANNEL_ATTEMPT_RESULT whose metadata names the person.
ONCALL_RESOLVED = "ONCALL_RESOLVED"
