"""UNS settings, read from the environment with django-environ.

Embedded mode (default): a SQLite file, the in-memory channel layer and the worker loops in the
server process. Scaled mode: ``DATABASE_URL`` names PostgreSQL, ``REDIS_URL`` the channel layer,
and ``manage.py runworker`` processes run the loops (``UNS_EMBEDDED_WORKER=false`` on the web
processes).
"""
from pathlib import Path

import environ

from uns_project.envvars import read

BASE_DIR = Path(__file__).resolve().parent.parent

env = environ.Env()
if (BASE_DIR / ".env").is_file():  # optional; without the check django-environ logs that it is missing
    environ.Env.read_env(BASE_DIR / ".env", overwrite=False)

SECRET_KEY = read(env, "DJANGO_SECRET_KEY")
DEBUG = read(env, "DJANGO_DEBUG")
ALLOWED_HOSTS = read(env, "DJANGO_ALLOWED_HOSTS")

INSTALLED_APPS = [
    "uns_project.apps.DaphneRunserverConfig",  # daphne's runserver without daphne.apps (uns_project/apps.py)
    "uns_project.apps.AdminConfig",  # the admin, its modules discovered with the URLconf
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "knox",
    # Before "channels": both ship a ``runworker`` command and the first app listed wins, so
    # ``manage.py runworker`` must resolve to the UNS worker loops, not Channels' channel worker.
    "notifications",
    "channels",
    "policies",
    "oncall",
    "console",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "uns_project.cookies.SecureCookiesOnHttps",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "notifications.api.middleware.BodySizeLimitMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "uns_project.urls"
ASGI_APPLICATION = "uns_project.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# Adapter threads of a dispatch pass: channel attempts under way at once per worker process
# (notifications/runtime/dispatch, the sliding window). Mostly waiting on receivers, so more
# than the cores: 16 keeps batched lease checks (about 8 rows each) with fast receivers, and
# leaves 8 threads to the other channels while one channel is slow.
UNS_DISPATCH_CONCURRENCY = read(env, "UNS_DISPATCH_CONCURRENCY")

DATABASES = {"default": read(env, "DATABASE_URL", f"sqlite:///{BASE_DIR / 'var' / 'uns.sqlite3'}")}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # Without IMMEDIATE transactions and a busy timeout, concurrent writers in one process
    # (the server and its in-process worker loops) hit "database is locked".
    # Django's backend whose transactions queue on one lock per process before BEGIN IMMEDIATE
    # (uns_project.sqlite: no sleeping in SQLite's busy handler between the process's threads).
    DATABASES["default"]["ENGINE"] = "uns_project.sqlite"
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {
            "transaction_mode": "IMMEDIATE",
            "timeout": 20,
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA busy_timeout=20000;",
        }
    )
    Path(DATABASES["default"]["NAME"]).parent.mkdir(parents=True, exist_ok=True)
    DATABASES["default"].setdefault("TEST", {})["NAME"] = read(env, "UNS_SQLITE_TEST_NAME")
    # Each thread keeps its connection (the HTTP and WebSocket database threads, the worker loops):
    # opening and closing one per request was 16 % of the embedded server's samples. Nothing of a
    # session outlives a transaction on SQLite, and the threads are long-lived.
    DATABASES["default"]["CONN_MAX_AGE"] = None
