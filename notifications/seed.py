"""Seeded after every migrate: the capability groups (``access.GROUP_CAPABILITIES``) and the
built-in ``console`` channel. Idempotent; it adds what is missing and never removes what an admin
granted."""


def seed_groups_and_channels(sender=None, using="default", **kwargs):
    from django.contrib.auth.models import Group, Permission
    from django.db.models import Q

    from .access import GROUP_CAPABILITIES  # here: every command's start-up imports this module (apps.ready)
    from .models import Channel

    for group_name, capabilities in GROUP_CAPABILITIES.items():
        group, _ = Group.objects.using(using).get_or_create(name=group_name)
        wanted = Q(pk__in=[])
        for capability in capabilities:
            app_label, codename = capability.split(".", 1)
            wanted |= Q(content_type__app_label=app_label, codename=codename)
        # Another app's permissions (policies.manage_policies) exist once that app's are created:
        # the policies app re-runs this seed on its own post_migrate.
        group.permissions.add(*Permission.objects.using(using).filter(wanted))
    Channel.objects.using(using).get_or_create(name="console", defaults={"kind": Channel.KIND_CONSOLE, "config": {}})
