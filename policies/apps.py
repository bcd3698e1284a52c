from django.apps import AppConfig
from django.db.models.signals import post_migrate


class PoliciesConfig(AppConfig):
    name = "policies"
    verbose_name = "UNS policies"

    def ready(self):
        from notifications.runtime import hooks  # in ready(): it imports models, loaded after apps.py
        from notifications.seed import seed_groups_and_channels  # in ready(): it imports models
        from policies.governance.bridge import settle_response  # in ready(): it imports models

        hooks.on_response_settled(settle_response)  # a governance approval's response settles its decision

        # This app's permissions (policies.manage_policies) exist only after its own
        # post_migrate has created them, so the group seed runs again here.
        post_migrate.connect(seed_groups_and_channels, sender=self, dispatch_uid="policies-seed-groups")
