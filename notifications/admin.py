"""Django admin: channels are configured here; notification state is read-only (it changes only
through the runtime).

Bad input is never a 500: a NUL in an admin path or query is refused before any view
(``api.middleware``); a JSON form value UNS cannot store is a form error (``StorableJSONField``).
Both apply ``core.json_values.refusal``, the rule every transport uses."""
import json

from django import forms
from django.contrib import admin, messages
from django.db import models
from django.shortcuts import redirect
from django.urls import reverse
from django.utils.html import format_html

from core.errors import UNSError
from core.json_values import DEPTH_MESSAGE, refusal

from .models import Channel, ChannelAuditRecord, Event, Notification
from .runtime import channels


class StorableJSONField(forms.JSONField):
    """A JSON form field that refuses, as a form error naming the member, what ``refusal``
    refuses: ``1e400`` and ``Infinity`` (jsonb has no infinity), a NUL or lone surrogate in a
    string or key, nesting deeper than ``MAX_JSON_DEPTH`` (also text too deep for Python's
    parser, which would raise ``RecursionError``). The refused text is shown again as typed."""

    def to_python(self, value):
        try:
            converted = super().to_python(value)
        except RecursionError:
            raise forms.ValidationError(DEPTH_MESSAGE, code="invalid") from None
        found = refusal(converted)
        if found:
            field, message = found
            raise forms.ValidationError(f"{field}: {message}" if field else message, code="invalid")
        return converted

    def bound_data(self, data, initial):
        if self.disabled:
            return initial
        if data is None:
            return None
        try:
            value = json.loads(data, cls=self.decoder)
        except (json.JSONDecodeError, RecursionError):
            return forms.fields.InvalidJSONInput(data)
        return forms.fields.InvalidJSONInput(data) if refusal(value) else value


class ChannelForm(forms.ModelForm):
    """The admin's channel form. The secret is write-only: ``new_secret`` is a password input
    that never renders a value (``render_value=False``) and is empty on every page; leaving it
    empty keeps the stored secret, ``clear_secret`` removes it. ``clean`` asks the channel
    service's own checks (``channels.validate_config``, ``channels.routing_refusal``) so a bad
    URL, a bad timeout or disabling a channel the ACTIVE policy routes to is a form error, and
    nothing is saved."""

    new_secret = forms.CharField(
        required=False, strip=False, widget=forms.PasswordInput(render_value=False),
        label="New secret", help_text="Write-only: webhook signing key, SMTP password, or the Apprise URLs "
                                      "(separated by spaces). Leave empty to keep the current one.")
    clear_secret = forms.BooleanField(required=False, label="Remove the secret")

    class Meta:
        model = Channel
        fields = ("name", "kind", "enabled", "config")

    def clean(self):
        data = super().clean()
        instance = self.instance if self.instance.pk else None
        kind = instance.kind if instance else data.get("kind")
        if self.errors or kind is None:
            return data
        if data.get("new_secret") and data.get("clear_secret"):
            raise forms.ValidationError("give a new secret or remove it, not both")
        secret = "" if data.get("clear_secret") else data.get("new_secret") or (instance.secret if instance else "")
        try:
            data["config"] = channels.validate_config(kind, data.get("config") or {}, secret)
        except UNSError as exc:
            for error in exc.extra.get("errors", []):
                field = error["field"]
                target = "config" if field.startswith("config") else None
                self.add_error(target, f"{field}: {error['message']}" if target is None or field != "config"
                               else error["message"])
            return data
        if instance and instance.enabled and data.get("enabled") is False:
            refusal = channels.routing_refusal(instance.name)
            if refusal is not None:
                self.add_error("enabled", refusal.detail)
        return data


