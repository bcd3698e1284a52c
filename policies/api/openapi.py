"""OpenAPI descriptions of the policy endpoints' response bodies (the views render
``policies.selectors`` and ``policies.simulation`` dicts; keep these in step with them). Request
bodies are the verbs' input schemas, ``policies/schemas.py``."""
from rest_framework import serializers

from notifications.api.openapi import FreeObjectField
from notifications.runtime import dedup, intake
from policies.models import STATUSES


class PolicyVersionSerializer(serializers.Serializer):
    policy_id = serializers.CharField()
    version = serializers.IntegerField()
    status = serializers.ChoiceField(choices=STATUSES)
    description = serializers.CharField(allow_blank=True)
    cloned_from = serializers.CharField(allow_null=True, help_text="`<policy_id>@<version>` of the source.")
    content_hash = serializers.CharField(allow_null=True, help_text="SHA-256 of the canonical content JSON.")
    created_by = serializers.CharField()
    created_at = serializers.FloatField(help_text="Unix epoch seconds.")
    created_at_iso = serializers.CharField()
    activated_by = serializers.CharField(allow_null=True)
    activated_at = serializers.FloatField(allow_null=True, help_text="Unix epoch seconds.")
    activated_at_iso = serializers.CharField(allow_null=True)
    retired_by = serializers.CharField(allow_null=True)
    retired_at = serializers.FloatField(allow_null=True, help_text="Unix epoch seconds.")
    retired_at_iso = serializers.CharField(allow_null=True)
    content = FreeObjectField(required=False, allow_null=True,
                              help_text="Policy content (schema v1, `policies/content.py`); detail views only.")

    class Meta:
        ref_name = "PolicyVersion"


class ActiveEntrySerializer(serializers.Serializer):
    policy_id = serializers.CharField()
    version = serializers.IntegerField()
    content_hash = serializers.CharField()

    class Meta:
        ref_name = "PolicyActiveEntry"


class RevisionSerializer(serializers.Serializer):
    revision = serializers.IntegerField()
    snapshot_hash = serializers.CharField()
    reason = serializers.CharField()
    created_by = serializers.CharField()
    created_at = serializers.FloatField(help_text="Unix epoch seconds.")
    created_at_iso = serializers.CharField(allow_null=True)
    active = ActiveEntrySerializer(many=True, help_text="The ACTIVE set in evaluation order.")

    class Meta:
        ref_name = "PolicyRevision"


class PolicyListSerializer(serializers.Serializer):
    current = RevisionSerializer(allow_null=True, help_text="The current revision; null before the first intake.")
    items = PolicyVersionSerializer(many=True)

    class Meta:
        ref_name = "PolicyList"


class RevisionListSerializer(serializers.Serializer):
    items = RevisionSerializer(many=True)

    class Meta:
        ref_name = "PolicyRevisionList"


class TransitionSerializer(serializers.Serializer):
    policy = PolicyVersionSerializer()
    replaced = PolicyVersionSerializer(allow_null=True, help_text="The version an activation retired.")
    revision = serializers.IntegerField(help_text="The current revision after the call.")
    changed = serializers.BooleanField(help_text="False for an idempotent repeat.")

    class Meta:
        ref_name = "PolicyTransition"


class SimulationDedupSerializer(serializers.Serializer):
    role = serializers.ChoiceField(choices=dedup.ROLES)
    coalescing = serializers.BooleanField(help_text="False when the request has no dedup_key or the window is 0.")
    dedup_key = serializers.CharField(allow_null=True)
    owner_id = serializers.CharField(allow_null=True)
    generation = serializers.IntegerField(allow_null=True)
    window_seconds = serializers.FloatField(required=False)

    class Meta:
        ref_name = "PolicySimulationDedup"


class SimulationIdempotencySerializer(serializers.Serializer):
    outcome = serializers.ChoiceField(choices=intake.IDEMPOTENCY_OUTCOMES)
    notification_id = serializers.CharField(allow_null=True)

    class Meta:
        ref_name = "PolicySimulationIdempotency"


class SimulationEscalationLevelSerializer(serializers.Serializer):
    level = serializers.IntegerField(help_text="1-based.")
    channels = serializers.ListField(child=serializers.CharField())
    wait_seconds = serializers.FloatField(help_text="Seconds waited for a response after the level fired.")
    repeat = serializers.IntegerField(help_text="How many times the level is sent.")

    class Meta:
        ref_name = "PolicySimulationEscalationLevel"


class SimulationEscalationChainSerializer(serializers.Serializer):
    levels = SimulationEscalationLevelSerializer(many=True)
    schedule = serializers.ListField(child=FreeObjectField(), help_text=(
        "Each step `{level, repetition, channels, after_timeout_seconds}` in order, then "
        "`{exhausted: true, after_timeout_seconds}`: seconds after the acknowledgement deadline when "
        "nobody responds. Empty without a chain."))

    class Meta:
        ref_name = "PolicySimulationEscalationChain"


class SimulationSerializer(serializers.Serializer):
    revision = serializers.IntegerField()
    snapshot_hash = serializers.CharField()
    initialized = serializers.BooleanField(help_text="False: no revision is stored yet; shown is what cold init "
                                                     "would write.")
    policy_id = serializers.CharField()
    policy_version = serializers.IntegerField(allow_null=True)
    policy_hash = serializers.CharField()
    rule = serializers.CharField(allow_null=True)
    effective = FreeObjectField()
    effective_hash = serializers.CharField()
    dedup = SimulationDedupSerializer()
    idempotency = SimulationIdempotencySerializer()
    escalation_chain = SimulationEscalationChainSerializer()

    class Meta:
        ref_name = "PolicySimulation"