IS_POSTGRES = DATABASES["default"]["ENGINE"].startswith("django.db.backends.postgresql")
if IS_POSTGRES:
    # Test runs sharing one server keep apart with their own test database (scripts/test.sh
    # sets a unique name per run); pytest-django's default is ``test_<NAME>``.
    DATABASES["default"].setdefault("TEST", {})["NAME"] = read(env, "UNS_TEST_DB_NAME")
    # A connection pool per process (Django's psycopg_pool integration) instead of a new
    # PostgreSQL session per request, per WebSocket database call and per adapter thread.
    # Persistent connections (CONN_MAX_AGE) are not an option: under ASGI every request may run
    # on another thread, and Django's docs say to disable them there and pool instead. With the
    # pool, Django's close() (end of request, close_old_connections in the worker loops and the
    # adapter threads) hands the connection back. Size: a web process uses one or two at a time
    # (sync views and database_sync_to_async share a thread); a runworker process its three loops
    # plus UNS_DISPATCH_CONCURRENCY adapter threads. UNS_DB_POOL_CHECK makes every checkout
    # verify the connection with an empty query (one round trip, ~0.1 ms locally), so a restarted
    # PostgreSQL costs no failed request; idle connections are also dropped after max_idle.
    if read(env, "UNS_DB_POOL"):
        _pool = {
            "min_size": read(env, "UNS_DB_POOL_MIN"),
            # the loops plus an adapter thread each (an adapter may use the database: console)
            "max_size": read(env, "UNS_DB_POOL_MAX", max(16, UNS_DISPATCH_CONCURRENCY + 4)),
            "timeout": read(env, "UNS_DB_POOL_TIMEOUT"),
            "max_idle": 300.0,
        }
        DATABASES["default"].setdefault("OPTIONS", {})["pool"] = _pool
        DATABASES["default"]["CONN_MAX_AGE"] = 0  # required with a pool
        # Django passes ConnectionPool.check_connection to the pool when health checks are on.
        DATABASES["default"]["CONN_HEALTH_CHECKS"] = read(env, "UNS_DB_POOL_CHECK")

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# The console's session (console.auth): HttpOnly, SameSite=Strict, Secure over HTTPS
# (uns_project.cookies); the CSRF token reaches the app in JSON bodies, so its cookie is HttpOnly too.
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Strict"
CSRF_COOKIE_HTTPONLY = True
CSRF_COOKIE_SAMESITE = "Strict"
SESSION_COOKIE_SECURE = read(env, "UNS_SECURE_COOKIES")
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
# HTTPS behind a TLS proxy (docs/how-to/production-settings.md): all off by default, for the embedded
# mode on 127.0.0.1. A request is HTTPS when uvicorn (uns_serve) took X-Forwarded-Proto from a proxy
# in UNS_TRUSTED_PROXIES. Probes and scrapers reach /healthz, /readyz and /metrics over plain HTTP
# on the internal network, so those are never redirected.
SECURE_SSL_REDIRECT = read(env, "UNS_SSL_REDIRECT")
SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$", r"^metrics$"]
SECURE_HSTS_SECONDS = read(env, "UNS_HSTS_SECONDS")
SECURE_HSTS_INCLUDE_SUBDOMAINS = read(env, "UNS_HSTS_INCLUDE_SUBDOMAINS")
SECURE_HSTS_PRELOAD = read(env, "UNS_HSTS_PRELOAD")

# Argon2id with OWASP's parameters first (uns_project.hashers: why, and the measurements); Django's
# defaults after it, so every stored hash verifies and is re-hashed at its next login.
PASSWORD_HASHERS = [
    "uns_project.hashers.OwaspArgon2PasswordHasher",
    "django.contrib.auth.hashers.PBKDF2PasswordHasher",
    "django.contrib.auth.hashers.PBKDF2SHA1PasswordHasher",
    "django.contrib.auth.hashers.Argon2PasswordHasher",
    "django.contrib.auth.hashers.BCryptSHA256PasswordHasher",
    "django.contrib.auth.hashers.ScryptPasswordHasher",
]
UNS_ARGON2_MEMORY_KIB = read(env, "UNS_ARGON2_MEMORY_KIB")
UNS_ARGON2_TIME_COST = read(env, "UNS_ARGON2_TIME_COST")

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
# Static files in every mode (uns_project/static.py): WhiteNoise serves /static/ and the
# console's assets, from STATIC_ROOT when `manage.py collectstatic` filled it (hashed names, gzip
# and Brotli, a year's caching for hashed files), else from the app directories (finders).
STATIC_ROOT = Path(read(env, "UNS_STATIC_ROOT", str(BASE_DIR / "var" / "static")))
UNS_FRONTEND_DIST = BASE_DIR / "frontend" / "dist"
STATICFILES_DIRS = [("console", UNS_FRONTEND_DIST)] if UNS_FRONTEND_DIST.is_dir() else []
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "uns_project.static.StaticFilesStorage"},
}
WHITENOISE_USE_FINDERS = not (STATIC_ROOT / "staticfiles.json").is_file()
MIDDLEWARE.insert(MIDDLEWARE.index("django.middleware.security.SecurityMiddleware") + 1,
                  "uns_project.static.StaticFilesMiddleware")

