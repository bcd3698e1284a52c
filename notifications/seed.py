"""Seeded after every migrate: the capability groups and the built-in ``console`` channel.
Idempotent; it adds what is missing and never removes what an admin granted."""

GROUP_CAPABILITIES = {
    "producer": ["send_notification"],
    "responder": ["respond_notification", "view_console"],
    "operator": ["operate_dlq", "view_console"],
    "policy_admin": ["view_console"],
    "console": ["view_console"],
}


def seed_groups_and_channels(sender=None, using="default", **kwargs):
    from django.contrib.auth.models import Group, Permission

    from .models import Channel

    for group_name, codenames in GROUP_CAPABILITIES.items():
        group, _ = Group.objects.using(using).get_or_create(name=group_name)
        perms = Permission.objects.using(using).filter(content_type__app_label="notifications", codename__in=codenames)
        group.permissions.add(*perms)
    Channel.objects.using(using).get_or_create(name="console", defaults={"kind": Channel.KIND_CONSOLE, "config": {}})
