"""Serving the Prometheus metrics: ``GET /metrics`` of a web process (``metrics_view``)
and the metrics port of ``runworker --metrics-port`` (``serve_worker``: ``/metrics``, ``/healthz``,
``/readyz``). The metrics themselves are defined in ``notifications.runtime.metrics``.

Access: when ``UNS_METRICS_TOKEN`` is set, both endpoints want ``Authorization: Bearer <token>``
(401 otherwise); unset, they are open, meant for an internal network (runworker's port binds
127.0.0.1 by default). Labels carry group, channel, loop and state names, never a principal's
name or a secret.

Multi-process web servers (``uns_serve --workers N``, gunicorn/uvicorn with several processes):
with ``PROMETHEUS_MULTIPROC_DIR`` set (an empty directory, wiped before the server starts, the
client library's multiprocess mode) every process writes its counters there and ``/metrics``
sums them across processes (``MultiProcessCollector``); the database gauges are read at the
scrape whichever process answers it. Without it, a single-process server (daphne, ``uns_serve``)
reports its own counters.
"""
import hmac
import json
import logging
import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from django.conf import settings
from django.db import connections
from django.http import HttpResponse, JsonResponse
from django.views.decorators.http import require_GET
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, CollectorRegistry, generate_latest, multiprocess

from notifications import health
from notifications.runtime.metrics import StateCollector, WorkerCollector

log = logging.getLogger("uns.metrics")


class _Registries:
    """What ``generate_latest`` needs (``collect()``) over several collectors."""

    def __init__(self, *collectors):
        self.collectors = collectors

    def collect(self):
        for c in self.collectors:
            yield from c.collect()


def exposition(*, multiprocess_dir: bool = True) -> bytes:
    """The text exposition (``CONTENT_TYPE_LATEST``) of this process's metrics: its counters and
    histograms (summed over the processes of ``PROMETHEUS_MULTIPROC_DIR`` when that is set and
    ``multiprocess_dir``; runworker passes False and reports its own process only), the worker
    loops it runs, and the database gauges (read now)."""
    if multiprocess_dir and os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        counters = CollectorRegistry()
        multiprocess.MultiProcessCollector(counters)
    else:
        counters = REGISTRY
    return generate_latest(_Registries(counters, WorkerCollector(), StateCollector()))


def authorized(header: str | None) -> bool:
    """True when no ``UNS_METRICS_TOKEN`` is set or ``header`` is ``Bearer <that token>``
    (compared in constant time)."""
    token = getattr(settings, "UNS_METRICS_TOKEN", None)
    if not token:
        return True
    scheme, _, given = (header or "").partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), token.encode())


@require_GET
def metrics_view(request):
    """``GET /metrics``: the Prometheus text exposition (``exposition``), 200. 401 with
    ``UNS_METRICS_TOKEN`` set and no matching bearer token; 405 for other methods."""
    if not authorized(request.headers.get("Authorization")):
        response = JsonResponse({"status": "unauthorized", "detail": "a metrics bearer token is required"},
                                status=401)
        response["WWW-Authenticate"] = "Bearer"
        return response
    return HttpResponse(exposition(), content_type=CONTENT_TYPE_LATEST)


# --- runworker's metrics port --------------------------------------------------------------

def readiness(worker, max_age: float) -> tuple[int, dict]:
    """``(status, body)`` of runworker's ``/readyz``: ``health.readiness_answer`` (the web
    ``/readyz``'s checks: ``database``, ``migrations``, ``channel_layer``) with ``worker`` being
    ``health.worker_status(worker, max_age)``: every loop alive, each passed within ``max_age``
    seconds, no stop requested."""
    return health.readiness_answer(worker_check=lambda: health.worker_status(worker, max_age))


def _close_connections() -> None:
    """Close this request thread's database connections (back to the pool); a connection to a
    database that went away may raise on close, which must not fail the answer."""
    try:
        connections.close_all()
    except Exception:
        log.debug("closing the metrics thread's connections failed", exc_info=True)


class WorkerServer:
    """runworker's metrics port: a ``ThreadingHTTPServer`` in a daemon thread serving
    ``GET /metrics`` (``exposition``; 401 without the ``UNS_METRICS_TOKEN`` bearer token when that
    is set), ``/healthz`` (200 ``{"status": "ok"}`` while the process answers) and ``/readyz``
    (``readiness``), both unauthenticated probes; anything else 404. ``port`` 0 picks a free port
    (``self.port`` tells which). ``close()`` stops it."""

    def __init__(self, worker, host: str = "127.0.0.1", port: int = 0, *, max_age: float = 60.0):
        self.worker, self.max_age = worker, max_age
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                try:
                    path = self.path.split("?", 1)[0]
                    if path == "/healthz":
                        return self._json(200, {"status": "ok"})
                    if path not in ("/metrics", "/readyz"):
                        return self._json(404, {"status": "not_found"})
                    if path == "/readyz":  # a probe, unauthenticated like the web /readyz
                        return self._json(*readiness(server.worker, server.max_age))
                    if not authorized(self.headers.get("Authorization")):
                        return self._json(401, {"status": "unauthorized"})
                    body = exposition(multiprocess_dir=False)  # one runworker is one process
                    self.send_response(200)
                    self.send_header("Content-Type", CONTENT_TYPE_LATEST)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                finally:
                    _close_connections()

            def _json(self, status: int, body: dict):
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass  # scrapes every few seconds are not worth a log line each

        self.httpd = ThreadingHTTPServer((host, port), Handler)
        self.httpd.daemon_threads = True
        self.host, self.port = host, self.httpd.server_address[1]
        self._thread = threading.Thread(target=self.httpd.serve_forever, name="uns-metrics", daemon=True)
        self._thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