# Threads that run the WebSocket consumers' database calls side by side (notifications.ws_auth),
# and with UNS_HTTP_THREADS the HTTP requests too.
# Each holds at most one pooled connection during a call: keep it under UNS_DB_POOL_MAX.
UNS_WS_DB_THREADS = read(env, "UNS_WS_DB_THREADS")

# Run each HTTP request's middleware and view on one of those threads (notifications.http_threads)
# instead of a new thread per request (Django's ASGI handler), so requests of one process overlap
# their database waits and keep their connections. On by default; on SQLite the threads' writers
# queue on the process's write lock (uns_project.sqlite) and share the group commit.
UNS_HTTP_THREADS = read(env, "UNS_HTTP_THREADS")

# Request bodies above this many bytes are refused with 413 (problem details).
UNS_MAX_BODY_BYTES = read(env, "UNS_MAX_BODY_BYTES")
DATA_UPLOAD_MAX_MEMORY_SIZE = UNS_MAX_BODY_BYTES

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "notifications.api.auth.BearerTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PARSER_CLASSES": ["notifications.api.parsers.BoundedJSONParser"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "EXCEPTION_HANDLER": "notifications.api.problem_handler.problem_exception_handler",
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
}

REST_KNOX = {
    # Machine producer tokens do not expire unless created with --expires-days.
    "TOKEN_TTL": None,
    "AUTH_HEADER_PREFIX": "Bearer",
    "AUTO_REFRESH": False,
}

REDIS_URL = read(env, "REDIS_URL")
# Messages a WebSocket's queue holds before the layer drops live events for it; a subscriber
# that falls that far behind re-subscribes and catches up from uns_events.
UNS_CHANNEL_CAPACITY = read(env, "UNS_CHANNEL_CAPACITY")
# The Redis client behind the layer. Each consumer waits for its next message with a blocking
# BZPOPMIN of up to 5 s (channels-redis' brpop_timeout); redis-py 8 reads with a 5 s default
# socket_timeout, so with the defaults the client's read timer races the server's reply and an idle
# WebSocket is closed with 1011 ("Timeout reading from ...") every few seconds. So: no read
# timeout (redis-py 7's default, what channels-redis is built for); a short connect timeout
# (seconds), so a Redis that is down is reported at once; TCP keepalive (redis-py's 30 s idle,
# 5 s x 3 probes), so a peer that vanished is noticed too. REDIS_URL query options such as
# ?socket_timeout= override these.
UNS_REDIS_CONNECT_TIMEOUT = read(env, "UNS_REDIS_CONNECT_TIMEOUT")
if REDIS_URL:
    CHANNEL_LAYERS = {
        "default": {"BACKEND": "channels_redis.core.RedisChannelLayer", "CONFIG": {
            "hosts": [{"address": REDIS_URL, "socket_timeout": None, "socket_keepalive": True,
                       "socket_connect_timeout": UNS_REDIS_CONNECT_TIMEOUT}],
            "capacity": UNS_CHANNEL_CAPACITY,
            # Deployments (and test runs) sharing one Redis keep apart with their own prefix.
            "prefix": read(env, "UNS_CHANNEL_PREFIX"),
        }}
    }
else:
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer",
                                  "CONFIG": {"capacity": UNS_CHANNEL_CAPACITY}}}

# --- The console login throttle (console/throttle.py) ------------------------------
# Addresses or CIDRs of the reverse proxies in front (comma-separated): X-Forwarded-For is read
# only from them. None by default: the socket peer is the client. uns_serve hands the same list
# to uvicorn (--forwarded-allow-ips); daphne must run without --proxy-headers (it would take the
# header's leftmost, client-written, address).
UNS_TRUSTED_PROXIES = read(env, "UNS_TRUSTED_PROXIES")
UNS_LOGIN_FAILURES_PER_ADDRESS = read(env, "UNS_LOGIN_FAILURES_PER_ADDRESS")
UNS_LOGIN_FAILURES_PER_USERNAME = read(env, "UNS_LOGIN_FAILURES_PER_USERNAME")
UNS_LOGIN_WINDOW_SECONDS = read(env, "UNS_LOGIN_WINDOW_SECONDS")
# The cache every web process shares (the throttle's counters): Redis when REDIS_URL is set (atomic
# increments), else the database table uns_cache, created by migrate (console/migrations).
if REDIS_URL:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": REDIS_URL,
                          "KEY_PREFIX": read(env, "UNS_CHANNEL_PREFIX") + ":cache",
                          "OPTIONS": {"socket_connect_timeout": UNS_REDIS_CONNECT_TIMEOUT, "socket_timeout": 5}}}
