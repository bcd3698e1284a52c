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

One hop per request: Django's own handler wraps each request in asgiref's
``ThreadSensitiveContext`` (a new single-thread executor, so a new OS thread started and joined
per request) and hops to it twice more, for the ``request_started`` signal and for
``response.close()`` (``request_finished``). ``ThreadedASGIHandler`` runs both inside the
request's one ``database_call`` instead (a response that is not streamed is complete there, so it
is closed there: its connection goes back to the pool before the bytes are sent), and needs no
``ThreadSensitiveContext``: nothing it runs is thread-sensitive (``bench/floor.py`` measured the
three hops and the thread at about 1 ms of CPU per request).

Used when ``UNS_HTTP_THREADS`` is on (the default). On SQLite the threads keep their connection
(``CONN_MAX_AGE = None``: no request opens and closes one) and queue for the write lock in the
process (``uns_project.sqlite``), not in SQLite's sleeping busy handler.
"""
import asyncio

import django
from django.conf import settings
from django.core import signals
from django.core.asgi import get_asgi_application
from django.core.exceptions import RequestAborted
from django.core.handlers.asgi import ASGIHandler, get_script_prefix
from django.http import FileResponse
from django.urls import set_script_prefix


class ThreadedASGIHandler(ASGIHandler):
    """Django's ``ASGIHandler`` with the synchronous middleware chain (``load_middleware(is_async
    =False)``, as ``WSGIHandler`` builds it) run per request in one ``ws_auth.database_call``,
    together with the ``request_started`` signal and, for a response that is not streamed, its
    ``close()`` (``request_finished``)."""

    def load_middleware(self, is_async=False):
        """Build the synchronous chain (``is_async`` is ignored: always threaded); ``handle`` runs
        it with ``BaseHandler.get_response`` on a database thread."""
        from .ws_auth import database_call  # after django.setup(): it imports the models

        super().load_middleware(is_async=False)
        self._serve_call = database_call(self._serve)
        self._close_call = database_call(lambda response: response.close())

    async def __call__(self, scope, receive, send):
        """The ASGI entry point (HTTP only, as Django's), without a ``ThreadSensitiveContext``."""
        if scope["type"] != "http":
            raise ValueError("Django can only handle ASGI/HTTP connections, not %s." % scope["type"])
        await self.handle(scope, receive, send)

    def _serve(self, request):
        """On a database thread: ``request_started``, the middleware chain and view
        (``get_response``), and ``close()`` of a response that is not streamed. Returns
        ``(response, closed)``."""
        signals.request_started.send(sender=self.__class__, scope=request.scope)
        response = self.get_response(request)
        response._handler_class = self.__class__
        if isinstance(response, FileResponse):
            response.block_size = self.chunk_size
        if response.streaming:
            return response, False
        response.close()
        return response, True

    async def handle(self, scope, receive, send):
        """Django's ``ASGIHandler.handle`` with one thread hop: read the body, build the request,
        serve it on a database thread while listening for a disconnect, send the response, close
        a streamed one on a database thread afterwards."""
        try:
            body_file = await self.read_body(receive)
        except RequestAborted:
            return
        set_script_prefix(get_script_prefix(scope))
        request, error_response = self.create_request(scope, body_file)
        if request is None:
            body_file.close()
            await self.send_response(error_response, send)
            await self._close_call(error_response)
            return

        async def process_request():
            response, closed = await self._serve_call(request)
            try:
                await self.send_response(response, send)
            except asyncio.CancelledError:
                pass  # the client left while its answer was sent
            return response, closed

        tasks = [asyncio.create_task(self.listen_for_disconnect(receive)), asyncio.create_task(process_request())]
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        for task in tasks:
            if task.done():
                try:
                    task.result()
                except RequestAborted:
                    pass
                except AssertionError:
                    body_file.close()
                    raise
            else:
                task.cancel()
                try:
                    await task
                except asyncio.CancelledError:
                    pass
        try:
            response, closed = tasks[1].result()
        except asyncio.CancelledError:
            # The client left before the view answered: the view still runs to its end on its
            # thread (a thread cannot be cancelled) and its response is closed there if not
            # streamed; a streamed one is never sent, so nothing holds it open.
            pass
        else:
            if not closed:
                await self._close_call(response)
        body_file.close()


def asgi_application():
    """The Django ASGI application for ``uns_project.asgi``: ``ThreadedASGIHandler`` when
    ``settings.UNS_HTTP_THREADS``, else Django's own (``get_asgi_application``)."""
    django.setup(set_prefix=False)
    if settings.UNS_HTTP_THREADS:
        return ThreadedASGIHandler()
    return get_asgi_application()
