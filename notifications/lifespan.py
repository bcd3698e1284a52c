"""ASGI lifespan: in embedded mode the server process owns the worker loops.

uvicorn speaks the lifespan protocol (daphne does not, so scaled daphne processes never run the
loops; ``manage.py runworker`` does). ``startup`` starts a ``Worker`` when
``UNS_EMBEDDED_WORKER`` is true; ``shutdown`` stops it gracefully, with the same stop as
``runworker`` (``Worker.stop``).
"""
import asyncio
import logging

from django.apps import apps
from django.conf import settings

from notifications.apps import runtime
from notifications.runtime.metrics import track_worker
from notifications.runtime.worker import Worker

log = logging.getLogger("uns.lifespan")


class LifespanApp:
    def __init__(self):
        self.worker = None

    def start(self):
        if not settings.UNS_EMBEDDED_WORKER:
            log.info("embedded worker disabled (UNS_EMBEDDED_WORKER=false)")
            return

        self.worker = Worker(runtime())  # the process's runtime, the one the transports use
        _report_loops(self.worker)
        self.worker.start()
        apps.get_app_config("notifications").embedded_worker = self.worker  # /readyz checks its loops
        log.info("embedded worker loops started")

    def stop(self):
        """Stop the embedded loops as ``runworker`` does on SIGTERM (``Worker.stop``: in-flight
        attempts get ``UNS_STOP_GRACE_SECONDS``, finished ones are settled, unattempted claims
        released). Attempts still running at the end are logged by the worker and left to
        lease recovery; the server's shutdown goes on either way."""
        if self.worker is not None:
            # /readyz says "stopping" from here on (Worker.stopping); the registration stays
            # until the loops are done, so a probe during the grace is answered 503.
            clean = self.worker.stop()
            self.worker = None
            log.info("embedded worker loops stopped%s", "" if clean else " (attempts left in flight, see above)")

    async def __call__(self, scope, receive, send):
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                try:
                    await asyncio.to_thread(self.start)
                except Exception as exc:
                    await send({"type": "lifespan.startup.failed", "message": str(exc)})
                    return
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await asyncio.to_thread(self.stop)
                await send({"type": "lifespan.shutdown.complete"})
                return


def _report_loops(worker) -> None:
    """Report the embedded loops' ages in this process's ``/metrics``."""
    track_worker(worker)
