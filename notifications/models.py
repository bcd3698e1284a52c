"""UNS tables, named and typed as in the support reference (section 2).

Times are Float Unix epoch seconds and ids are 36-character UUID strings. Models are thin:
fields, constraints and indexes only; every state change goes through ``notifications.runtime``.
"""
from django.db import models
from django.db.models import F

from core import channel_kinds




class AcceptedAt(models.Func):
    """Acceptance time of a notification: ``notification.created_at`` (Float epoch seconds) as
    an SQL expression. The listing filters and orders by it and ``ix_uns_accepted`` indexes it.
    The JSON path is written inline, not as a bound parameter, because SQLite only uses an
    expression index when the query spells the indexed expression identically."""

    output_field = models.FloatField()

    def __init__(self):
        super().__init__(F("notification"))

    def as_sql(self, compiler, connection, **extra):  # PostgreSQL (jsonb)
        sql, params = compiler.compile(self.source_expressions[0])
        return f"(({sql} ->> 'created_at'))::double precision", params

    def as_sqlite(self, compiler, connection, **extra):
        sql, params = compiler.compile(self.source_expressions[0])
        return f"CAST(JSON_EXTRACT({sql}, '$.created_at') AS REAL)", params


class _PayloadText(models.Func):
    """One member of ``uns_events.payload`` as text, written inline (not a bound parameter) so
    SQLite matches the expression index (as ``AcceptedAt``). PostgreSQL ``payload ->> 'm'``;
    SQLite ``JSON_TYPE`` for booleans (``'true'``/``'false'``, what ``->>`` gives too), else
    ``JSON_EXTRACT``."""

    output_field = models.CharField()
    member = ""
    sqlite_function = "JSON_EXTRACT"

    def __init__(self):
        super().__init__(F("payload"))

    def as_sql(self, compiler, connection, **extra):  # PostgreSQL (jsonb)
        sql, params = compiler.compile(self.source_expressions[0])
        return f"({sql} ->> '{self.member}')", params

    def as_sqlite(self, compiler, connection, **extra):
        sql, params = compiler.compile(self.source_expressions[0])
        return f"{self.sqlite_function}({sql}, '$.{self.member}')", params


class ResultChannel(_PayloadText):
    """``payload.channel`` of an event (CHANNEL_ATTEMPT_RESULT: the channel's name)."""

    member = "channel"


class ResultSuccess(_PayloadText):
    """``payload.success`` of a CHANNEL_ATTEMPT_RESULT as text: ``"true"`` or ``"false"``."""

    member = "success"
    sqlite_function = "JSON_TYPE"


