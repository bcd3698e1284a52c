"""Webhook channel: HTTP POST of the notification as JSON, on httpcore's connection pool.

Classification: 2xx success; 408, 429, 5xx, timeouts and transport errors retryable; every other
status (3xx, 4xx) permanent. A 429 or 503 with ``Retry-After`` (delta-seconds or an HTTP-date,
RFC 9110 section 10.2.3) reports the wait it asks for as ``DeliveryResult.retry_after``; the
runtime's settle makes the next attempt no earlier (capped by ``UNS_RETRY_AFTER_MAX_SECONDS``).
With a channel ``secret`` the request is signed per the Standard Webhooks scheme: ``webhook-id``,
``webhook-timestamp`` (epoch seconds) and ``webhook-signature: v1,<base64 HMAC-SHA256 of
"{id}.{timestamp}.{body}">``. Transport error texts are masked (``notifications.redaction``):
they are recorded in CHANNEL_ATTEMPT_RESULT and may quote the URL.
"""
import base64
import contextlib
import functools
import hashlib
import hmac
import logging
import threading
import time
import urllib.request
from dataclasses import dataclass
from datetime import timezone
from email.utils import parsedate_to_datetime

import httpcore
import httpx
from django.conf import settings

from core.keys import canonical_json

from ..redaction import mask_string
from .base import AttemptContext, ChannelTarget, DeliveryResult
from .http_deadline import DeadlineBackend, DeadlineTransport, deadline

log = logging.getLogger("uns.webhook")

# How much of a failed answer's body the error quotes (bytes, before masking).
ANSWER_EXCERPT_BYTES = 200


def target_host(url: str) -> str:
    """``host[:port]`` of ``url`` without userinfo (never a secret), for error texts."""
    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, TypeError):
        return "the configured URL"
    port = f":{parsed.port}" if parsed.port else ""
    return f"{parsed.host}{port}"


def answer_excerpt(response: "_Answer", secrets: frozenset[str]) -> str:
    """The first ``ANSWER_EXCERPT_BYTES`` of the receiver's answer as one line of text, masked
    (``redaction.mask_string`` plus the channel's own secret), or "" for an empty body."""
    raw = response.content[:ANSWER_EXCERPT_BYTES]
    text = " ".join(raw.decode("utf-8", errors="replace").split())
    if len(response.content) > ANSWER_EXCERPT_BYTES or response.truncated:
        text += " …"
    return mask_string(text, secrets)


_host = functools.lru_cache(maxsize=256)(target_host)  # asked on every POST; a pure function of the URL


RETRYABLE_STATUS = frozenset({408, 429})
# Statuses whose Retry-After is honoured (RFC 9110 section 10.2.3 for 503, RFC 6585 section 4 for
# 429); on a 3xx it would be a redirect's delay, and 3xx is permanent here.
RETRY_AFTER_STATUS = frozenset({429, 503})
# Larger delta-seconds are read as this (about 31 years): the settle caps the wait far below, and
# float() of a 400-digit integer would overflow.
_RETRY_AFTER_CEILING = 10**9


def parse_retry_after(value: str | None, now: float) -> float | None:
    """Seconds to wait that a ``Retry-After`` header value asks for (RFC 9110 section 10.2.3:
    ``delta-seconds``, one or more digits, or an ``HTTP-date``), counted from ``now`` (epoch
    seconds). An HTTP-date is read with ``email.utils.parsedate_to_datetime`` (IMF-fixdate and
    the obsolete RFC 850 and asctime forms; a date without a zone is GMT, as HTTP-dates are); a
    date in the past gives 0.0. Returns None for a missing, empty or malformed value (negative
    or fractional seconds included), which the caller treats as "the provider did not say"."""
    if value is None:
        return None
    value = value.strip()
    if not value:
        return None
    if value.isascii() and value.isdigit():
        return float(min(int(value), _RETRY_AFTER_CEILING))
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return max(0.0, when.timestamp() - now)


def validate_url(url) -> str:
    """A webhook ``url``: absolute ``http`` or ``https`` with a host, as httpx parses it. A
    single-label host (``http://receiver:8080/hook``, a container or Kubernetes service name) is
    fine; white space in the host is not. Raises ``ValueError`` (the message masks credentials)."""
    try:
        parsed = httpx.URL(url) if isinstance(url, str) else None
    except httpx.InvalidURL:
        parsed = None
    if parsed is None or parsed.scheme not in ("http", "https") or not parsed.host or "%20" in parsed.host:
        raise ValueError(f"not an http(s) URL: {mask_string(str(url))!r}")
    return url


