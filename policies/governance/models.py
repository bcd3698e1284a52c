"""The governance tables: every decision (``uns_governance_decisions``) and its append-only audit
(``uns_governance_audit_records``). Thin models: every write goes through
``policies.governance.service`` / ``bridge``. Times are Float Unix epoch seconds, ids
36-character UUID strings (DESIGN.md)."""
from django.db import models

# The decision states and their edges: ``core.transitions.DECISION_STATE``.
from core.transitions import DECISION_APPROVED as APPROVED  # noqa: F401
from core.transitions import DECISION_DENIED as DENIED  # noqa: F401
from core.transitions import DECISION_EXPIRED as EXPIRED  # noqa: F401
from core.transitions import DECISION_PENDING as PENDING
from core.transitions import DECISION_SETTLED as SETTLED  # noqa: F401
from core.transitions import DECISION_STATES as STATES


class GovernanceDecision(models.Model):
    """One answer to "may this agent do this now?", with the policy identity it was made under.

    ``outcome`` is what the rules said (ALLOW | DENY | REQUIRE_APPROVAL) and never changes;
    ``state`` is where the decision stands: ALLOW is ``approved`` and DENY ``denied`` at once;
    REQUIRE_APPROVAL starts ``pending`` and settles exactly once to ``approved`` (enough distinct
    ACKs), ``denied`` (a DISMISS) or ``expired`` (an approval timed out): the edges of
    ``core.transitions.DECISION_STATE``. ``approval_ids`` are
    the ``require_ack`` notifications the approvers answer (one per approval needed).
    ``key`` / ``fingerprint``: idempotency, as intake (SHA-256 of ``[principal,
    "uns-governance", idempotency_key]`` / of the canonical request)."""

    id = models.CharField(primary_key=True, max_length=36)
    key = models.CharField(max_length=64, unique=True)
    fingerprint = models.CharField(max_length=64)
    principal = models.CharField(max_length=255)
    action = models.CharField(max_length=255)
    agent_id = models.CharField(max_length=255, null=True)
    autonomy_mode = models.CharField(max_length=64, null=True)
    intent = models.CharField(max_length=64, null=True)
    resource = models.CharField(max_length=500, null=True)
    risk = models.CharField(max_length=16)
    request = models.JSONField()
    outcome = models.CharField(max_length=16)
    rule = models.CharField(max_length=128, null=True)
    reason = models.TextField()
    policy_id = models.CharField(max_length=64, null=True)
    policy_version = models.IntegerField(null=True)
    policy_hash = models.CharField(max_length=64, null=True)
    revision = models.IntegerField()
    snapshot_hash = models.CharField(max_length=64)
    state = models.CharField(max_length=16)
    approvals_required = models.IntegerField(default=0)
    approval_timeout_seconds = models.FloatField(null=True)
    approver_channels = models.JSONField(default=list)
    approval_ids = models.JSONField(default=list)
    approved_by = models.JSONField(default=list)
    decided_by = models.CharField(max_length=255, null=True)
    decided_at = models.FloatField(null=True)
    created_at = models.FloatField()

    class Meta:
        db_table = "uns_governance_decisions"
        verbose_name = "governance decision"
        constraints = [
            models.CheckConstraint(condition=models.Q(state__in=STATES), name="ck_gov_decision_state"),
            models.CheckConstraint(condition=models.Q(outcome__in=("ALLOW", "DENY", "REQUIRE_APPROVAL")),
                                   name="ck_gov_decision_outcome"),
        ]
        indexes = [
            models.Index(fields=["state", "created_at"], name="ix_gov_decision_state"),
            models.Index(fields=["principal", "created_at"], name="ix_gov_decision_principal"),
        ]


class GovernanceAuditRecord(models.Model):
    """Append-only: one row per decision made (``DECIDED``), per approval counted
    (``APPROVAL_RECORDED``) and per settlement (``SETTLED``), each with the policy revision and
    hash the decision was made under and the actor (the requesting principal, an approver, or
    ``uns-timeout-worker``)."""

    id = models.CharField(primary_key=True, max_length=36)
    decision_id = models.CharField(max_length=36)
    kind = models.CharField(max_length=32)
    old_state = models.CharField(max_length=16, null=True)
    new_state = models.CharField(max_length=16)
    actor = models.CharField(max_length=255)
    agent_id = models.CharField(max_length=255, null=True)
    action = models.CharField(max_length=255)
    outcome = models.CharField(max_length=16)
    revision = models.IntegerField()
    policy_hash = models.CharField(max_length=64, null=True)
    snapshot_hash = models.CharField(max_length=64)
    notification_id = models.CharField(max_length=36, null=True)
    at = models.FloatField()

    class Meta:
        db_table = "uns_governance_audit_records"
        verbose_name = "governance audit record"
        indexes = [models.Index(fields=["decision_id", "at"], name="ix_gov_audit_decision")]