class Notification(models.Model):
    """``uns_notifications``: delivery work, response deadlines and idempotency identity."""

    id = models.CharField(primary_key=True, max_length=36)
    key = models.CharField(max_length=64, unique=True)
    fingerprint = models.CharField(max_length=64)
    principal = models.CharField(max_length=255)
    notification = models.JSONField()
    status = models.CharField(max_length=32)
    outcome = models.JSONField()
    attempts = models.IntegerField()
    cycle = models.IntegerField()
    cycle_attempts = models.IntegerField()
    dedup_key = models.CharField(max_length=64, null=True)
    dedup_owner_id = models.CharField(max_length=36, null=True)
    dedup_generation = models.IntegerField(null=True)
    dedup_successor_id = models.CharField(max_length=36, null=True, db_index=True)
    next_attempt = models.FloatField()
    lease_until = models.FloatField()
    lease_token = models.CharField(max_length=36, null=True)
    dead_letter = models.BooleanField()
    delivered_at = models.FloatField(null=True)
    deadline = models.FloatField(null=True)
    ack_status = models.CharField(max_length=32, null=True)
    actor = models.CharField(max_length=255, null=True)
    responded_at = models.FloatField(null=True)
    response_metadata = models.JSONField(null=True)
    # Epoch seconds when the escalation chain's next step is due (its first level: set with
    # TIMED_OUT; then each level's wait; cleared when the chain stops or ends), scanned by the
    # fenced ``escalation.escalate_due``; null: none due.
    escalation_due = models.FloatField(null=True)
    # The escalation chain (``runtime.escalation``): null before it starts, ACTIVE while
    # levels fire, RESPONDED once an ACK or DISMISS stopped it, EXHAUSTED when its last level's
    # wait passed. ``escalation_step``: how many steps (level repetitions) of the frozen chain fired.
    escalation_state = models.CharField(max_length=16, null=True)
    escalation_step = models.IntegerField(default=0, db_default=0)
    # When the latest settle to FAILED happened (epoch seconds: the ``created_at`` of the FAILED
    # ``notification_audit_records`` row that settle wrote), set by that settle and by nothing
    # else (``dispatch.settle._SETTLE_SQL``); null for a row never settled FAILED. A replay leaves it, so
    # for a dead letter it is when the current cycle was dead-lettered. The DLQ's failure-time
    # order and its oldest failure read it through ``ix_uns_dlq_failed`` (a column, not a lookup
    # of the audit rows, so those reads never visit every dead letter).
    failed_at = models.FloatField(null=True)

    class Meta:
        db_table = "uns_notifications"
        indexes = [
            # dispatch scan: due PENDING leaders
            models.Index(fields=["status", "next_attempt"], name="ix_uns_dispatch"),
            # response-deadline scan for expire()
            models.Index(fields=["ack_status", "deadline"], name="ix_uns_response"),
            # followers of a leader (settlement)
            models.Index(fields=["dedup_owner_id", "status"], name="ix_uns_dedup_owner"),
            models.Index(fields=["dead_letter", "status"], name="ix_uns_dlq"),
            # the listing: keyset pagination on (acceptance time, id), all or one principal's
            models.Index(AcceptedAt(), F("id"), name="ix_uns_accepted"),
            models.Index(F("principal"), AcceptedAt(), F("id"), name="ix_uns_principal_accepted"),
            # /ui/dlq and GET /api/v1/dlq: dead letters in listing order, without reading the others
            models.Index(AcceptedAt(), F("id"), condition=models.Q(status="FAILED", dead_letter=True),
                         name="ix_uns_dlq_accepted"),
            # /ui/dlq?sort=failed|-failed and the oldest dead letter: dead letters by failure time
            models.Index(F("failed_at"), F("id"), condition=models.Q(status="FAILED", dead_letter=True),
                         name="ix_uns_dlq_failed"),
            # ?status=FAILED on /ui/notifications and GET /api/v1/notifications: failures newest
            # (or oldest) first without walking every delivered row before them; only rows that
            # fail pay for it
            models.Index(AcceptedAt(), F("id"), condition=models.Q(status="FAILED"), name="ix_uns_failed_accepted"),
            # escalation.escalate_due(): only the few rows with an automatic escalation due
            models.Index(fields=["escalation_due"], condition=models.Q(escalation_due__isnull=False),
                         name="ix_uns_escalation_due"),
        ]
        permissions = [
            ("send_notification", "Producer: submit notifications"),
            ("respond_notification", "Responder: ACK, dismiss, snooze and escalate"),
            ("operate_dlq", "Operator: replay and resolve dead-lettered notifications"),
            ("view_console", "Console: read notifications, timelines and the DLQ"),
        ]

    def __str__(self):
        return f"{self.id} {self.status}"


class Event(models.Model):
    """``uns_events``: the append-only operational timeline and the callback outbox."""

    id = models.CharField(primary_key=True, max_length=36)
    notification_id = models.CharField(max_length=36, db_index=True)
    kind = models.CharField(max_length=50)
    at = models.FloatField()
    payload = models.JSONField()
    callback_pending = models.BooleanField(default=False)
    callback_until = models.FloatField()
    callback_token = models.CharField(max_length=36, null=True)
    callback_attempts = models.IntegerField(default=0)
    callback_error = models.CharField(max_length=2000, null=True)

    class Meta:
        db_table = "uns_events"
        indexes = [
            models.Index(fields=["callback_pending", "callback_until"], name="ix_uns_callbacks"),
            models.Index(fields=["notification_id", "at"], name="ix_uns_events_timeline"),
            # /ui/channels: a channel's latest success / failure and its last hour of provider
            # answers, each an index range of one (channel, success) pair, never the timeline
            models.Index(ResultChannel(), ResultSuccess(), F("at"), condition=models.Q(kind="CHANNEL_ATTEMPT_RESULT"),
                         name="ix_uns_channel_results"),
        ]

    def __str__(self):
        return f"{self.kind} {self.notification_id}"


