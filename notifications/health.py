"""Readiness of a web process: ``GET /readyz``.

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
from django.apps import apps
from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connections
from django.db.migrations.loader import MigrationLoader
from django.db.migrations.recorder import MigrationRecorder
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
        _expected_migrations = set(MigrationLoader(None, ignore_no_migrations=True).graph.nodes)
    return _expected_migrations


def check_migrations() -> dict:
    """``{"ok": True}`` when every migration on disk is applied, else ``{"ok": False,
    "unapplied": ["app.0007_name", ...]}`` (sorted, at most 10) or ``{"ok": False, "error": ...}``
    when ``django_migrations`` cannot be read."""
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
    import redis  # here, not at the top: only a Redis channel layer is checked

    for address in _redis_addresses(layer):
        client = redis.Redis.from_url(address, socket_connect_timeout=CHECK_TIMEOUT, socket_timeout=CHECK_TIMEOUT)
        try:
            client.ping()
        except Exception as exc:
            return {"ok": False, "backend": "redis", "error": _error(exc)}
        finally:
            client.close()
    return {"ok": True, "backend": "redis"}


def worker_status(worker, max_age: float | None = None) -> dict:
    """The readiness of ``worker``'s loops: ``{"ok", "loops": {"dispatch": bool, "timeout":
    bool, "callback": bool}}`` (thread alive), ``"stopping": True`` once a stop was requested
    (not ready). With ``max_age`` (seconds; runworker's ``--ready-max-age``) also
    ``"max_age_seconds"`` and, for loops that have not finished a pass within it, ``"stale":
    {loop: seconds since its last pass, or null when it never passed}``. ``ok``: every loop
    alive (and recent), no stop requested."""
    loops = worker.loop_states()
    stale = worker.stale_loops(max_age) if max_age is not None else {}
    result = {"ok": all(loops.values()) and not stale and not worker.stopping, "loops": loops}
    if max_age is not None:
        result["max_age_seconds"] = max_age
    if stale:
        result["stale"] = {name: (None if age is None else round(age, 3)) for name, age in stale.items()}
    if worker.stopping:
        result["stopping"] = True
    return result


def check_worker() -> dict:
    """``{"ok": True, "embedded": False}`` when this process runs no worker loops; else
    ``{"embedded": True, **worker_status(worker)}``."""
    worker = apps.get_app_config("notifications").embedded_worker
    if worker is None:
        return {"ok": True, "embedded": False}
    return {"embedded": True, **worker_status(worker)}


def readiness(worker_check=check_worker) -> tuple[bool, dict]:
    """Run the checks; returns ``(ready, checks)`` with ``checks`` keyed ``database``,
    ``migrations``, ``channel_layer``, ``worker`` (each a dict with ``ok``; the migrations check
    is ``{"ok": None, "skipped": ...}`` when the database is unreachable). ``worker_check``:
    runworker's metrics port passes ``worker_status`` of its worker with its max age."""
    checks = {"database": check_database()}
    if checks["database"]["ok"]:
        checks["migrations"] = check_migrations()
    else:
        checks["migrations"] = {"ok": None, "skipped": "database unreachable"}
    checks["channel_layer"] = check_channel_layer()
    checks["worker"] = worker_check()
    ready = all(check["ok"] is not False for check in checks.values()) and checks["database"]["ok"]
    return ready, checks


def readiness_answer(worker_check=check_worker) -> tuple[int, dict]:
    """``(status, body)`` of a ``/readyz``: 200 ``{"status": "ok", "checks": {...}}`` when every
    check of ``readiness(worker_check)`` passes, else 503 ``{"status": "unavailable", "failed":
    ["database", ...], "checks": {...}}`` naming what failed. The web ``readyz`` and runworker's
    metrics port (``metrics_http``) both answer with it."""
    ready, checks = readiness(worker_check)
    if ready:
        return 200, {"status": "ok", "checks": checks}
    failed = [name for name, check in checks.items() if check["ok"] is False]
    return 503, {"status": "unavailable", "failed": failed, "checks": checks}


def readyz(request):
    """``GET /readyz``: readiness, ``readiness_answer`` as JSON (see the module doc for each
    check's shape). No authentication; the answer is never cached."""
    status, body = readiness_answer()
    response = JsonResponse(body, status=status)
    response["Cache-Control"] = "no-store"
    return response
