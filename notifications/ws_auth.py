"""WebSocket authentication, shared by every consumer (centralised like the HTTP one).

A socket authenticates in ``connect()`` with one of:

- ``Authorization: Bearer <token>`` (machine clients; the same hashed knox tokens as HTTP);
- ``?token=<token>`` in the URL (browsers cannot set headers on a WebSocket; keep such URLs out
  of logs and history, and prefer the session where there is one);
- the Django session cookie (``AuthMiddlewareStack``), for the console in a browser.

Presented credentials that fail are refused even when a session exists: wrong credentials never
silently fall back to another identity. ``OriginCheck`` guards the session against cross-site
WebSocket hijacking: a browser always sends ``Origin``, and it must name an allowed host; a
client without ``Origin`` is not a browser, so no ambient cookie can be abused through it.

Database work of the sockets goes through ``database_call``: channels' ``database_sync_to_async``
with ``thread_sensitive=False`` on a pool of ``UNS_WS_DB_THREADS`` threads (default 8), so the
calls of different sockets run side by side instead of queueing for the one thread-sensitive
thread of the process (messages of one socket still run one after another: a consumer handles
one message at a time). Channels closes the thread's connections before and after each call
(``close_old_connections``): with the PostgreSQL pool (``CONN_MAX_AGE`` 0) that hands the
connection back to the pool, on SQLite it closes the thread's connection. Each thread holds at
most one connection during a call, so keep ``UNS_WS_DB_THREADS`` under ``UNS_DB_POOL_MAX`` (16);
the threads are the process's own, not the event loop's default executor, so their number does
not depend on the server (daphne's ``ASGI_THREADS``, uvicorn) and they outlive any one loop.
"""
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from importlib import import_module
from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from channels.security.websocket import OriginValidator
from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import connections
from rest_framework.exceptions import AuthenticationFailed

from .access import has_capability, token_principal

UNAUTHENTICATED = 4401
FORBIDDEN = 4403


class OriginCheck(OriginValidator):
    """``OriginValidator`` over ``ALLOWED_HOSTS`` that lets clients without ``Origin`` through."""

    def valid_origin(self, parsed_origin):
        if parsed_origin is None:
            return True
        return self.validate_origin(parsed_origin)


def origin_check(application):
    return OriginCheck(application, settings.ALLOWED_HOSTS)


class BadCredentials(Exception):
    """Credentials were presented and are malformed or wrong."""


def presented_token(scope) -> str | None:
    """The token the client presented (header first, then ``token`` query parameter), or None.
    Raises ``BadCredentials`` for an ``Authorization`` header that is not one Bearer token, or
    a ``token`` parameter given more than once or empty."""
    for name, value in scope.get("headers", []):
        if name == b"authorization":
            parts = value.split()
            if len(parts) != 2 or parts[0].lower() != b"bearer":
                raise BadCredentials("the Authorization header must be 'Bearer <token>'")
            try:
                return parts[1].decode("utf-8")
            except UnicodeDecodeError:
                raise BadCredentials("the token is not valid UTF-8") from None
    query = parse_qs(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
    tokens = query.get("token")
    if tokens is None:
        return None
    if len(tokens) != 1 or not tokens[0]:
        raise BadCredentials("give one non-empty token parameter")
    return tokens[0]


@dataclass(frozen=True)
class Principal:
    """Who a socket acts as, and how it proved it (kept to re-check before each message)."""

    user: object
    token: str | None  # None: the session

    @property
    def name(self) -> str:
        return self.user.get_username()


_DATABASE_THREADS = ThreadPoolExecutor(max_workers=settings.UNS_WS_DB_THREADS, thread_name_prefix="uns-ws-db")


def database_call(fn):
    """``fn`` (sync, may use the ORM) as a coroutine function run on one of the
    ``UNS_WS_DB_THREADS`` database threads, not the process's single thread-sensitive thread; the
    thread's database connections are closed (returned to the pool) before and after each call.
    Usable as a decorator."""
    return database_sync_to_async(fn, thread_sensitive=False, executor=_DATABASE_THREADS)


def close_database_threads(timeout: float = 10.0) -> None:
    """Close the database connections every ``database_call`` thread holds (returned to the pool
    on PostgreSQL). Channels' test communicator turns the close after each call into a no-op, so
    test sessions call this before the test database is dropped. Each of the
    ``UNS_WS_DB_THREADS`` threads runs one closing task (a barrier keeps a thread from taking
    two). Raises ``threading.BrokenBarrierError`` if they do not all start within ``timeout``
    seconds."""
    threads = settings.UNS_WS_DB_THREADS
    barrier = threading.Barrier(threads)

    def close():
        connections.close_all()
        barrier.wait(timeout)

    for future in [_DATABASE_THREADS.submit(close) for _ in range(threads)]:
        future.result(timeout + 1)


def _token_user(token: str):
    try:
        user, _ = token_principal(token)
    except AuthenticationFailed:
        return None
    return user


def _session_user(scope):
    """The session's user, re-read from the session store and the database (so a logout or a
    deactivated account takes effect), or None."""
    session = scope.get("session")
    user = scope.get("user")
    if session is None or user is None or not user.is_authenticated or not session.session_key:
        return None
    store = import_module(settings.SESSION_ENGINE).SessionStore
    if not store().exists(session.session_key):
        return None
    return get_user_model().objects.filter(pk=user.pk, is_active=True).first()


def _authorize(scope, token: str | None, capability: str) -> tuple[Principal | None, int | None]:
    if token is not None:
        user = _token_user(token)
    else:
        user = _session_user(scope)
    if user is None:
        return None, UNAUTHENTICATED
    if not has_capability(user, capability):
        return None, FORBIDDEN
    return Principal(user, token), None


@database_call
def authenticate(scope, capability: str) -> tuple[Principal | None, int | None]:
    """``(principal, None)`` when the socket's credentials are valid and carry ``capability``;
    otherwise ``(None, 4401)`` (missing, malformed or wrong credentials) or ``(None, 4403)``."""
    try:
        token = presented_token(scope)
    except BadCredentials:
        return None, UNAUTHENTICATED
    return _authorize(scope, token, capability)


def recheck(scope, principal: Principal, capability: str) -> int | None:
    """Re-check a connected socket before acting on a message (sync, ORM): None when still
    allowed, else the close code (token revoked or expired, session ended, account deactivated,
    capability gone). Permissions are read fresh, never from the connect-time cache. With a
    token: one indexed statement (``access.token_principal``: the token by its digest with the
    user and its capabilities joined; a backend without the aggregate reads the capabilities in
    a second, ``access.has_capability``); a consumer may run it in the same ``database_call`` as
    the work it guards, so the check costs no thread hop of its own."""
    fresh, code = _authorize(scope, principal.token, capability)
    if fresh is not None and fresh.user.pk != principal.user.pk:
        return UNAUTHENTICATED
    return code


async def reauthorize(scope, principal: Principal, capability: str) -> int | None:
    """``recheck`` in a ``database_call`` of its own (for a message whose work needs no database
    call to share it with)."""
    return await database_call(recheck)(scope, principal, capability)
