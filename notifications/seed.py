"""Seeded after every migrate: the capability groups and the built-in ``console`` channel.
Idempotent; it adds what is missing and never removes what an admin granted."""

GROUP_CAPABILITIES = {
    "producer": ["send_notification"],
    "responder": ["respond_notification", "view_console"],
    "operator": ["operate_dlq", "view_console"],
    "policy_admin": ["view_console", "policies.manage_policies"],
    "console": ["view_console"],
}


def seed_groups_and_channels(sender=None, using="default", **kwargs):
    from django.contrib.auth.models import Group, Permission

    from .models import Channel

    for group_name, codenames in GROUP_CAPABILITIES.items():
        group, _ = Group.objects.using(using).get_or_create(name=group_name)
        perms = list(Permission.objects.using(using).filter(content_type__app_label="notifications",
                                                            codename__in=[c for c in codenames if "." not in c]))
        for app_label, codename in (c.split(".", 1) for c in codenames if "." in c):
            # "app.codename" entries exist once that app's permissions are created: the policies
            # app re-runs this seed on its own post_migrate.
            perms += Permission.objects.using(using).filter(content_type__app_label=app_label, codename=codename)
        group.permissions.add(*perms)
    Channel.objects.using(using).get_or_create(name="console", defaults={"kind": Channel.KIND_CONSOLE, "config": {}})
