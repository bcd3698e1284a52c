"""HTTP requests on the database threads (the scaled mode), not all on one thread per process.

Under ASGI, Django runs every synchronous middleware and view of a process on one shared
thread (``sync_to_async(thread_sensitive=True)``), and the project's chain is synchronous
(WhiteNoise, the request guards, DRF's views): one request at a time per web process, each
waiting out its own round trips and commit flush before the next may start (profiled:
daphne at 16 producers did no better than 1.4x its 1-producer rate). ``ThreadedASGIHandler``
builds the middleware chain as for WSGI (synchronous end to end: the same middleware, the same
views, the same responses) and runs each request's whole chain in one
``ws_auth.database_call``: one of the process's ``UNS_WS_DB_THREADS`` database threads, whose
connections are handed back to the pool before and after the request (channels'
``close_old_connections``), so requests of one process wait on PostgreSQL side by side.

Used when ``UNS_HTTP_THREADS`` is on (the default). On SQLite the threads keep their connection
(``CONN_MAX_AGE = None``: no request opens and closes one) and queue for the write lock in the
process (``uns_project.sqlite``), not in SQLite's sleeping busy handler.
"""
import django
from django.conf import settings
from django.core.asgi import get_asgi_application
from django.core.handlers.asgi import ASGIHandler


class ThreadedASGIHandler(ASGIHandler):
    """Django's ``ASGIHandler`` with the synchronous middleware chain (``load_middleware(is_async
    =False)``, as ``WSGIHandler`` builds it) run per request in ``ws_auth.database_call``."""

    def load_middleware(self, is_async=False):
        """Build the synchronous chain, then expose it to ``get_response_async`` as a coroutine
        function running on a database thread (``is_async`` is ignored: always threaded)."""
        from .ws_auth import database_call  # after django.setup(): it imports the models

        super().load_middleware(is_async=False)
        self._middleware_chain = database_call(self._middleware_chain)


def asgi_application():
    """The Django ASGI application for ``uns_project.asgi``: ``ThreadedASGIHandler`` when
    ``settings.UNS_HTTP_THREADS``, else Django's own (``get_asgi_application``)."""
    django.setup(set_prefix=False)
    if settings.UNS_HTTP_THREADS:
        return ThreadedASGIHandler()
    return get_asgi_application()
