from django.apps import AppConfig


class NotificationsConfig(AppConfig):
    name = "notifications"
    verbose_name = "UNS notifications"

    def ready(self):
        from django.db.models.signals import post_migrate

        from .seed import seed_groups_and_channels

        post_migrate.connect(seed_groups_and_channels, sender=self)
