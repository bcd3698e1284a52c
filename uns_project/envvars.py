"""Every environment variable the settings read, declared once: name, type, default, meaning.

``uns_project.settings`` reads each one through ``read`` (never ``env(...)`` with a name of its
own), and the settings reference page (docs/reference/settings.md) is generated from ``VARIABLES``
by scripts/gen_reference.py, so a variable, type or default changed here changes the page, and
``--check`` fails until it is regenerated. No Django import: the generator reads this without
setting Django up.

``kind`` is the django-environ reader: ``str``, ``bool``, ``int``, ``float``, ``list``
(comma-separated) or ``db`` (a database URL). A default that depends on other settings is
``DERIVED``: the settings module passes it to ``read`` and ``default_doc`` says what it is. A
variable one command or module reads itself (``read_by``) is declared here too, so the page lists
every variable.
"""
from dataclasses import dataclass

DERIVED = object()
"""The default is computed by the settings module from other settings (see ``default_doc``)."""


@dataclass(frozen=True)
class Var:
    name: str
    kind: str
    default: object
    meaning: str
    group: str
    default_doc: str = ""
    read_by: str = ""  # empty: the settings module; else the file that reads it from os.environ itself


_DJANGO = "Django and HTTP"
_DB = "Database"
_REDIS = "Channel layer and Redis"
_LOGIN = "Console login"
_RUNTIME = "Runtime"
_EMAIL = "Email (SMTP)"
_LOG = "Logging"
_PROCESS = "Processes and commands"

