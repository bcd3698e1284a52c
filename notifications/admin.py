"""Django admin: channels are configured here; notification state is read-only (it changes only
through the runtime)."""
from django.contrib import admin

from .models import Channel, Event, Notification


@admin.register(Channel)
class ChannelAdmin(admin.ModelAdmin):
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