else:
    # Past MAX_ENTRIES rows a set first deletes the expired ones (the throttle's live 3 minutes at most),
    # then a third of the rest, live counters included: Django's 300 would let a flood of usernames
    # wipe the counters; 100k keeps the row count each set does cheap.
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.db.DatabaseCache", "LOCATION": "uns_cache",
                          "OPTIONS": {"MAX_ENTRIES": 100_000}}}

# --- UNS runtime ---------------------------------------------------------------------------
# Dispatch lease length in seconds (the reference's 60 s lease_token).
UNS_LEASE_SECONDS = read(env, "UNS_LEASE_SECONDS")
# Rows claimed per dispatch pass.
UNS_DISPATCH_BATCH = read(env, "UNS_DISPATCH_BATCH")
# Seconds each worker loop sleeps when it found no work.
UNS_POLL_INTERVAL = read(env, "UNS_POLL_INTERVAL")
# Prometheus metrics: a bearer token /metrics (web and runworker's metrics port)
# asks for when set; unset, they are open for an internal network (notifications.metrics_http).
UNS_METRICS_TOKEN = read(env, "UNS_METRICS_TOKEN")
# Seconds a stopping worker (SIGTERM/SIGINT, or the embedded server's shutdown) lets channel
# attempts already under way finish before it exits; below Kubernetes' 30 s default grace.
UNS_STOP_GRACE_SECONDS = read(env, "UNS_STOP_GRACE_SECONDS")
# Run the dispatch, timeout and callback loops inside the ASGI server process (embedded mode).
UNS_EMBEDDED_WORKER = read(env, "UNS_EMBEDDED_WORKER", not IS_POSTGRES)
# Optional JSON file with the bootstrap default policy (see policies/bootstrap.py).
UNS_BOOTSTRAP_POLICY_FILE = read(env, "UNS_BOOTSTRAP_POLICY_FILE")
# Factory of the live-push publisher every Runtime hands its committed events to (empty: none).
UNS_EVENT_PUBLISHER = read(env, "UNS_EVENT_PUBLISHER")
# Optional URL that receives ACKED / DISMISSED / TIMED_OUT events (the callback outbox).
UNS_CALLBACK_URL = read(env, "UNS_CALLBACK_URL")
# Standard Webhooks signing key of those callbacks (``whsec_<base64>`` or any string); unset:
# unsigned. Read by the process that sends them (the worker), like UNS_CALLBACK_URL.
UNS_CALLBACK_SECRET = read(env, "UNS_CALLBACK_SECRET")
# Webhook adapter timeout in seconds (also the default of the email and apprise channels).
UNS_WEBHOOK_TIMEOUT = read(env, "UNS_WEBHOOK_TIMEOUT")
# The longest wait a webhook's ``Retry-After`` (429/503, RFC 9110 section 10.2.3) can impose
# on the next attempt, seconds; the next attempt is max(backoff, min(Retry-After, this)).
UNS_RETRY_AFTER_MAX_SECONDS = read(env, "UNS_RETRY_AFTER_MAX_SECONDS")
UNS_SILENCE_FRESHNESS_SECONDS = read(env, "UNS_SILENCE_FRESHNESS_SECONDS")
# The SMTP server of email channels that do not name their own (notifications/adapters/email.py):
# Django's EMAIL_* settings, read from the environment. A channel's config and secret win.
EMAIL_HOST = read(env, "EMAIL_HOST")
EMAIL_PORT = read(env, "EMAIL_PORT")
EMAIL_HOST_USER = read(env, "EMAIL_HOST_USER")
EMAIL_HOST_PASSWORD = read(env, "EMAIL_HOST_PASSWORD")
EMAIL_USE_TLS = read(env, "EMAIL_USE_TLS")  # STARTTLS
EMAIL_USE_SSL = read(env, "EMAIL_USE_SSL")  # implicit TLS (port 465)
EMAIL_TIMEOUT = read(env, "EMAIL_TIMEOUT")
DEFAULT_FROM_EMAIL = read(env, "DEFAULT_FROM_EMAIL")
# Lifetime of a console login token (knox, held in the browser's memory only), seconds.
UNS_CONSOLE_TOKEN_TTL_SECONDS = read(env, "UNS_CONSOLE_TOKEN_TTL_SECONDS")