class Dedup(models.Model):
    """``uns_dedup``: the active coalescing window of one scoped effective obligation."""

    key = models.CharField(primary_key=True, max_length=64)
    until = models.FloatField()
    owner_id = models.CharField(max_length=36, null=True)
    generation = models.IntegerField()

    class Meta:
        db_table = "uns_dedup"


class StatusCount(models.Model):
    """``uns_status_counts``: a read model (not in the spec's tables) holding how many
    notifications are in each ``status`` and ``ack_status`` (``kind`` "status" or "ack_status";
    ``value`` the state, "NONE" for a null ``ack_status``), from each ``source`` (kind "source")
    and, among the dead letters (status FAILED with ``dead_letter``), in each list group (kinds
    "dlq:source", "dlq:severity", "dlq:reason", "dlq:channel", "dlq:dedup_key": the value the
    DLQ's group of that name shows, as text, null when the row has none), as signed deltas whose
    sum per (kind, value) is the count. On PostgreSQL, statement-level triggers on
    ``uns_notifications`` append one row per changed (kind, value) per statement (migrations
    0005 and 0018), so no write path can forget them and concurrent writers never wait on a
    counter row (inserts only); ``runtime.counts.compact`` folds the rows. Unused on SQLite,
    where the counts are queried (``runtime.counts``)."""

    id = models.BigAutoField(primary_key=True)
    kind = models.CharField(max_length=16)
    value = models.TextField(null=True)
    delta = models.BigIntegerField()

    class Meta:
        db_table = "uns_status_counts"


class NotificationAuditRecord(models.Model):
    """``notification_audit_records``: append-only compliance delivery records."""

    id = models.CharField(primary_key=True, max_length=36)
    notification_id = models.CharField(max_length=36, db_index=True)
    notification_type = models.CharField(max_length=64)
    status = models.CharField(max_length=32)
    channels_attempted = models.JSONField()
    channels_succeeded = models.JSONField()
    channels_failed = models.JSONField()
    error_message = models.TextField(null=True)
    intent = models.CharField(max_length=64, null=True)
    delivery_mode = models.CharField(max_length=32)
    autonomy_mode = models.CharField(max_length=64, null=True)
    agent_id = models.CharField(max_length=255, null=True)
    policy_config_id = models.CharField(max_length=255)
    policy_config_hash = models.CharField(max_length=64)
    delivered_at = models.FloatField(null=True)
    created_at = models.FloatField()

    class Meta:
        db_table = "notification_audit_records"
        # /ui/overview's last hour of settled attempts, by status, without a scan of the history
        indexes = [models.Index(fields=["created_at", "status"], name="ix_uns_audit_created")]


class AckAuditRecord(models.Model):
    """``ack_audit_records``: append-only acknowledgement transition records."""

    id = models.CharField(primary_key=True, max_length=36)
    notification_id = models.CharField(max_length=36, db_index=True)
    old_status = models.CharField(max_length=32, null=True)
    new_status = models.CharField(max_length=32)
    acked_by = models.CharField(max_length=255)
    acked_at = models.FloatField()
    ack_metadata = models.JSONField(null=True)
    created_at = models.FloatField()

    class Meta:
        db_table = "ack_audit_records"
        # newest first (created_at, id), a page read from the index, not a sort of the history (what
        # /ui/audit read before the people audit, uns_people_audit_records, replaced it there)
        indexes = [models.Index(fields=["created_at", "id"], name="ix_uns_ack_audit_created")]


