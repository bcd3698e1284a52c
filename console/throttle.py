"""The console login throttle: failed logins counted per client address and per
username, in the cache every web process shares.

- The client address is the socket peer (``REMOTE_ADDR``). ``X-Forwarded-For``, which any client
  can send, is read only when the peer is one of ``UNS_TRUSTED_PROXIES`` (addresses or CIDRs;
  none by default): then the client is the rightmost address in it that is not a trusted proxy
  (the one the outermost trusted proxy saw), as uvicorn's ``--forwarded-allow-ips`` reads it.
- Counters live in Django's default cache: the database cache table ``uns_cache`` (created by
  ``migrate``), or Redis when ``REDIS_URL`` is set (uns_project/settings.py), so several web
  processes share one limit. Within a sliding ``UNS_LOGIN_WINDOW_SECONDS`` (estimated from two
  fixed windows), after ``UNS_LOGIN_FAILURES_PER_ADDRESS`` failures from one address, or
  ``UNS_LOGIN_FAILURES_PER_USERNAME`` for one username from any addresses, every login attempt
  matching either (the right password too) is answered 429 with ``Retry-After`` (whole seconds
  until it would be allowed). Only failures count (wrong password, unknown or inactive user), so people who log in do
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

from notifications.runtime import logins


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

    def _keys(self, address: str, username: str | None, index: int) -> list[tuple[str, str, int]]:
        """``(previous window's key, this window's key, limit)`` per counter."""
        counters = [(f"addr:{_digest('addr', address)}", int(getattr(settings, "UNS_LOGIN_FAILURES_PER_ADDRESS", 20)))]
        if username:
            counters.append((f"user:{_digest('user', username)}",
                             int(getattr(settings, "UNS_LOGIN_FAILURES_PER_USERNAME", 20))))
        return [(f"uns:login:{name}:{index - 1}", f"uns:login:{name}:{index}", limit) for name, limit in counters]

    def retry_after(self, address: str, username: str | None) -> int | None:
        """A sliding window, estimated from two fixed ones (this and the previous, weighed by how
        much of it still falls within the last window's length), so failures straddling a
        window's start count together instead of twice the limit passing there."""
        now = self.clock()
        window = self._window()
        index = int(now // window)
        elapsed = now - index * window
        fraction = elapsed / window
        keys = self._keys(address, username, index)
        counts = self.cache.get_many([k for prev, cur, _ in keys for k in (prev, cur)])
        waits = []
        for prev_key, cur_key, limit in keys:
            cur, prev = counts.get(cur_key, 0), counts.get(prev_key, 0)
            if cur + prev * (1 - fraction) < limit:
                continue
            if cur >= limit:  # until the next window has weighed this one down below the limit
                wait = (window - elapsed) + window * (1 - limit / cur)
            else:  # the previous window's share tips it: until that share has shrunk enough
                wait = window * (1 - fraction - (limit - cur) / prev)
            # Past the instant the estimate equals the limit (still refused), float error aside.
            waits.append(math.floor(wait + 1e-6) + 1)
        return max(waits) if waits else None

    def record_failure(self, address: str, username: str | None) -> None:
        # Kept for this window and the next (which weighs it), plus slack for clocks that differ.
        timeout = 3 * self._window()
        for _, key, _ in self._keys(address, username, int(self.clock() // self._window())):
            with transaction.atomic():
                if not self.cache.add(key, 1, timeout):
                    try:
                        self.cache.incr(key)
                    except ValueError:  # expired between add and incr
                        self.cache.add(key, 1, timeout)


    def audit_refusal(self, address: str, username: str | None, retry_after: int) -> None:
        """Record a refusal (``runtime.logins.login_refused``): the first for this address and
        username in each window, so a client hammering the throttle writes one audit row per
        window, not one per request."""
        now = self.clock()
        index = int(now // self._window())
        key = f"uns:login:refused:{_digest('addr', address)}:{_digest('user', username or '')}:{index}"
        if self.cache.add(key, 1, 2 * self._window()):
            logins.login_refused(username, address, retry_after, now)


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
        address, username = client_address(request), _username(request)
        self._wait = LIMITER.retry_after(address, username)
        if self._wait is not None:
            LIMITER.audit_refusal(address, username, self._wait)
        return self._wait is None

    def wait(self):
        return self._wait


def record_login_failure(request) -> None:
    LIMITER.record_failure(client_address(request), _username(request))