def payload(notification: dict, context: AttemptContext) -> dict:
    """The JSON body a webhook receives (the resolution snapshot is internal and left out)."""
    metadata = {k: v for k, v in notification.get("metadata", {}).items() if k != "uns_resolution"}
    return {
        "id": notification["id"],
        "source": notification["source"],
        "title": notification["title"],
        "body": notification.get("body", ""),
        "severity": notification["severity"],
        "intent": notification.get("intent"),
        "require_ack": notification.get("require_ack", False),
        "dedup_key": notification.get("dedup_key"),
        "metadata": metadata,
        "created_at": notification.get("created_at"),
        "attempt": context.attempt,
        "cycle": context.cycle,
    }


def whsec_key(secret: str) -> bytes | None:
    """The key of a Standard Webhooks secret ``whsec_<base64>``: its base64-decoded bytes (empty
    for a bare ``whsec_``), or None when ``secret`` has no such prefix or the rest is not base64."""
    if not secret.startswith("whsec_"):
        return None
    try:
        return base64.b64decode(secret[len("whsec_"):], validate=True)
    except ValueError:
        return None


@functools.lru_cache(maxsize=256)
def _known_secrets(secret: str) -> frozenset[str]:
    """What an answer or an error must not show of a channel ``secret``: the secret itself and,
    for a Standard Webhooks ``whsec_<base64>`` secret, its decoded key as text when it is one
    (a receiver echoing its key showed it verbatim: trial finding)."""
    found = {secret}
    key = whsec_key(secret)
    if key:
        try:
            text = key.decode("utf-8")
        except UnicodeDecodeError:
            text = ""
        if len(text) >= 4:
            found.add(text)
    return frozenset(found)


def signing_key(secret: str) -> bytes:
    """The HMAC key of a channel secret. A Standard Webhooks secret ``whsec_<base64>`` keys with
    its base64-decoded bytes (``whsec_key``), as that spec's verifiers expect; any other secret
    with its UTF-8 bytes."""
    key = whsec_key(secret)
    return key if key is not None else secret.encode("utf-8")


def sign(secret: str, message_id: str, timestamp: int, body: bytes) -> str:
    """Standard Webhooks ``v1`` signature: base64 HMAC-SHA256 of ``{id}.{timestamp}.{body}``
    keyed with ``signing_key(secret)``."""
    mac = hmac.new(signing_key(secret), f"{message_id}.{timestamp}.".encode() + body, hashlib.sha256)
    return "v1," + base64.b64encode(mac.digest()).decode("ascii")


_TIMEOUT_ERRORS = (httpx.TimeoutException, httpcore.TimeoutException)
# httpcore's errors (httpx raises them as its own HTTPError subclasses of the same names)
_TRANSPORT_ERRORS = (httpx.HTTPError, httpcore.NetworkError, httpcore.ProtocolError, httpcore.UnsupportedProtocol,
                     httpcore.ProxyError)


# The most of a receiver's answer body a POST reads: the excerpt needs ANSWER_EXCERPT_BYTES and
# nothing else reads the body. A longer answer is cut there and its connection closed (not
# drained): a receiver answering with hundreds of megabytes, on every retry and from many
# adapter threads at once, must not take the worker's memory (trial finding: 400 MB answers
# grew a server to 2.5 GB).
MAX_ANSWER_BYTES = 4096


@dataclass(frozen=True)
class _Answer:
    """A receiver's answer: status, headers (lower-case name -> value, repeated names joined
    with ", " as httpx joins them), the first ``MAX_ANSWER_BYTES`` of the body, and whether the
    body went on beyond them (``truncated``)."""

    status_code: int
    headers: dict
    content: bytes
    truncated: bool = False


def _read_capped(chunks) -> tuple[bytes, bool]:
    """At most ``MAX_ANSWER_BYTES`` from the byte ``chunks`` of a streamed body, and whether more
    followed (the rest is left unread: the caller closes the response, and with it the
    connection)."""
    kept, size = [], 0
    for chunk in chunks:
        room = MAX_ANSWER_BYTES - size
        if len(chunk) > room:
            kept.append(chunk[:room])
            return b"".join(kept), True
        kept.append(chunk)
        size += len(chunk)
    return b"".join(kept), False