class Channel(models.Model):
    """``uns_channels``: a named delivery channel configuration a request may name.

    ``config`` holds kind-specific settings (webhook: ``url``, ``timeout``; email: ``to``,
    ``from``, the SMTP server; see each adapter module); ``secret`` is the channel's credential
    (webhook: signing secret; email: SMTP password; apprise: the Apprise URLs, one per line)
    and never leaves the server (not in events, logs or API reads).
    """

    KIND_WEBHOOK = channel_kinds.WEBHOOK
    KIND_CONSOLE = channel_kinds.CONSOLE
    KIND_EMAIL = channel_kinds.EMAIL
    KIND_APPRISE = channel_kinds.APPRISE
    KINDS = channel_kinds.CHOICES

    name = models.SlugField(max_length=64, unique=True)
    kind = models.CharField(max_length=32, choices=KINDS)
    config = models.JSONField(default=dict, blank=True)
    # Text: an apprise channel's secret is several URLs, each with its own tokens.
    secret = models.TextField(blank=True, default="")
    enabled = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "uns_channels"
        ordering = ["name"]

    def __str__(self):
        return f"{self.name} ({self.kind})"


class ChannelAuditRecord(models.Model):
    """``channel_audit_records``: append-only changes of the channel configurations (not in the
    spec's tables; shaped like ``notification_policy_audit_records``).

    ``action`` is CREATE, UPDATE, ROTATE_SECRET, ENABLE, DISABLE or DELETE
    (``runtime.channels``); ``detail`` names what changed (``{"changed": [field, ...]}``), never
    a secret or a config value."""

    id = models.CharField(primary_key=True, max_length=36)
    channel = models.CharField(max_length=64)
    kind = models.CharField(max_length=32)
    action = models.CharField(max_length=16)
    actor = models.CharField(max_length=255)
    at = models.FloatField()
    detail = models.JSONField(default=dict)

    class Meta:
        db_table = "channel_audit_records"
        ordering = ["-at", "-id"]
        indexes = [models.Index(fields=["channel", "at"], name="ix_channel_audit_channel")]

    def __str__(self):
        return f"{self.action} {self.channel}"


class InboxMessage(models.Model):
    """``uns_console_inbox``: what the in-app ``console`` channel delivered, for the console."""

    id = models.CharField(primary_key=True, max_length=36)
    notification_id = models.CharField(max_length=36, db_index=True)
    channel = models.CharField(max_length=64)
    title = models.CharField(max_length=500)
    body = models.TextField(blank=True, default="")
    severity = models.CharField(max_length=16)
    delivered_at = models.FloatField()

    class Meta:
        db_table = "uns_console_inbox"
        ordering = ["-delivered_at"]


class BulkAction(models.Model):
    """``uns_bulk_actions``: one operator's "replay / resolve / ACK / snooze all N matching this
    filter" (``runtime.bulk``), a durable row so a crash or a second call continues it.

    ``action`` is the verb; ``list`` the console list the filter applies to (``dlq`` for replay
    and resolve, ``inbox`` for ack and snooze); ``filter`` the parsed filter
    (``runtime.lists.parse_list_filter``); ``params`` the verb's arguments (snooze: ``seconds``).
    ``expected`` is the N the operator confirmed; at most that many matching items were frozen
    as ``BulkActionItem`` rows at creation (``matched`` counts what matched then). ``state`` is
    ``RUNNING`` until no item is left unsettled, then ``DONE``. Times are epoch seconds.
    """

    id = models.CharField(primary_key=True, max_length=36)
    action = models.CharField(max_length=16)
    list = models.CharField(max_length=16)
    filter = models.JSONField()
    params = models.JSONField()
    created_by = models.CharField(max_length=255)
    created_at = models.FloatField()
    expected = models.IntegerField()
    matched = models.IntegerField()
    total = models.IntegerField()
    state = models.CharField(max_length=16)
    finished_at = models.FloatField(null=True)

    class Meta:
        db_table = "uns_bulk_actions"


