"""``manage.py uns_serve [--workers N]``: the embedded mode.

Serves HTTP and WebSocket with uvicorn and, through the ASGI lifespan, runs the dispatch,
timeout and callback loops in the same process (``UNS_EMBEDDED_WORKER``, true on SQLite).

``--workers N`` (or ``UNS_SERVE_WORKERS``; default 1) starts N uvicorn processes on the one port.
Each runs its own worker loops (the lifespan runs per process). That is safe: rows are claimed by
conditional UPDATEs fenced by ``lease_token`` and every SQLite write transaction is ``BEGIN
IMMEDIATE`` (one writer at a time across processes, WAL readers alongside, ``busy_timeout`` for
the wait), so two processes never deliver the same claim. What several processes need is a
channel layer they share: the in-memory layer is per process, so a WebSocket on one process would
never see the live events of work accepted or delivered by another. N > 1 therefore requires
``REDIS_URL``; without it the command refuses rather than serve a silently partial live stream.

Measured on the shared 2-core machine (the SQLite bench phase's shape: 4 producers posting to
the console channel for 8 s, the loops delivering meanwhile), two rounds, in opposite orders:
1 process 56/s (p99 283 ms, load 7.8) vs 2 processes 50/s (p99 243 ms, load 7.4); then 2
processes 77/s (p99 212 ms, load 5.8) vs 1 process 57/s (p99 190 ms, load 5.2). A process is
CPU-bound in Python (about 9 ms of server CPU per accept with the worker delivering, on the
quiet full run of 2026-12-03, after its requests moved to long-lived threads that keep their
SQLite connection and queue on the process's write lock: ``bench/README.md``), so a second one
helps only while a core is otherwise idle; the SQLite write lock is not the limit. The default stays
1: it needs no Redis and wins nothing on a busy 2-core machine; use ``--workers 2`` (with
``REDIS_URL``) where the cores are free.
"""
import os
import signal
import sys

import uvicorn
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError


class Command(BaseCommand):
    help = "Serve UNS (HTTP + WebSocket) and run its worker loops in-process."

    def add_arguments(self, parser):
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=8000)
        parser.add_argument("--workers", type=int, default=None,
                            help="uvicorn processes, each with its own worker loops (default UNS_SERVE_WORKERS "
                                 "or 1; more than 1 requires REDIS_URL for the shared live channel layer)")

    def handle(self, *args, host, port, workers, **opts):
        workers = workers if workers is not None else int(os.environ.get("UNS_SERVE_WORKERS", "1") or 1)
        if workers < 1:
            raise CommandError("--workers must be at least 1")
        layer = settings.CHANNEL_LAYERS["default"]["BACKEND"]
        if workers > 1 and layer.endswith("InMemoryChannelLayer"):
            raise CommandError("--workers > 1 needs a channel layer the processes share (set REDIS_URL): "
                               "with the in-memory layer each process would see only its own live events")
        # uvicorn restores these handlers and re-raises the signal that stopped it once its graceful
        # shutdown (worker loops included) is complete; a SIGTERM/SIGINT stop then exits 0, as runworker.
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: sys.exit(0))
        # UNS_LOG_FORMAT=json: uvicorn's loggers keep no handlers of their own and propagate to the
        # root handler (JSON, secrets masked); plain keeps uvicorn's usual lines.
        log_config = None if settings.UNS_LOG_FORMAT == "json" else uvicorn.config.LOGGING_CONFIG
        # X-Forwarded-* only from UNS_TRUSTED_PROXIES: uvicorn's default trusts
        # 127.0.0.1, so any local client could otherwise choose its address.
        proxies = list(settings.UNS_TRUSTED_PROXIES)
        # No per-message deflate (daphne offers none either): compressing every small JSON frame
        # was ~4 % of the server's CPU per ACK over /ws/respond/ (py-spy).
        uvicorn.run("uns_project.asgi:application", host=host, port=port, lifespan="on", log_level="info",
                    ws="websockets-sansio", ws_per_message_deflate=False, workers=workers, log_config=log_config,
                    proxy_headers=bool(proxies),
                    forwarded_allow_ips=proxies or None)
