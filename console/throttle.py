"""The console login throttle (issue 12): failed logins counted per client address and per
username, in the cache every web process shares.

- The client address is the socket peer (``REMOTE_ADDR``). ``X-Forwarded-For``, which any client
  can send, is read only when the peer is one of ``UNS_TRUSTED_PROXIES`` (addresses or CIDRs;
  none by default): then the client is the rightmost address in it that is not a trusted proxy
  (the one the outermost trusted proxy saw), as uvicorn's ``--forwarded-allow-ips`` reads it.
- Counters live in Django's default cache: the database cache table ``uns_cache`` (created by
  ``migrate``), or Redis when ``REDIS_URL`` is set (uns_project/settings.py), so several web
  processes share one limit. A fixed window of ``UNS_LOGIN_WINDOW_SECONDS``: after
  ``UNS_LOGIN_FAILURES_PER_ADDRESS`` failures from one address, or
  ``UNS_LOGIN_FAILURES_PER_USERNAME`` for one username from any addresses, every login attempt
  matching either (the right password too) is answered 429 with ``Retry-After`` until the window
  ends. Only failures count (wrong password, unknown or inactive user), so people who log in do
  not use up their address's allowance.
- Increments: Redis' INCR is atomic; on the database cache each increment runs in one
  transaction, which on SQLite (``BEGIN IMMEDIATE``) serialises it across processes. On
  PostgreSQL without Redis, failures racing each other in the same instant may count once.
- Keys carry SHA-256 digests, not the username or address themselves.
"""
import functools
import hashlib
import ipaddress
import math
import time

from django.conf import settings
from django.core.cache import cache as default_cache
from django.core.exceptions import ImproperlyConfigured
from django.db import transaction
from rest_framework.throttling import BaseThrottle


@functools.lru_cache(maxsize=8)
def _networks(entries: tuple[str, ...]) -> tuple:
    try:
        return tuple(ipaddress.ip_network(e.strip(), strict=False) for e in entries if e.strip())
    except ValueError as exc:
        raise ImproperlyConfigured(f"UNS_TRUSTED_PROXIES: {exc}") from None


def trusted_networks() -> tuple:
    """``UNS_TRUSTED_PROXIES`` parsed (ImproperlyConfigured for an entry that is no address or CIDR)."""
    return _networks(tuple(getattr(settings, "UNS_TRUSTED_PROXIES", ())))


def _trusted(address: str, networks) -> bool:
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    return any(ip in net for net in networks)


def client_address(request) -> str:
    """The address the request came from, forwarded headers honoured only from trusted proxies."""
    meta = request.META
    peer = meta.get("REMOTE_ADDR") or ""
    networks = trusted_networks()
    if not networks or not _trusted(peer, networks):
        return peer
    forwarded = [a.strip() for a in meta.get("HTTP_X_FORWARDED_FOR", "").split(",") if a.strip()]
    for address in reversed(forwarded):
        if not _trusted(address, networks):
            return address
    return forwarded[0] if forwarded else peer  # every hop trusted: the farthest one


def _digest(kind: str, value: str) -> str:
    return hashlib.sha256(f"{kind}\0{value}".encode()).hexdigest()[:32]


class LoginLimiter:
    """Counts failed logins per address and per username in the shared cache.

    ``clock`` returns float Unix seconds and ``cache`` is the store (default: the default cache);
    tests replace them. ``retry_after`` is the number of whole seconds (at least 1) until the
    current window ends, or None when not limited."""

    def __init__(self, clock=time.time, cache=None):
        self.clock = clock
        self.cache = cache if cache is not None else default_cache

    @staticmethod
    def _window() -> int:
        return int(getattr(settings, "UNS_LOGIN_WINDOW_SECONDS", 60))

    def _keys(self, address: str, username: str | None, now: float) -> dict[str, int]:
        """``{cache key: limit}`` for this window."""
        index = int(now // self._window())
        keys = {f"uns:login:addr:{_digest('addr', address)}:{index}":
                int(getattr(settings, "UNS_LOGIN_FAILURES_PER_ADDRESS", 20))}
        if username:
            keys[f"uns:login:user:{_digest('user', username)}:{index}"] = \
                int(getattr(settings, "UNS_LOGIN_FAILURES_PER_USERNAME", 20))
        return keys

    def retry_after(self, address: str, username: str | None) -> int | None:
        now = self.clock()
        keys = self._keys(address, username, now)
        counts = self.cache.get_many(list(keys))
        if any(counts.get(key, 0) >= limit for key, limit in keys.items()):
            window = self._window()
            return max(1, math.ceil((int(now // window) + 1) * window - now))
        return None

    def record_failure(self, address: str, username: str | None) -> None:
        # Kept a window past its end (clocks of processes differ a little); the key names the window.
        timeout = 2 * self._window()
        for key in self._keys(address, username, self.clock()):
            with transaction.atomic():
                if not self.cache.add(key, 1, timeout):
                    try:
                        self.cache.incr(key)
                    except ValueError:  # expired between add and incr
                        self.cache.add(key, 1, timeout)


LIMITER = LoginLimiter()


def _username(request) -> str | None:
    data = request.data
    value = data.get("username") if isinstance(data, dict) else None
    return value if isinstance(value, str) and value else None


class LoginThrottle(BaseThrottle):
    """DRF throttle of ``POST /api/v1/auth/login``: refuses (429, ``Retry-After``) while the
    client's address or the username tried is over its limit. The view records failures
    (``record_login_failure``)."""

    def allow_request(self, request, view):
        self._wait = LIMITER.retry_after(client_address(request), _username(request))
        return self._wait is None

    def wait(self):
        return self._wait


def record_login_failure(request) -> None:
    LIMITER.record_failure(client_address(request), _username(request))