@functools.lru_cache(maxsize=256)
def _route(url: str) -> tuple[httpcore.URL, tuple]:
    """The httpcore URL of ``url`` and the headers its address implies (``Host``, and
    ``Authorization: Basic`` for userinfo), exactly as httpx builds them: httpx parses and
    normalises the URL (IDNA, percent-encoding, default ports). Raises ``httpx.InvalidURL``, and
    ``httpcore.UnsupportedProtocol`` for a URL without an http(s) scheme or a host."""
    parsed = httpx.URL(url)
    if not parsed.scheme or not parsed.host:  # httpx's client refuses these with these words
        raise httpcore.UnsupportedProtocol("Request URL is missing an 'http://' or 'https://' protocol.")
    if parsed.scheme not in ("http", "https"):
        raise httpcore.UnsupportedProtocol(f"Request URL has an unsupported protocol '{parsed.scheme}://'.")
    headers = [(b"Host", parsed.netloc)]
    if parsed.username or parsed.password:
        token = base64.b64encode(f"{parsed.username}:{parsed.password}".encode("utf-8"))
        headers.append((b"Authorization", b"Basic " + token))
    return (httpcore.URL(scheme=parsed.raw_scheme, host=parsed.raw_host, port=parsed.port, target=parsed.raw_path),
            tuple(headers))


def _environment_proxies() -> bool:
    """Whether the environment names an HTTP(S) proxy (``HTTP_PROXY``, ``HTTPS_PROXY``,
    ``ALL_PROXY``), which httpx's client honours and the bare connection pool does not."""
    return any(k in ("http", "https", "all") for k in urllib.request.getproxies())


