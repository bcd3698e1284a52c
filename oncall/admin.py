"""The Django admin of teams and schedules: what they hold, who is on call now, and the audit.

Read-only: every change goes through the one on-call service (``notifications.runtime.oncall``,
behind ``/api/v1/oncall``), which validates and audits it; the admin is where an operator looks.
"""
import time

from django.contrib import admin

from oncall import rotation, targets
from oncall.models import AuditRecord, ContactMethod, Layer, Override, Schedule, Team, TeamMember


class _ReadOnly:
    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


class TeamMemberInline(_ReadOnly, admin.TabularInline):
    model = TeamMember
    fields = ("position", "user")
    extra = 0


@admin.register(Team)
class TeamAdmin(_ReadOnly, admin.ModelAdmin):
    list_display = ("name", "description")
    search_fields = ("name",)
    inlines = [TeamMemberInline]


class LayerInline(_ReadOnly, admin.TabularInline):
    model = Layer
    fields = ("position", "name", "members", "rotation_unit", "rotation_count", "start", "time_zone",
              "restrictions", "end")
    extra = 0


class OverrideInline(_ReadOnly, admin.TabularInline):
    model = Override
    fields = ("user", "start", "end", "source", "created_by")
    extra = 0


@admin.register(Schedule)
class ScheduleAdmin(_ReadOnly, admin.ModelAdmin):
    list_display = ("name", "time_zone", "team", "on_call_now")
    search_fields = ("name",)
    exclude = ("feed_token",)
    inlines = [LayerInline, OverrideInline]

    @admin.display(description="On call now")
    def on_call_now(self, obj):
        try:
            return rotation.on_call(targets.schedule_spec(obj, overrides_from=time.time()), time.time()).user or "nobody"
        except rotation.SpecError:
            return "?"


@admin.register(ContactMethod)
class ContactMethodAdmin(_ReadOnly, admin.ModelAdmin):
    list_display = ("user", "position", "kind", "label", "verification", "verified_at")
    list_filter = ("kind", "verification")
    exclude = ("config", "secret")


@admin.register(AuditRecord)
class AuditRecordAdmin(_ReadOnly, admin.ModelAdmin):
    list_display = ("at", "entity", "name", "action", "actor")
    list_filter = ("entity", "action")
    search_fields = ("name", "actor")