class BulkActionItem(models.Model):
    """``uns_bulk_action_items``: one notification of a bulk action, in list order
    (``ordinal`` 0..total-1, the bulk action's cursor), and its per-item result once settled:
    ``result`` ``settled`` (this bulk action performed the transition) or ``refused`` (with the
    runtime's problem ``code`` and ``detail``), ``actor`` who ran it and ``at`` when. Null
    ``result``: not yet run. Written in the transaction of the item's transition, so a result
    exists exactly when the transition (or its refusal) happened."""

    id = models.BigAutoField(primary_key=True)
    bulk = models.ForeignKey(BulkAction, on_delete=models.CASCADE, related_name="items", db_column="bulk_id")
    ordinal = models.IntegerField()
    notification_id = models.CharField(max_length=36)
    result = models.CharField(max_length=16, null=True)
    code = models.CharField(max_length=64, null=True)
    detail = models.CharField(max_length=1000, null=True)
    actor = models.CharField(max_length=255, null=True)
    at = models.FloatField(null=True)

    class Meta:
        db_table = "uns_bulk_action_items"
        constraints = [
            models.UniqueConstraint(fields=["bulk", "ordinal"], name="uq_uns_bulk_item_ordinal"),
            models.UniqueConstraint(fields=["bulk", "notification_id"], name="uq_uns_bulk_item_notification"),
        ]


class PeopleAuditRecord(models.Model):
    """``uns_people_audit_records``: append-only, one row per action a person or token took (not
    in the spec's tables; shaped like ``channel_audit_records``): who (``actor``, a user or token
    name, never a secret) did what (``action``, ``notifications.people_audit.ACTIONS``) to what
    (``object_type``, ``object_id``, ``object_title`` as it was then) and when (``at``, epoch
    seconds). Written by the write path in the transaction of the action itself
    (``notifications.people_audit.record``), so a row exists exactly when the action happened.
    ``bulk_action_id`` names the bulk action an item's action was part of; ``detail`` holds the
    action's arguments (never a secret or a config value).

    Every filter of the audit list (``console.selectors.people_audit``) is one index range read
    newest first: none, ``actor``, ``action``, ``object_type`` (with ``object_id``) and
    ``bulk_action_id``, each followed by ``(at, id)``; a time range bounds ``at``."""

    id = models.CharField(primary_key=True, max_length=36)
    at = models.FloatField()
    actor = models.CharField(max_length=255)
    action = models.CharField(max_length=32)
    object_type = models.CharField(max_length=32)
    object_id = models.CharField(max_length=255)
    object_title = models.CharField(max_length=500, blank=True, default="")
    bulk_action_id = models.CharField(max_length=36, null=True)
    detail = models.JSONField(default=dict)

    class Meta:
        db_table = "uns_people_audit_records"
        indexes = [
            models.Index(fields=["at", "id"], name="ix_people_audit_at"),
            models.Index(fields=["actor", "at", "id"], name="ix_people_audit_actor"),
            models.Index(fields=["action", "at", "id"], name="ix_people_audit_action"),
            models.Index(fields=["object_type", "at", "id"], name="ix_people_audit_type"),
            models.Index(fields=["object_type", "object_id", "at", "id"], name="ix_people_audit_object"),
            models.Index(fields=["bulk_action_id", "at", "id"], condition=models.Q(bulk_action_id__isnull=False),
                         name="ix_people_audit_bulk"),
        ]

    def __str__(self):
        return f"{self.actor} {self.action} {self.object_type} {self.object_id}"


class SeriesRollup(models.Model):
    """``uns_series_rollups``: a read model (not in the spec's tables) of the console's time
    series (``runtime.series``): how many events of a kind (``series``, with a ``label``: a
    channel's name, a latency bin, or "") happened in the bucket starting at ``bucket`` (epoch
    seconds, a multiple of ``step``: 60, 600 or 3600 s), as ``n``. Each writing transaction adds
    to one ``shard`` (0..SHARDS-1) of the key with ``INSERT ... ON CONFLICT DO UPDATE``, in the
    transaction of the events it counts, so concurrent writers rarely wait on the same row and a
    rolled-back write counts nothing; readers sum the shards. ``n`` is signed for the gauge
    deltas (``dlq``, ``ack_pending``). Pruned by ``uns_maintain --apply`` past each step's
    retention (``series.RETENTION_SECONDS``)."""

    pk = models.CompositePrimaryKey("step", "bucket", "series", "label", "shard")
    step = models.IntegerField()
    bucket = models.BigIntegerField()
    series = models.CharField(max_length=32)
    label = models.CharField(max_length=64)
    shard = models.SmallIntegerField()
    n = models.BigIntegerField()

    class Meta:
        db_table = "uns_series_rollups"


