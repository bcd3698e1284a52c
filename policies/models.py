"""The policy authority's tables (support reference 2.4; DESIGN.md "Policy").

Four roles, four tables, plus the transition audit:

- ``notification_policies``: one lifecycle row per (policy_id, version): DRAFT -> ACTIVE ->
  RETIRED. Lifecycle status is authoritative; RETIRED is final.
- ``notification_policy_contents``: the full content of each version with its SHA-256
  (``policy_hash``). Replaceable only while its lifecycle row is DRAFT, immutable from
  activation on.
- ``notification_policy_snapshots``: the immutable ACTIVE set at one revision (in evaluation
  order, with each policy's full content) and its SHA-256.
- ``notification_policy_revisions``: exactly one row (id 1), the monotonic current revision and
  the snapshot it names. Intake holds it FOR SHARE, lifecycle writes FOR UPDATE.
- ``notification_policy_audit_records``: one append-only row per lifecycle transition.

Times are Float Unix epoch seconds; row ids are 36-character UUID strings. Models are thin:
every write goes through ``policies.store``.
"""
from django.db import models

# The lifecycle statuses and their edges: ``core.transitions.POLICY_STATUS``.
from core.transitions import POLICY_ACTIVE as ACTIVE
from core.transitions import POLICY_DRAFT as DRAFT  # noqa: F401
from core.transitions import POLICY_RETIRED as RETIRED  # noqa: F401
from core.transitions import POLICY_STATUSES as STATUSES


class Policy(models.Model):
    """``notification_policies``: the lifecycle row of one policy version."""

    STATUS_CHOICES = [(s, s) for s in STATUSES]

    id = models.CharField(primary_key=True, max_length=36)
    policy_id = models.CharField(max_length=64)
    version = models.IntegerField()
    status = models.CharField(max_length=16, choices=STATUS_CHOICES)
    description = models.CharField(max_length=500, blank=True, default="")
    cloned_from = models.CharField(max_length=80, null=True, blank=True)
    created_by = models.CharField(max_length=255)
    created_at = models.FloatField()
    activated_by = models.CharField(max_length=255, null=True)
    activated_at = models.FloatField(null=True)
    retired_by = models.CharField(max_length=255, null=True)
    retired_at = models.FloatField(null=True)

    class Meta:
        db_table = "notification_policies"
        verbose_name = "policy version"
        verbose_name_plural = "policy versions"
        ordering = ["policy_id", "-version"]
        constraints = [
            models.UniqueConstraint(fields=["policy_id", "version"], name="uq_policy_version"),
            # At most one ACTIVE version per policy id, whatever the code does.
            models.UniqueConstraint(fields=["policy_id"], condition=models.Q(status=ACTIVE),
                                    name="uq_policy_one_active"),
            models.CheckConstraint(condition=models.Q(status__in=STATUSES), name="ck_policy_status"),
        ]
        indexes = [models.Index(fields=["status", "policy_id"], name="ix_policy_status")]
        permissions = [("manage_policies", "Policy admin: create, edit, activate, retire and clone policies")]

    def __str__(self):
        return f"{self.policy_id} v{self.version} ({self.status})"


class PolicyContent(models.Model):
    """``notification_policy_contents``: the full content of one version and its SHA-256."""

    id = models.CharField(primary_key=True, max_length=36)
    policy_id = models.CharField(max_length=64)
    version = models.IntegerField()
    schema_version = models.IntegerField()
    content = models.JSONField()
    content_hash = models.CharField(max_length=64)
    created_at = models.FloatField()

    class Meta:
        db_table = "notification_policy_contents"
        constraints = [models.UniqueConstraint(fields=["policy_id", "version"], name="uq_policy_content_version")]

    def __str__(self):
        return f"{self.policy_id} v{self.version} {self.content_hash[:12]}"


class PolicySnapshot(models.Model):
    """``notification_policy_snapshots``: the immutable ACTIVE set at one revision.

    ``snapshot`` is ``{"schema_version": 1, "policies": [{"policy_id", "version",
    "content_hash", "content"}, ...]}`` in evaluation order; ``snapshot_hash`` is the SHA-256 of
    its canonical JSON and is checked on every read.
    """

    id = models.CharField(primary_key=True, max_length=36)
    revision = models.IntegerField(unique=True)
    snapshot = models.JSONField()
    snapshot_hash = models.CharField(max_length=64)
    reason = models.CharField(max_length=255)
    created_by = models.CharField(max_length=255)
    created_at = models.FloatField()

    class Meta:
        db_table = "notification_policy_snapshots"
        verbose_name = "policy revision"
        verbose_name_plural = "policy revisions (history)"
        ordering = ["-revision"]

    def __str__(self):
        return f"revision {self.revision}"


class PolicyRevision(models.Model):
    """``notification_policy_revisions``: the one current-revision row (id 1).

    ``snapshot`` carries no database constraint on purpose: a revision whose snapshot has gone
    missing must fail closed at read time (``PolicyUnavailable``), not be guessed around. The
    store never writes it NULL; it is nullable so that ``select_related`` reads it with a LEFT
    OUTER JOIN and a missing snapshot shows as missing instead of hiding the revision row.
    """

    id = models.SmallIntegerField(primary_key=True)
    revision = models.IntegerField()
    snapshot = models.ForeignKey(PolicySnapshot, on_delete=models.DO_NOTHING, db_constraint=False, null=True,
                                 related_name="+")
    updated_by = models.CharField(max_length=255)
    updated_at = models.FloatField()

    class Meta:
        db_table = "notification_policy_revisions"
        verbose_name = "current policy revision"
        verbose_name_plural = "current policy revision"
        constraints = [models.CheckConstraint(condition=models.Q(id=1), name="ck_policy_revision_singleton")]

    def __str__(self):
        return f"current revision {self.revision}"


class PolicyAuditRecord(models.Model):
    """``notification_policy_audit_records``: append-only lifecycle transitions.

    ``action`` is CREATE, EDIT, CLONE, ACTIVATE, RETIRE or BOOTSTRAP; ``from_status`` is NULL for
    a new version; ``revision`` is the revision the transition produced (NULL when the ACTIVE
    set did not change).
    """

    id = models.CharField(primary_key=True, max_length=36)
    policy_id = models.CharField(max_length=64)
    version = models.IntegerField()
    action = models.CharField(max_length=16)
    from_status = models.CharField(max_length=16, null=True)
    to_status = models.CharField(max_length=16)
    actor = models.CharField(max_length=255)
    at = models.FloatField()
    revision = models.IntegerField(null=True)
    content_hash = models.CharField(max_length=64)
    detail = models.JSONField(default=dict)

    class Meta:
        db_table = "notification_policy_audit_records"
        verbose_name = "policy lifecycle audit record"
        ordering = ["-at", "-id"]
        indexes = [models.Index(fields=["policy_id", "version"], name="ix_policy_audit_version")]

    def __str__(self):
        return f"{self.action} {self.policy_id} v{self.version}"


# The governance tables live beside their package; imported so the app registers them.
from .governance.models import GovernanceAuditRecord, GovernanceDecision  # noqa: E402,F401