class WebhookAdapter:
    """POSTs to ``target.config['url']`` with a timeout (``config['timeout']`` seconds, else
    ``UNS_WEBHOOK_TIMEOUT``) that bounds the whole request: connect, send and the full answer
    (``http_deadline``), so a receiver trickling its answer cannot hold the attempt longer.
    ``clock``: () -> float epoch seconds, the runtime's (``registry.default_adapters`` passes
    it): an HTTP-date ``Retry-After`` becomes a wait on the clock the settle adds it to. The
    signature timestamp stays on the wall clock, which receivers compare it with.

    The wire is httpcore's connection pool, used directly (httpx's own transport layer, with
    the URL parsed by httpx, ``_route``): httpx's client around it doubled the CPU of a POST
    (0.33 against 0.15 ms on the bench machine, bench/README.md). ``transport`` lets tests
    inject an httpx transport; with one, or with a proxy in the environment (which httpx
    honours), each POST goes through an ``httpx.Client`` instead, classified the same way."""

    def __init__(self, transport: httpx.BaseTransport | None = None, clock=time.time):
        self._transport = transport
        self._clock = clock
        self._idle: list = []  # senders no POST is using (most recent last)
        self._lock = threading.Lock()
        self._ssl_context = None

    def _new_sender(self):
        limits = httpx.Limits(max_connections=8, max_keepalive_connections=4)
        if self._transport is not None or _environment_proxies():
            transport = self._transport or DeadlineTransport(limits=limits)
            return httpx.Client(transport=transport, follow_redirects=False, limits=limits)
        if self._ssl_context is None:  # httpx's default context (certifi, SSL_CERT_FILE / SSL_CERT_DIR)
            self._ssl_context = httpx.create_ssl_context()
        return httpcore.ConnectionPool(ssl_context=self._ssl_context, max_connections=limits.max_connections,
                                       max_keepalive_connections=limits.max_keepalive_connections,
                                       keepalive_expiry=limits.keepalive_expiry, network_backend=DeadlineBackend())

    @contextlib.contextmanager
    def _sender(self):
        """A pooled sender (an httpcore connection pool, or an httpx client, ``_new_sender``) for
        one POST, borrowed for its duration: one per concurrent send (the dispatch threads),
        kept with their keep-alive connections across sends and dispatch passes. Building one per
        send loads the CA bundle each time (~100 ms a POST against ~3 ms reused, bench/README.md);
        one shared by every thread serialised them on its pool's lock, which polls each idle
        connection under it (a third of an adapter thread's time with 16 threads,
        bench/profile_dispatch.py)."""
        with self._lock:
            sender = self._idle.pop() if self._idle else None
        if sender is None:
            sender = self._new_sender()
        try:
            yield sender
        finally:
            with self._lock:
                self._idle.append(sender)

    @staticmethod
    def _exchange(sender, url: str, body: bytes, headers: dict, timeout: float) -> _Answer:
        """POST ``body`` on ``sender`` and read the answer, its body up to ``MAX_ANSWER_BYTES``
        (inside the caller's deadline)."""
        if isinstance(sender, httpx.Client):
            with sender.stream("POST", url, content=body, headers=headers, timeout=timeout) as response:
                content, truncated = _read_capped(response.iter_bytes())
                return _Answer(response.status_code, response.headers, content, truncated)
        core_url, address = _route(url)
        raw = [*address, (b"Accept", b"*/*"), *((k.encode("latin-1"), v.encode("latin-1")) for k, v in headers.items())]
        with sender.stream("POST", core_url, headers=raw, content=body, extensions={
                "timeout": {"connect": timeout, "read": timeout, "write": timeout, "pool": timeout}}) as response:
            answer_headers: dict = {}
            for name, value in response.headers:
                name, value = name.decode("latin-1").lower(), value.decode("latin-1")
                answer_headers[name] = f"{answer_headers[name]}, {value}" if name in answer_headers else value
            content, truncated = _read_capped(response.iter_stream())
        # The line httpx's client logged for each request (operators read it; the logging filter
        # masks the URL's secrets, redaction.RedactSecrets).
        log.info('HTTP Request: POST %s "HTTP/1.1 %d %s"', url, response.status,
                 response.extensions.get("reason_phrase", b"").decode("latin-1"))
        return _Answer(response.status, answer_headers, content, truncated)

    def send(self, notification: dict, target: ChannelTarget, context: AttemptContext) -> DeliveryResult:
        url = target.config.get("url")
        if not url:
            return DeliveryResult(False, retryable=False, error="channel has no url configured")
        body = canonical_json(payload(notification, context))
        timeout = float(target.config.get("timeout") or settings.UNS_WEBHOOK_TIMEOUT)
        return self.post(url, body, message_id=f"{context.notification_id}:{context.cycle}", secret=target.secret,
                         timeout=timeout)

    def post(self, url: str, body: bytes, *, message_id: str, secret: str = "", timeout: float | None = None,
             user_agent: str = "UNS-webhook/1") -> DeliveryResult:
        """The one webhook sender: POST ``body`` (JSON bytes) to ``url`` on a pooled connection, with
        ``idempotency-key`` and ``webhook-id`` set to ``message_id``, signed (Standard Webhooks)
        when ``secret`` is given, bounded in all by ``timeout`` seconds (default
        ``UNS_WEBHOOK_TIMEOUT``; ``http_deadline``), and classified as the module doc says
        (``Retry-After`` of a 429/503 in ``retry_after``). Never raises for a provider failure
        (an unparseable URL raises ``httpx.InvalidURL``). Used by ``send`` and by the callback
        outbox (``runtime.callbacks.HttpCallback``)."""
        headers = {
            "content-type": "application/json",
            "user-agent": user_agent,
            "idempotency-key": message_id,
            "webhook-id": message_id,
        }
        if secret:
            ts = int(time.time())
            headers["webhook-timestamp"] = str(ts)
            headers["webhook-signature"] = sign(secret, message_id, ts, body)
        timeout = float(timeout or settings.UNS_WEBHOOK_TIMEOUT)
        host = _host(url) if isinstance(url, str) else target_host(url)
        secrets = _known_secrets(secret) if secret else frozenset()
        try:
            with deadline(timeout), self._sender() as sender:  # the whole POST, not each read (http_deadline)
                response = self._exchange(sender, url, body, headers, timeout)
        except _TIMEOUT_ERRORS as exc:
            return DeliveryResult(False, retryable=True, metadata={"host": host},
                                  error=f"timeout after {timeout}s: {type(exc).__name__} (waiting for {host})")
        except _TRANSPORT_ERRORS as exc:
            return DeliveryResult(False, retryable=True, metadata={"host": host},
                                  error=f"transport error to {host}: {type(exc).__name__}: {mask_string(str(exc), secrets)}")
        code = response.status_code
        meta = {"status_code": code, "host": host}
        excerpt = answer_excerpt(response, secrets)
        answer = f"HTTP {code} {excerpt}".strip()  # DeliveryResult.answer: what ``uns_channel test`` prints
        if 200 <= code < 300:
            return DeliveryResult(True, message_id=response.headers.get("x-request-id") or message_id, metadata=meta,
                                  answer=answer)
        retryable = code in RETRYABLE_STATUS or code >= 500
        retry_after = None
        if code in RETRY_AFTER_STATUS:
            retry_after = parse_retry_after(response.headers.get("retry-after"), self._clock())
        meta["answer_excerpt"] = excerpt
        error = f"HTTP {code} from {host}" + (f": {excerpt}" if excerpt else "")
        return DeliveryResult(False, retryable=retryable, error=error, metadata=meta, retry_after=retry_after,
                              answer=answer)
