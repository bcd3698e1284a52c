"""App configurations of the project package itself."""
from django.apps import AppConfig
from django.contrib.admin import autodiscover
from django.contrib.admin.apps import SimpleAdminConfig
from django.contrib.admin.checks import check_admin_app, check_dependencies
from django.core import checks


class DaphneRunserverConfig(AppConfig):
    """Daphne's ``runserver`` command (ASGI: HTTP and WebSocket), without ``daphne.apps``.

    ``daphne.apps`` imports ``daphne.server`` (Twisted and Autobahn, about 0.6 s) to install its
    reactor early, and that import would run in every management command. Here the app only
    lends its ``management/commands``: ``runserver`` imports the server when it runs. It must stay
    listed before ``django.contrib.staticfiles`` (whose ``runserver`` would win otherwise;
    ``tests/commands/test_startup.py`` checks the order).
    """

    name = "daphne"
    verbose_name = "Daphne"


class AdminConfig(SimpleAdminConfig):
    """Django's admin, discovering the apps' ``admin`` modules with the URLconf
    (``uns_project.urls`` calls ``admin.autodiscover()``) instead of at start-up.

    The ``admin`` modules import the API parsers and the runtime (Django REST framework, httpx:
    about 0.6 s), which no management command but the servers needs. The admin check discovers
    them first, so ``manage.py check`` still checks every ``ModelAdmin``.
    """

    def ready(self):
        checks.register(check_dependencies, checks.Tags.admin)
        checks.register(check_discovered_admin_app, checks.Tags.admin)


def check_discovered_admin_app(app_configs, **kwargs):
    """Django's ``check_admin_app`` over every app's ``admin`` module (imported here if the
    URLconf has not been loaded yet)."""
    autodiscover()
    return check_admin_app(app_configs, **kwargs)
