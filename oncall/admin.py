"""The Django admin of teams and schedules: create and change them (name, description,
members; a schedule's zone and team), see their layers and overrides, who is on call now, and
the audit of every change.

Every write calls the one on-call service (``notifications.runtime.oncall``), never a raw save,
so the admin's changes are validated and audited like the API's; the actor is the admin user.
Writing needs the operator capability (``core.capabilities.OPERATE_DLQ``), as ``/api/v1/oncall``
does. Layers, overrides, deletions (refused while the ACTIVE policy set names the target) and
contact methods are changed through the API (``/api/v1/oncall``); the admin shows them.
"""
import time

from django import forms
from django.contrib import admin, messages
from django.contrib.auth import get_user_model
from django.http import HttpResponseRedirect

from core.capabilities import OPERATE_DLQ
from core.errors import UNSError
from notifications.access import has_capability
from notifications.runtime import oncall as service
from oncall import rotation, targets
from oncall.models import AuditRecord, ContactMethod, Layer, Override, Schedule, Team, TeamMember


def _can_write(request) -> bool:
    return request.user.is_active and request.user.is_staff and has_capability(request.user, OPERATE_DLQ)


class _ReadOnly:
    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


class _ThroughTheService:
    """Add and change through ``runtime.oncall`` (``write(request, form, change) -> row``); a
    refusal is shown as an error message on the same form, and nothing is written."""

    def has_add_permission(self, request, obj=None):
        return _can_write(request)

    def has_change_permission(self, request, obj=None):
        return _can_write(request)

    def has_delete_permission(self, request, obj=None):
        return False

    def has_view_permission(self, request, obj=None):
        return request.user.is_active and request.user.is_staff

    def save_model(self, request, obj, form, change):
        try:
            row = self.write(request, form, change)
        except UNSError as exc:
            request._oncall_error = exc
            return
        for f in type(obj)._meta.concrete_fields:
            setattr(obj, f.attname, getattr(row, f.attname))

    def save_related(self, request, form, formsets, change):
        pass  # nothing is written outside the service

    def _failed(self, request):
        exc = getattr(request, "_oncall_error", None)
        if exc is None:
            return None
        errors = "; ".join(f"{e.get('field')}: {e.get('message')}" for e in exc.extra.get("errors", []))
        self.message_user(request, f"{exc.detail}{' (' + errors + ')' if errors else ''}", messages.ERROR)
        return HttpResponseRedirect(request.path)

    def log_addition(self, request, obj, message):
        if getattr(request, "_oncall_error", None) is None:
            return super().log_addition(request, obj, message)

    def log_change(self, request, obj, message):
        if getattr(request, "_oncall_error", None) is None:
            return super().log_change(request, obj, message)

    def response_add(self, request, obj, post_url_continue=None):
        return self._failed(request) or super().response_add(request, obj, post_url_continue)

    def response_change(self, request, obj):
        return self._failed(request) or super().response_change(request, obj)


class TeamForm(forms.ModelForm):
    members = forms.ModelMultipleChoiceField(queryset=get_user_model().objects.filter(is_active=True)
                                             .order_by("username"), required=False,
                                             help_text="Paged in user-name order when the team is a target.")

    class Meta:
        model = Team
        fields = ["name", "description"]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.instance.pk:
            self.fields["name"].disabled = True
            self.initial["members"] = [m.user_id for m in TeamMember.objects.filter(team=self.instance)]


class TeamMemberInline(_ReadOnly, admin.TabularInline):
    model = TeamMember
    fields = ("position", "user")
    extra = 0


@admin.register(Team)
class TeamAdmin(_ThroughTheService, admin.ModelAdmin):
    form = TeamForm
    list_display = ("name", "description")
    search_fields = ("name",)
    inlines = [TeamMemberInline]

    def write(self, request, form, change):
        data = form.cleaned_data
        members = [u.get_username() for u in data["members"]]
        if change:
            return service.update_team(form.instance.name, description=data["description"], members=members,
                                       actor=request.user.get_username())
        return service.create_team(data["name"], description=data["description"], members=members,
                                   actor=request.user.get_username())


class LayerInline(_ReadOnly, admin.TabularInline):
    model = Layer
    fields = ("position", "name", "members", "rotation_unit", "rotation_count", "start", "time_zone",
              "restrictions", "end")
    extra = 0


class OverrideInline(_ReadOnly, admin.TabularInline):
    model = Override
    fields = ("user", "start", "end", "source", "created_by")
    extra = 0


class ScheduleForm(forms.ModelForm):
    class Meta:
        model = Schedule
        fields = ["name", "description", "time_zone", "team"]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.instance.pk:
            self.fields["name"].disabled = True

    def clean_time_zone(self):
        value = self.cleaned_data["time_zone"]
        try:
            rotation.zone(value)
        except rotation.SpecError as exc:
            raise forms.ValidationError(exc.message) from None
        return value


@admin.register(Schedule)
class ScheduleAdmin(_ThroughTheService, admin.ModelAdmin):
    form = ScheduleForm
    list_display = ("name", "time_zone", "team", "on_call_now")
    search_fields = ("name",)
    inlines = [LayerInline, OverrideInline]

    def write(self, request, form, change):
        data = form.cleaned_data
        team = data["team"].name if data["team"] else None
        actor = request.user.get_username()
        if change:
            return service.update_schedule(form.instance.name, {"description": data["description"],
                                                                "time_zone": data["time_zone"], "team": team},
                                           actor=actor)
        return service.create_schedule(data["name"], time_zone=data["time_zone"], description=data["description"],
                                       team=team, actor=actor)

    @admin.display(description="On call now")
    def on_call_now(self, obj):
        now = time.time()
        try:
            return rotation.on_call(targets.schedule_spec(obj, overrides_from=now), now).user or "nobody"
        except rotation.SpecError:
            return "?"


@admin.register(ContactMethod)
class ContactMethodAdmin(_ReadOnly, admin.ModelAdmin):
    list_display = ("user", "position", "kind", "label", "verification", "verified_at")
    list_filter = ("kind", "verification")
    fields = ("user", "position", "kind", "label", "verification", "verified_at", "last_test_at")


@admin.register(AuditRecord)
class AuditRecordAdmin(_ReadOnly, admin.ModelAdmin):
    list_display = ("at", "entity", "name", "action", "actor")
    list_filter = ("entity", "action")
    search_fields = ("name", "actor")