# UNS_LOG_FORMAT: "plain" (default) or "json", one object per line (notifications.logformat).
UNS_LOG_FORMAT = read(env, "UNS_LOG_FORMAT").strip().lower()
if UNS_LOG_FORMAT not in ("plain", "json"):
    from django.core.exceptions import ImproperlyConfigured

    raise ImproperlyConfigured(f"UNS_LOG_FORMAT must be plain or json, not {UNS_LOG_FORMAT!r}")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"},
                   "json": {"()": "notifications.logformat.JSONFormatter"}},
    # No log line carries a secret: channel URLs with ``user:password@`` or
    # ``?token=`` (httpx and the webhook sender, ``uns.webhook``, log every request URL at INFO), browsers' WebSocket ``?token=``. The
    # root handler masks every record that reaches it; loggers with handlers of their own
    # (uvicorn's, once uns_serve starts it) and those that log URLs mask at the source too.
    "filters": {"redact_secrets": {"()": "notifications.redaction.RedactSecrets"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": UNS_LOG_FORMAT,
                            "filters": ["redact_secrets"]}},
    "root": {"handlers": ["console"], "level": read(env, "UNS_LOG_LEVEL")},
    "loggers": {
        "django.db.backends": {"level": "WARNING"},
        **{name: {"filters": ["redact_secrets"]}
           for name in ("uvicorn.error", "uvicorn.access", "daphne", "django.request", "django.server", "httpx",
                        "uns.webhook")},
    },
}

# --- OpenAPI (drf-spectacular): /api/schema/ and Swagger UI at /api/docs/ --------------------
# Swagger UI's assets come from the drf-spectacular-sidecar package (no CDN), served under
# STATIC_URL by uns_project/urls.py even without a static file server.
INSTALLED_APPS += ["drf_spectacular", "drf_spectacular_sidecar"]
REST_FRAMEWORK["DEFAULT_SCHEMA_CLASS"] = "notifications.api.openapi.UNSAutoSchema"
SPECTACULAR_SETTINGS = {
    "TITLE": "UNS API",
    "DESCRIPTION": "UNS, a durable notification service: send, follow, acknowledge, and operate the DLQ. "
                   "Errors are RFC 9457 problem details (`application/problem+json`) with a stable `code`.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "SCHEMA_PATH_PREFIX": r"/api/v1",
    "COMPONENT_SPLIT_REQUEST": True,
    "PREPROCESSING_HOOKS": ["notifications.api.openapi.only_public_api"],
    "ENUM_NAME_OVERRIDES": {
        "AlertStatusEnum": ["firing", "resolved"],
        "DedupRoleEnum": ["leader", "follower", "deduplicated"],
        "GovernanceOutcomeEnum": ["ALLOW", "DENY", "REQUIRE_APPROVAL"],
        "IdempotencyOutcomeEnum": ["new", "repeat", "conflict"],
        "BulkActionStateEnum": ["RUNNING", "DONE"],
        "ActionEnum": ["replay", "resolve", "ack", "snooze"],  # a bulk action's verb (runtime.bulk.ACTIONS)
        "AuditActionEnum": "notifications.people_audit.ACTION_NAMES",
        "AuditObjectTypeEnum": "notifications.people_audit.OBJECT_TYPES",
        "SilenceStateEnum": ["active", "pending", "expired"],
        "ShiftSourceEnum": ["override", "layer"],
        "OverrideSourceEnum": ["manual", "ical"],
        "PagedPersonSourceEnum": ["override", "layer", "team", "user"],
    },
}
