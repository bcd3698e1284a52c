from django.apps import AppConfig
from django.db.models.signals import post_migrate

from core import hooks


class PoliciesConfig(AppConfig):
    name = "policies"
    verbose_name = "UNS policies"

    def ready(self):
        from notifications.seed import seed_groups_and_channels  # in ready(): it imports models

        # A governance approval's response settles its decision (a dotted path: the runtime and the
        # bridge load on first use, not in every management command).
        hooks.on_response_settled("policies.governance.bridge.settle_response")

        # This app's permissions (policies.manage_policies) exist only after its own
        # post_migrate has created them, so the group seed runs again here.
        post_migrate.connect(seed_groups_and_channels, sender=self, dispatch_uid="policies-seed-groups")