@admin.register(Channel)
class ChannelAdmin(admin.ModelAdmin):
    """Channels through the channel service (``runtime.channels``): every save is its verbs
    (create, update, rotate_secret, enable, disable), audited with the admin user as actor;
    deleting a channel the ACTIVE policy routes to is refused with a message."""

    form = ChannelForm
    formfield_overrides = {models.JSONField: {"form_class": StorableJSONField}}
    list_display = ("name", "kind", "enabled", "created_at")
    list_filter = ("kind", "enabled")
    actions = ["enable_channels", "disable_channels"]

    def get_readonly_fields(self, request, obj=None):
        return ("name", "kind") if obj is not None else ()

    def get_actions(self, request):
        found = super().get_actions(request)
        found.pop("delete_selected", None)  # a bulk delete would skip the routed-channel check per row
        return found

    def save_model(self, request, obj, form, change):
        actor = request.user.get_username()
        data = form.cleaned_data
        secret = None if not (data.get("new_secret") or data.get("clear_secret")) else data.get("new_secret") or ""
        try:
            if not change:
                row = channels.create(obj.name, obj.kind, data["config"], secret or "", enabled=obj.enabled,
                                      actor=actor)
            else:
                before = Channel.objects.get(pk=obj.pk)
                changes = {k: data["config"].get(k) for k in set(before.config) | set(data["config"])}
                channels.update(obj.name, changes, actor=actor)
                if secret is not None:
                    channels.rotate_secret(obj.name, secret, actor=actor)
                if obj.enabled != before.enabled:
                    (channels.enable if obj.enabled else channels.disable)(obj.name, actor=actor)
                row = Channel.objects.get(pk=obj.pk)
        except UNSError as exc:  # a race past the form's checks: say so, change nothing more
            self.message_user(request, f"{exc.code}: {exc.detail}", messages.ERROR)
            return
        obj.pk, obj.config, obj.secret, obj.enabled = row.pk, row.config, row.secret, row.enabled

    def delete_view(self, request, object_id, extra_context=None):
        obj = self.get_object(request, object_id)
        if obj is not None:
            refusal = channels.routing_refusal(obj.name)
            if refusal is not None:
                self.message_user(request, refusal.detail, messages.ERROR)
                return redirect(reverse("admin:notifications_channel_change", args=[obj.pk]))
        return super().delete_view(request, object_id, extra_context)

    def delete_model(self, request, obj):
        channels.delete(obj.name, actor=request.user.get_username())

    @admin.action(description="Enable the selected channels")
    def enable_channels(self, request, queryset):
        self._each(request, queryset, channels.enable, "enabled")

    @admin.action(description="Disable the selected channels")
    def disable_channels(self, request, queryset):
        self._each(request, queryset, channels.disable, "disabled")

    def _each(self, request, queryset, verb, done):
        names = []
        for name in queryset.values_list("name", flat=True):
            try:
                verb(name, actor=request.user.get_username())
                names.append(name)
            except UNSError as exc:
                self.message_user(request, f"{name}: {exc.detail}", messages.ERROR)
        if names:
            self.message_user(request, f"{done}: {', '.join(names)}", messages.SUCCESS)


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(Notification)
class NotificationAdmin(ReadOnlyAdmin):
    list_display = ("id", "status", "dead_letter", "ack_status", "attempts", "principal")
    list_filter = ("status", "dead_letter", "ack_status")
    search_fields = ("id", "principal")
    readonly_fields = ("accepted_under",)

    @admin.display(description="accepted under")
    def accepted_under(self, obj):
        """One click to the policy version (and its content) and the revision the notification
        was resolved under at intake (``metadata.uns_resolution``); the policy admin's pages,
        reached by URL name."""
        resolution = ((obj.notification or {}).get("metadata") or {}).get("uns_resolution") or {}
        policy_id, version, revision = (resolution.get("policy_id"), resolution.get("policy_version"),
                                        resolution.get("revision"))
        if not isinstance(policy_id, str) or not isinstance(version, int):
            return "-"
        policy_url = reverse("admin:policies_policy_by_version", args=[policy_id, version])
        history_url = reverse("admin:policies_policysnapshot_by_revision", args=[int(revision or 0)])
        return format_html('<a class="accepted-under-policy" href="{}">{} v{} (content)</a>, rule {}, '
                           '<a href="{}">revision {}</a>', policy_url, policy_id, version,
                           resolution.get("rule") or "(defaults)", history_url, revision)


@admin.register(Event)
class EventAdmin(ReadOnlyAdmin):
    list_display = ("kind", "notification_id", "at")
    list_filter = ("kind",)
    search_fields = ("notification_id",)


@admin.register(ChannelAuditRecord)
class ChannelAuditRecordAdmin(ReadOnlyAdmin):
    """``channel_audit_records``: who changed which channel when (append-only; no values)."""

    list_display = ("at", "channel", "kind", "action", "actor")
    list_filter = ("action", "kind")
    search_fields = ("channel", "actor")
