import threading

from django.apps import AppConfig, apps
from django.db.models.signals import post_migrate

from core import hooks


class NotificationsConfig(AppConfig):
    """The notifications app. It owns the process's ``Runtime`` (``runtime()``), shared by every
    transport of the process: the HTTP views, the compatible intake (notifications/integrations/), the policy API, the
    WebSocket consumers and the MCP server."""

    name = "notifications"
    verbose_name = "UNS notifications"

    #: The process's runtime once built; tests install their fake-clock one here.
    process_runtime = None
    #: The ``Worker`` whose loops this process runs (set by the ASGI lifespan), for ``/readyz``.
    embedded_worker = None
    _runtime_lock = threading.Lock()

    def ready(self):
        from .seed import seed_groups_and_channels  # in ready(): it imports models

        post_migrate.connect(seed_groups_and_channels, sender=self)
        # The Prometheus counters count committed events (a dotted path: the runtime loads on first use).
        hooks.on_committed("notifications.runtime.metrics.record_committed")

    def runtime(self):
        """The process's ``Runtime`` (real clock and adapters), built on first use, once."""
        if self.process_runtime is None:
            with self._runtime_lock:
                if self.process_runtime is None:
                    from .runtime import Runtime  # here: apps.py is imported before the models it needs

                    self.process_runtime = Runtime()
        return self.process_runtime


def runtime():
    """The process's ``notifications.runtime.Runtime``, owned by ``NotificationsConfig``: every
    transport calls this rather than building its own. Built lazily (real clock and adapters)."""
    return apps.get_app_config("notifications").runtime()
