from django.apps import AppConfig


class PoliciesConfig(AppConfig):
    name = "policies"
    verbose_name = "UNS policies"

    def ready(self):
        from django.db.models.signals import post_migrate

        from notifications.seed import seed_groups_and_channels

        # This app's permissions (policies.manage_policies) exist only after its own
        # post_migrate has created them, so the group seed runs again here.
        post_migrate.connect(seed_groups_and_channels, sender=self, dispatch_uid="policies-seed-groups")
