"""Readiness of a web process (issue 12): ``GET /readyz``.

Liveness is ``GET /healthz`` (``uns_project.urls.healthz``): 200 ``{"status": "ok"}`` whenever the
process serves requests, checking nothing else, so an orchestrator restarts a process only when
it is wedged, never because PostgreSQL is down.

``/readyz`` says whether the process can do its work now. Checks, in order:

- ``database``: a connection is checked out and ``SELECT 1`` answers (with the PostgreSQL pool
  this waits at most ``UNS_DB_POOL_TIMEOUT`` seconds for a connection);
- ``migrations``: every migration on disk is recorded as applied (one query of
  ``django_migrations``; not checked when the database is unreachable);
- ``channel_layer``: with a Redis layer (``REDIS_URL``), each layer host answers ``PING`` within
  ``CHECK_TIMEOUT`` seconds; the in-memory layer is part of the process and always passes;
- ``worker``: when this process runs the embedded worker loops (uvicorn's lifespan started them,
  ``UNS_EMBEDDED_WORKER``), each of the dispatch, timeout and callback loop threads is alive and
  no stop was requested. A process that runs no loops (daphne, ``runworker`` elsewhere) passes.

Error text in a body is one line, secrets masked (``redaction.mask_string``), at most 200
characters: ``/readyz`` needs no authentication, like every probe endpoint.
"""
from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connections
from django.http import JsonResponse

from .redaction import mask_string

#: Seconds a Redis host gets to accept the connection and answer ``PING``.
CHECK_TIMEOUT = 2.0

_expected_migrations: set[tuple[str, str]] | None = None


def _error(exc: BaseException) -> str:
    text = " ".join(f"{type(exc).__name__}: {exc}".split())
    return mask_string(text)[:200]


def check_database() -> dict:
    """``{"ok": True}`` when the default database answers ``SELECT 1``, else ``{"ok": False,
    "error": "<type>: <message>"}``."""
    try:
        with connections[DEFAULT_DB_ALIAS].cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except Exception as exc:
        return {"ok": False, "error": _error(exc)}
    return {"ok": True}


def _expected() -> set[tuple[str, str]]:
    """Every ``(app_label, name)`` of the migration graph on disk (squashed migrations as the
    loader resolves them), computed once per process: the files do not change under it."""
    global _expected_migrations
    if _expected_migrations is None:
        from django.db.migrations.loader import MigrationLoader

        _expected_migrations = set(MigrationLoader(None, ignore_no_migrations=True).graph.nodes)
    return _expected_migrations


def check_migrations() -> dict:
    """``{"ok": True}`` when every migration on disk is applied, else ``{"ok": False,
    "unapplied": ["app.0007_name", ...]}`` (sorted, at most 10) or ``{"ok": False, "error": ...}``
    when ``django_migrations`` cannot be read."""
    from django.db.migrations.recorder import MigrationRecorder

    try:
        applied = set(MigrationRecorder(connections[DEFAULT_DB_ALIAS]).applied_migrations())
    except Exception as exc:
        return {"ok": False, "error": _error(exc)}
    missing = sorted(f"{app}.{name}" for app, name in _expected() - applied)
    if missing:
        return {"ok": False, "unapplied": missing[:10]}
    return {"ok": True}


def _redis_addresses(layer: dict) -> list[str]:
    addresses = []
    for host in layer.get("CONFIG", {}).get("hosts", []):
        address = host.get("address") if isinstance(host, dict) else host
        if isinstance(address, str):
            addresses.append(address)
        elif isinstance(address, (tuple, list)) and len(address) == 2:
            addresses.append(f"redis://{address[0]}:{address[1]}")
    return addresses


def check_channel_layer() -> dict:
    """``{"ok": True, "backend": "in-memory"}`` for the in-memory layer; for a Redis layer
    ``{"ok": True, "backend": "redis"}`` when every host answers ``PING`` within
    ``CHECK_TIMEOUT`` seconds, else ``{"ok": False, "backend": "redis", "error": ...}``.
    Host URLs are never in the body (they may hold a password)."""
    layer = settings.CHANNEL_LAYERS.get("default", {})
    backend = layer.get("BACKEND", "")
    if backend.endswith("InMemoryChannelLayer"):
        return {"ok": True, "backend": "in-memory"}
    if "redis" not in backend.lower():
        return {"ok": True, "backend": backend, "skipped": "not a Redis layer; not checked"}
    import redis

    for address in _redis_addresses(layer):
        client = redis.Redis.from_url(address, socket_connect_timeout=CHECK_TIMEOUT, socket_timeout=CHECK_TIMEOUT)
        try:
            client.ping()
        except Exception as exc:
            return {"ok": False, "backend": "redis", "error": _error(exc)}
        finally:
            client.close()
    return {"ok": True, "backend": "redis"}


def check_worker() -> dict:
    """``{"ok": True, "embedded": False}`` when this process runs no worker loops; else
    ``{"ok": <all alive>, "embedded": True, "loops": {"dispatch": bool, "timeout": bool,
    "callback": bool}}`` (``"stopping": True`` once a stop was requested: not ready)."""
    from django.apps import apps

    worker = apps.get_app_config("notifications").embedded_worker
    if worker is None:
        return {"ok": True, "embedded": False}
    loops = worker.loop_states()
    result = {"ok": all(loops.values()) and not worker.stopping, "embedded": True, "loops": loops}
    if worker.stopping:
        result["stopping"] = True
    return result


def readiness(worker_check=check_worker) -> tuple[bool, dict]:
    """Run the checks; returns ``(ready, checks)`` with ``checks`` keyed ``database``,
    ``migrations``, ``channel_layer``, ``worker`` (each a dict with ``ok``; the migrations check
    is ``{"ok": None, "skipped": ...}`` when the database is unreachable). ``worker_check``:
    runworker's metrics port passes its own (``metrics_http.worker_check``)."""
    checks = {"database": check_database()}
    if checks["database"]["ok"]:
        checks["migrations"] = check_migrations()
    else:
        checks["migrations"] = {"ok": None, "skipped": "database unreachable"}
    checks["channel_layer"] = check_channel_layer()
    checks["worker"] = worker_check()
    ready = all(check["ok"] is not False for check in checks.values()) and checks["database"]["ok"]
    return ready, checks


def readyz(request):
    """``GET /readyz``: readiness. 200 ``{"status": "ok", "checks": {...}}`` when every check
    passes; 503 ``{"status": "unavailable", "failed": ["database", ...], "checks": {...}}``
    naming what failed (see the module doc for each check's shape). No authentication; the
    answer is never cached."""
    ready, checks = readiness()
    if ready:
        response = JsonResponse({"status": "ok", "checks": checks})
    else:
        failed = [name for name, check in checks.items() if check["ok"] is False]
        response = JsonResponse({"status": "unavailable", "failed": failed, "checks": checks}, status=503)
    response["Cache-Control"] = "no-store"
    return response
