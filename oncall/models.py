"""The on-call tables: teams, schedules (layers, overrides), people's contact methods, and the
audit of every change to them (``oncall_audit_records``: who, when, what; never a secret).

A responder is a ``django.contrib.auth`` user. Nothing here imports UNS beyond ``core``; the
writes are ``notifications.runtime.oncall``'s, the "who is on call" rule ``oncall.rotation``'s.
"""
from django.conf import settings
from django.db import models

from core import channel_kinds


class Team(models.Model):
    """``oncall_teams``: a named group of people (``members``, in ``TeamMember.position`` order)."""

    name = models.SlugField(max_length=64, unique=True)
    description = models.TextField(blank=True, default="")
    created_at = models.FloatField()

    class Meta:
        db_table = "oncall_teams"
        ordering = ["name"]

    def __str__(self):
        return self.name


class TeamMember(models.Model):
    """``oncall_team_members``: ``user`` belongs to ``team`` at ``position`` (0 first)."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="oncall_teams")
    position = models.PositiveIntegerField(default=0)

    class Meta:
        db_table = "oncall_team_members"
        ordering = ["team", "position"]
        constraints = [models.UniqueConstraint(fields=["team", "user"], name="oncall_team_member_once")]


class Schedule(models.Model):
    """``oncall_schedules``: a named schedule, its display ``time_zone`` (IANA), its ``team``
    (optional) and ``feed_token``, the secret of its iCalendar feed URL (write-only: the API
    shows the feed URL only to operators)."""

    name = models.SlugField(max_length=64, unique=True)
    description = models.TextField(blank=True, default="")
    time_zone = models.CharField(max_length=64, default="UTC")
    team = models.ForeignKey(Team, null=True, blank=True, on_delete=models.SET_NULL, related_name="schedules")
    feed_token = models.CharField(max_length=64, unique=True)
    created_at = models.FloatField()
    updated_at = models.FloatField()

    class Meta:
        db_table = "oncall_schedules"
        ordering = ["name"]

    def __str__(self):
        return self.name


class Layer(models.Model):
    """``oncall_layers``: one rotation of a schedule. ``position``: precedence (a higher one wins
    where it has someone). ``members``: user names in rotation order. ``rotation_unit``
    (``hours``/``days``/``weeks``) times ``rotation_count`` is the rotation length; ``start`` the
    naive local wall clock ``YYYY-MM-DDTHH:MM`` of the first hand-off in ``time_zone``;
    ``restrictions`` ``[{"days", "start", "end"}]``; ``end`` epoch seconds or null
    (``oncall.rotation`` gives the meaning)."""

    schedule = models.ForeignKey(Schedule, on_delete=models.CASCADE, related_name="layers")
    position = models.PositiveIntegerField()
    name = models.CharField(max_length=64, blank=True, default="")
    members = models.JSONField(default=list)
    rotation_unit = models.CharField(max_length=8, default="weeks")
    rotation_count = models.PositiveIntegerField(default=1)
    start = models.CharField(max_length=32)
    time_zone = models.CharField(max_length=64, default="UTC")
    restrictions = models.JSONField(default=list, blank=True)
    end = models.FloatField(null=True, blank=True)

    class Meta:
        db_table = "oncall_layers"
        ordering = ["schedule", "position"]
        constraints = [models.UniqueConstraint(fields=["schedule", "position"], name="oncall_layer_position_once")]

    def as_spec_dict(self) -> dict:
        """The stored form ``oncall.rotation.layer_from_dict`` reads."""
        return {"name": self.name, "members": list(self.members), "rotation_unit": self.rotation_unit,
                "rotation_count": self.rotation_count, "start": self.start, "time_zone": self.time_zone,
                "restrictions": list(self.restrictions or []), "end": self.end}


class Override(models.Model):
    """``oncall_overrides``: ``user`` is on call in ``schedule`` from ``start`` to ``end`` (epoch
    seconds, end exclusive). ``source``: ``manual`` or ``ical`` (imported; ``ical_uid`` the
    event's UID, so a re-import replaces rather than duplicates)."""

    id = models.CharField(max_length=36, primary_key=True)
    schedule = models.ForeignKey(Schedule, on_delete=models.CASCADE, related_name="overrides")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="oncall_overrides")
    start = models.FloatField()
    end = models.FloatField()
    source = models.CharField(max_length=16, default="manual")
    ical_uid = models.CharField(max_length=255, null=True, blank=True)
    created_by = models.CharField(max_length=150)
    created_at = models.FloatField()

    class Meta:
        db_table = "oncall_overrides"
        ordering = ["schedule", "created_at", "id"]
        indexes = [models.Index(fields=["schedule", "end"], name="oncall_override_end")]


class ContactMethod(models.Model):
    """``oncall_contact_methods``: one way to reach ``user``, tried in ``position`` order (0
    first). ``kind``/``config``/``secret`` as a channel's (``core.channel_kinds``; the secret is
    write-only and never leaves the server). ``verification``: ``UNVERIFIED`` until a test send
    succeeds (``VERIFIED``, ``verified_at``) or fails (``FAILED``); only a ``VERIFIED`` method is
    ever paged. Changing the address or the secret makes it ``UNVERIFIED`` again."""

    UNVERIFIED, VERIFIED, FAILED = "UNVERIFIED", "VERIFIED", "FAILED"
    VERIFICATION = [(UNVERIFIED, UNVERIFIED), (VERIFIED, VERIFIED), (FAILED, FAILED)]

    id = models.CharField(max_length=36, primary_key=True)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="contact_methods")
    position = models.PositiveIntegerField(default=0)
    label = models.CharField(max_length=64, blank=True, default="")
    kind = models.CharField(max_length=32, choices=channel_kinds.CHOICES)
    config = models.JSONField(default=dict, blank=True)
    secret = models.TextField(blank=True, default="")
    verification = models.CharField(max_length=16, choices=VERIFICATION, default=UNVERIFIED)
    verified_at = models.FloatField(null=True, blank=True)
    last_test_at = models.FloatField(null=True, blank=True)
    last_test_error = models.TextField(blank=True, default="")
    created_at = models.FloatField()

    class Meta:
        db_table = "oncall_contact_methods"
        ordering = ["user", "position", "created_at"]


class AuditRecord(models.Model):
    """``oncall_audit_records``: one change to a team, schedule, layer, override or contact
    method: ``entity`` (``team``, ``schedule``, ``contact_method``), its ``name`` (the team's or
    schedule's name, ``<user>/<id>`` for a contact method), ``action`` (``CREATE``, ``UPDATE``,
    ``DELETE``, ``ADD_LAYER``, ``UPDATE_LAYER``, ``DELETE_LAYER``, ``ADD_OVERRIDE``,
    ``DELETE_OVERRIDE``, ``IMPORT``, ``VERIFY``, ``ROTATE_FEED_TOKEN``), ``actor``, ``at``
    (epoch seconds), ``detail`` (what changed; never a secret)."""

    id = models.CharField(max_length=36, primary_key=True)
    entity = models.CharField(max_length=32)
    name = models.CharField(max_length=255)
    action = models.CharField(max_length=32)
    actor = models.CharField(max_length=150)
    at = models.FloatField()
    detail = models.JSONField(default=dict)

    class Meta:
        db_table = "oncall_audit_records"
        ordering = ["at", "id"]
        indexes = [models.Index(fields=["entity", "name", "at"], name="oncall_audit_entity")]
