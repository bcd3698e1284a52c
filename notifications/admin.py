"""Django admin: channels are configured here; notification state is read-only (it changes only
through the runtime).

Bad input is never a 500 (issue 12): a NUL in an admin path or query is refused before any view
(``api.middleware``); a JSON form value UNS cannot store is a form error (``StorableJSONField``).
Both apply ``api.parsers.refusal``, the rule every transport uses."""
import json

from django import forms
from django.contrib import admin
from django.db import models

from .api.parsers import DEPTH_MESSAGE, refusal
from .models import Channel, Event, Notification


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


@admin.register(Channel)
class ChannelAdmin(admin.ModelAdmin):
    formfield_overrides = {models.JSONField: {"form_class": StorableJSONField}}
    list_display = ("name", "kind", "enabled", "created_at")
    list_filter = ("kind", "enabled")
    exclude = ("secret",)


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


@admin.register(Event)
class EventAdmin(ReadOnlyAdmin):
    list_display = ("kind", "notification_id", "at")
    list_filter = ("kind",)
    search_fields = ("notification_id",)