VARIABLES: tuple[Var, ...] = (
    # --- Django and HTTP
    Var("DJANGO_SECRET_KEY", "str", "uns-dev-insecure-change-me", "Django's SECRET_KEY (signs sessions and "
        "CSRF tokens). Set a long random value in production.", _DJANGO),
    Var("DJANGO_DEBUG", "bool", False, "Django's DEBUG. Never true in production.", _DJANGO),
    Var("DJANGO_ALLOWED_HOSTS", "list", ["127.0.0.1", "localhost", "[::1]", "testserver"],
        "Host names this server answers for (Django's ALLOWED_HOSTS).", _DJANGO),
    Var("UNS_SECURE_COOKIES", "bool", False, "Mark the session and CSRF cookies Secure always "
        "(SESSION_COOKIE_SECURE, CSRF_COOKIE_SECURE). Without it they are Secure only on requests that "
        "came over HTTPS.", _DJANGO),
    Var("UNS_SSL_REDIRECT", "bool", False, "Redirect every plain-HTTP request to HTTPS "
        "(SECURE_SSL_REDIRECT), except /healthz, /readyz and /metrics, which probes and scrapers reach "
        "over the internal network. Off for the embedded mode on 127.0.0.1; behind a TLS proxy the "
        "request counts as HTTPS when the proxy is in UNS_TRUSTED_PROXIES and sends "
        "X-Forwarded-Proto.", _DJANGO),
    Var("UNS_HSTS_SECONDS", "int", 0, "Strict-Transport-Security max-age sent on HTTPS responses, "
        "seconds (SECURE_HSTS_SECONDS); 0 sends none. Browsers then refuse plain HTTP to this host for "
        "that long: start small.", _DJANGO),
    Var("UNS_HSTS_INCLUDE_SUBDOMAINS", "bool", False, "Add includeSubDomains to the HSTS header "
        "(SECURE_HSTS_INCLUDE_SUBDOMAINS).", _DJANGO),
    Var("UNS_HSTS_PRELOAD", "bool", False, "Add preload to the HSTS header (SECURE_HSTS_PRELOAD).", _DJANGO),
    Var("UNS_MAX_BODY_BYTES", "int", 64 * 1024, "Request bodies above this many bytes are refused with 413 "
        "(problem details).", _DJANGO),
    Var("UNS_STATIC_ROOT", "str", DERIVED, "Where `manage.py collectstatic` puts static files "
        "(STATIC_ROOT).", _DJANGO, default_doc="`var/static` in the checkout"),
    Var("UNS_HTTP_THREADS", "bool", True, "Run each HTTP request's middleware and view on one of "
        "UNS_WS_DB_THREADS threads, so requests of one process overlap their database waits.", _DJANGO),
    Var("UNS_WS_DB_THREADS", "int", 8, "Threads that run the WebSocket consumers' database calls (and, "
        "with UNS_HTTP_THREADS, the HTTP requests). Keep it under UNS_DB_POOL_MAX.", _DJANGO),
    Var("UNS_TRUSTED_PROXIES", "list", [], "Addresses or CIDRs of the reverse proxies in front: "
        "X-Forwarded-For and X-Forwarded-Proto are read only from them (the login throttle, and "
        "uns_serve's --forwarded-allow-ips). Empty: the socket peer is the client.", _DJANGO),
    Var("UNS_CONSOLE_TOKEN_TTL_SECONDS", "int", 8 * 3600, "Lifetime of a console login token, "
        "seconds.", _LOGIN),
    Var("UNS_LOGIN_FAILURES_PER_ADDRESS", "int", 20, "Failed console logins allowed per client address "
        "in a window.", _LOGIN),
    Var("UNS_LOGIN_FAILURES_PER_USERNAME", "int", 20, "Failed console logins allowed per username in a "
        "window.", _LOGIN),
    Var("UNS_LOGIN_WINDOW_SECONDS", "int", 60, "The login throttle's window, seconds.", _LOGIN),
    Var("UNS_ARGON2_MEMORY_KIB", "int", 19 * 1024, "Argon2id memory cost of password hashes, KiB.", _LOGIN),
    Var("UNS_ARGON2_TIME_COST", "int", 2, "Argon2id time cost (iterations) of password hashes.", _LOGIN),
    # --- Database
    Var("DATABASE_URL", "db", DERIVED, "The database: `postgres://...` for the scaled mode, "
        "`sqlite:///...` for the embedded mode.", _DB, default_doc="`sqlite:///` `var/uns.sqlite3` in the checkout"),
    Var("UNS_DB_POOL", "bool", True, "PostgreSQL only: a connection pool per process (psycopg_pool).", _DB),
    Var("UNS_DB_POOL_MIN", "int", 2, "PostgreSQL only: connections the pool keeps open.", _DB),
    Var("UNS_DB_POOL_MAX", "int", DERIVED, "PostgreSQL only: the most connections the pool opens.", _DB,
        default_doc="max(16, UNS_DISPATCH_CONCURRENCY + 4)"),
    Var("UNS_DB_POOL_TIMEOUT", "float", 10.0, "PostgreSQL only: seconds to wait for a free pooled "
        "connection.", _DB),
    Var("UNS_DB_POOL_CHECK", "bool", True, "PostgreSQL only: verify each pooled connection at checkout "
        "(one empty query), so a restarted server costs no failed request.", _DB),
    Var("UNS_TEST_DB_NAME", "str", None, "Tests only: the PostgreSQL test database's name.", _DB),
    Var("UNS_SQLITE_TEST_NAME", "str", None, "Tests only: the SQLite test database's file.", _DB),
    # --- Channel layer and Redis
    Var("REDIS_URL", "str", None, "Redis for the channel layer between processes and the shared cache "
        "(the login throttle). Unset: in-memory layer and the database cache (one process).", _REDIS),
    Var("UNS_CHANNEL_CAPACITY", "int", 1000, "Messages a WebSocket's queue holds before live events for it "
        "are dropped (the subscriber catches up from the timeline).", _REDIS),
    Var("UNS_REDIS_CONNECT_TIMEOUT", "float", 5.0, "Seconds to connect to Redis.", _REDIS),
    Var("UNS_CHANNEL_PREFIX", "str", "asgi", "Prefix of the channel layer's and the cache's Redis keys "
        "(deployments sharing one Redis keep apart with their own).", _REDIS),
    # --- Runtime
    Var("UNS_DISPATCH_CONCURRENCY", "int", 16, "Channel attempts under way at once per worker process "
        "(adapter threads of a dispatch pass).", _RUNTIME),
    Var("UNS_LEASE_SECONDS", "float", 60.0, "Dispatch lease length, seconds.", _RUNTIME),
    Var("UNS_DISPATCH_BATCH", "int", 50, "Rows claimed per dispatch pass.", _RUNTIME),
    Var("UNS_POLL_INTERVAL", "float", 0.5, "Seconds each worker loop sleeps when it found no work.", _RUNTIME),
    Var("UNS_METRICS_TOKEN", "str", None, "Bearer token /metrics asks for (web and runworker's metrics "
        "port). Unset: open, for an internal network.", _RUNTIME),
    Var("UNS_STOP_GRACE_SECONDS", "float", 20.0, "Seconds a stopping worker lets channel attempts under "
        "way finish before it exits.", _RUNTIME),
    Var("UNS_EMBEDDED_WORKER", "bool", DERIVED, "Run the dispatch, timeout and callback loops inside the "
        "server process (embedded mode). Set false on web processes of the scaled mode.", _RUNTIME,
        default_doc="false with PostgreSQL, true with SQLite"),
    Var("UNS_BOOTSTRAP_POLICY_FILE", "str", None, "JSON file with the bootstrap default policy.", _RUNTIME),
    Var("UNS_EVENT_PUBLISHER", "str", "notifications.live.channels_publisher", "Factory of the live-push "
        "publisher committed events go to (empty: none).", _RUNTIME),
    Var("UNS_CALLBACK_URL", "str", None, "URL that receives ACKED, DISMISSED and TIMED_OUT events (the "
        "callback outbox). Read by the worker.", _RUNTIME),
    Var("UNS_CALLBACK_SECRET", "str", "", "Standard Webhooks signing key of the callbacks "
        "(`whsec_<base64>` or any string); empty: unsigned.", _RUNTIME),
    Var("UNS_WEBHOOK_TIMEOUT", "float", 10.0, "Webhook adapter timeout, seconds (also the default of the "
        "email and Apprise channels).", _RUNTIME),
    Var("UNS_RETRY_AFTER_MAX_SECONDS", "float", 3600.0, "The longest wait a receiver's Retry-After "
        "(429/503) can impose on the next attempt, seconds.", _RUNTIME),
    Var("UNS_SILENCE_FRESHNESS_SECONDS", "float", 300.0, "When a silence ends, a notification it held is "
        "still delivered only if it was accepted at most this many seconds ago; older ones are settled "
        "unsent (DELIVERY_WITHHELD), so the end of a silence sends no burst of old pages.", _RUNTIME),
    # --- Email
    Var("EMAIL_HOST", "str", "localhost", "SMTP server of email channels that name none.", _EMAIL),
    Var("EMAIL_PORT", "int", 25, "Its port.", _EMAIL),
    Var("EMAIL_HOST_USER", "str", "", "SMTP user name.", _EMAIL),
    Var("EMAIL_HOST_PASSWORD", "str", "", "SMTP password.", _EMAIL),
    Var("EMAIL_USE_TLS", "bool", False, "STARTTLS.", _EMAIL),
    Var("EMAIL_USE_SSL", "bool", False, "Implicit TLS (port 465).", _EMAIL),
    Var("EMAIL_TIMEOUT", "float", None, "SMTP timeout, seconds (unset: the channel's timeout).", _EMAIL),
    Var("DEFAULT_FROM_EMAIL", "str", "uns@localhost", "From address of email channels that name none.", _EMAIL),
    # --- Read by one command or module, not the settings
    Var("UNS_SERVE_WORKERS", "int", 1, "Processes `manage.py uns_serve` starts when `--workers` is not "
        "given.", _PROCESS, read_by="notifications/management/commands/uns_serve.py"),
    Var("PROMETHEUS_MULTIPROC_DIR", "str", None, "With several web processes: an empty directory (wiped "
        "before the server starts) where each process writes its counters, so /metrics sums them "
        "(prometheus_client's multiprocess mode).", _PROCESS, read_by="notifications/metrics_http.py"),
    Var("UNS_MCP_TOKEN", "str", None, "`manage.py mcp_server` over stdio: the API token of the principal "
        "it acts for (or `--token-file`).", _PROCESS, read_by="notifications/management/commands/mcp_server.py"),
    # --- Logging
    Var("UNS_LOG_FORMAT", "str", "plain", "`plain`, or `json` (one object per line).", _LOG),
    Var("UNS_LOG_LEVEL", "str", "INFO", "Level of the root logger.", _LOG),
)

BY_NAME = {v.name: v for v in VARIABLES}


def read(env, name: str, default=DERIVED):
    """The value of the declared variable ``name`` read with ``env`` (a ``environ.Env``), as its
    declared kind, with its declared default (or ``default`` when the declaration says DERIVED;
    passing one for a declared default is a ``ValueError``). KeyError: ``name`` is not declared."""
    var = BY_NAME[name]
    if var.read_by:
        raise ValueError(f"{name} is read by {var.read_by}, not the settings")
    if var.default is DERIVED:
        if default is DERIVED:
            raise ValueError(f"{name}: its default is derived, the settings must pass it")
        value = default
    else:
        if default is not DERIVED:
            raise ValueError(f"{name}: its default is declared in uns_project.envvars")
        value = list(var.default) if isinstance(var.default, list) else var.default
    if var.kind == "str":
        return env(name, default=value)
    if var.kind == "db":
        return env.db(name, default=value)
    return getattr(env, var.kind)(name, default=value)
