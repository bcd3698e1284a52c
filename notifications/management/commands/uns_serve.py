"""``manage.py uns_serve``: the embedded mode in one process.

Serves HTTP and WebSocket with uvicorn and, through the ASGI lifespan, runs the dispatch,
timeout and callback loops in the same process (``UNS_EMBEDDED_WORKER``, true on SQLite).
"""
import signal
import sys

import uvicorn
from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = "Serve UNS (HTTP + WebSocket) and run its worker loops in-process."

    def add_arguments(self, parser):
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=8000)

    def handle(self, *args, host, port, **opts):
        # uvicorn restores these handlers and re-raises the signal that stopped it once its graceful
        # shutdown (worker loops included) is complete; a SIGTERM/SIGINT stop then exits 0, as runworker.
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: sys.exit(0))
        uvicorn.run("uns_project.asgi:application", host=host, port=port, lifespan="on", log_level="info",
                    ws="websockets")