class Silence(models.Model):
    """``uns_silences``: an operator's silence (a maintenance window is one that starts later;
    ``runtime.silences``). Not in the spec's tables; shaped like Alertmanager's silences.

    ``matchers``: ``[{"name", "op", "value"}]`` (``op`` one of ``=``, ``!=``, ``=~``, ``!~``;
    all must match). It holds while ``starts_at <= t < ends_at`` (epoch seconds): a silence
    whose end passed is inactive without any job; "expire now" sets ``ends_at`` to that moment
    (``expired_by`` who). Every change writes a ``SilenceAuditRecord``."""

    id = models.CharField(primary_key=True, max_length=36)
    matchers = models.JSONField()
    starts_at = models.FloatField()
    ends_at = models.FloatField()
    comment = models.TextField()
    created_by = models.CharField(max_length=255)
    created_at = models.FloatField()
    updated_at = models.FloatField()
    expired_by = models.CharField(max_length=255, null=True)

    class Meta:
        db_table = "uns_silences"
        # the per-pass read of the silences that hold now or ended lately: a range on ends_at
        indexes = [models.Index(fields=["ends_at", "starts_at"], name="ix_uns_silences_ends")]

    def __str__(self):
        return f"silence {self.id}"


class SilenceAuditRecord(models.Model):
    """``silence_audit_records``: append-only changes of silences (``action`` CREATE, UPDATE or
    EXPIRE; who, when, and the silence as it was after the change)."""

    id = models.CharField(primary_key=True, max_length=36)
    silence_id = models.CharField(max_length=36, db_index=True)
    action = models.CharField(max_length=16)
    actor = models.CharField(max_length=255)
    at = models.FloatField()
    matchers = models.JSONField()
    starts_at = models.FloatField()
    ends_at = models.FloatField()
    comment = models.TextField()

    class Meta:
        db_table = "silence_audit_records"
        ordering = ["at", "id"]


class SilenceHold(models.Model):
    """``uns_silence_holds``: a notification a silence held (``scope`` ``delivery``: its dispatch
    was deferred to the silence's end; ``deadline``: its ACK deadline paused, ``remaining`` the
    seconds it had left when the silence began; ``escalation``: its chain's next step deferred).
    Written with the SILENCED event; read when the silence ends or is expired early (the held
    rows are re-timed to the new end) and when a held notification comes due again."""

    id = models.BigAutoField(primary_key=True)
    silence_id = models.CharField(max_length=36)
    notification_id = models.CharField(max_length=36, db_index=True)
    scope = models.CharField(max_length=16)
    at = models.FloatField()
    remaining = models.FloatField(null=True)

    class Meta:
        db_table = "uns_silence_holds"
        constraints = [models.UniqueConstraint(fields=["silence_id", "notification_id", "scope"],
                                               name="uq_uns_silence_hold")]


class EarlyResponse(models.Model):
    """``uns_early_responses``: an acknowledge or resolve that arrived before its notification
    was delivered (PagerDuty / Alertmanager intake; ``runtime.early``), kept until honoured:
    ``response`` ACKED or DISMISSED (what the notification settles to once delivered),
    ``resolved`` whether the source resolved it (then its page is withheld while unsent),
    ``actor`` and ``at`` (epoch seconds) of the response, ``honoured_at`` when the runtime
    settled it (null: still waiting for delivery)."""

    notification_id = models.CharField(primary_key=True, max_length=36)
    response = models.CharField(max_length=16)
    resolved = models.BooleanField(default=False)
    actor = models.CharField(max_length=255)
    at = models.FloatField()
    metadata = models.JSONField(default=dict)
    honoured_at = models.FloatField(null=True)

    class Meta:
        db_table = "uns_early_responses"
        # the sweep reads only the few responses still waiting
        indexes = [models.Index(fields=["at"], condition=models.Q(honoured_at__isnull=True),
                                name="ix_uns_early_waiting")]
