"""Apprise channel (kind ``apprise``): chat and push through the Apprise library's service URLs
(Slack, Microsoft Teams, Discord, Telegram, Matrix, ntfy, generic ``json://`` ..., ~150 of them).

The channel ``secret`` holds one or more Apprise URLs, one per line (whitespace-separated): they
carry the services' credentials, so they are stored and masked like every channel secret.
``config``: ``timeout`` (seconds per HTTP connect and read, default ``UNS_WEBHOOK_TIMEOUT``).

Every URL is one provider attempt (write-path rule 2: "conditional lease checks precede channel
and built-in provider retry attempts"): before each, ``context.provider.begin()`` confirms the
lease (the runtime's committed check and CHANNEL_ATTEMPT_STARTED; the first URL stands on the
check made before the channel), and each answer is recorded as its own CHANNEL_ATTEMPT_RESULT
(``metadata``: ``provider_attempt`` (1-based), ``provider_attempts``, ``service``,
``provider_key``, ``apprise_status``, ``status_code`` when the plugin's message names one). A
URL that succeeded in an earlier attempt of the obligation is not sent again. Apprise's own
retries are switched off for every URL (``retry=0`` overrides any ``?retry=N`` in a URL), so the
only retries are the runtime's, with their lease checks and backoff; ``optional=yes`` is
overridden too (a failure is recorded as one).

Classification: Apprise reports a bool per service (and a log line), not whether the provider
would accept a retry, so every failed send is retryable; only a URL Apprise cannot parse
(a configuration error) is permanent. The channel fails if any URL failed: retryable if any
failure is.

Secrets and logs: UNS never logs or records a URL (results name the URL by its position and an
HMAC of it). While a URL is being sent, ``MaskInFlight`` masks its credential-looking parts in
records of the ``apprise`` and ``urllib3.connectionpool`` loggers (their DEBUG lines carry
request paths and headers), and in the plugin message kept as the error.
"""
import logging
import re
import threading
from collections import Counter
from contextlib import contextmanager
from dataclasses import replace
from urllib.parse import parse_qsl, unquote, urlsplit

from django.conf import settings
from django.utils.crypto import salted_hmac

from ..redaction import mask_string
from .base import AttemptContext, ChannelTarget, DeliveryResult

# Severity -> Apprise's notify type (``apprise.NotifyType`` values).
NOTIFY_TYPES = {"info": "info", "warning": "warning", "error": "failure", "critical": "failure"}
ERROR_MAX = 300  # characters of a plugin's failure message kept as the error
_MASKED_LOGGERS = ("apprise", "urllib3.connectionpool")
_HOSTLIKE = re.compile(r"(?:[A-Za-z0-9-]+\.)+[A-Za-z0-9-]+|localhost|\[[0-9a-fA-F:.]+\]")
_STATUS = re.compile(r"\berror=(\d{3})\b")


def parse_urls(secret: str) -> list[str]:
    """The Apprise URLs of a channel secret: one per line (any whitespace separates them; a URL
    has none). ``[]`` for an empty secret."""
    return [u for u in (secret or "").split() if u]


def _lib():
    """The apprise package, imported on first use: it takes about 0.5 s to import (and 1.5 s
    more to discover its plugins on the first URL), which processes that never send to an
    apprise channel (web servers, most commands) should not pay."""
    import apprise  # here, not at the top: 0.5 s to import, paid only by a process that sends to apprise

    return apprise


def _asset():
    # Synchronous: the dispatch thread is the unit of concurrency, and one URL is sent at a time.
    return _lib().AppriseAsset(async_mode=False)


def validate_urls(secret: str) -> list[str]:
    """The URLs of ``secret`` if Apprise can load every one. Raises ``ValueError`` naming the
    first bad URL by position and scheme only (never the URL: it holds credentials)."""
    urls = parse_urls(secret)
    if not urls:
        raise ValueError("an apprise channel needs at least one Apprise URL in its secret")
    asset = _asset()
    for i, url in enumerate(urls, 1):
        with MASKER.sending(url):  # Apprise logs the URL it loaded at DEBUG
            plugin = _lib().Apprise.instantiate(url, asset=asset, suppress_exceptions=True)
        if plugin is None:
            scheme = url.split("://", 1)[0] if "://" in url else "?"
            raise ValueError(f"Apprise URL #{i} ({scheme}://...) is not a URL Apprise can send to")
    return urls


def provider_key(url: str) -> str:
    """A stable id of one URL for the timeline (HMAC-SHA256 keyed by ``SECRET_KEY``, 16 hex
    digits): tells a retry which URLs already succeeded without storing the URL."""
    return salted_hmac("uns.adapters.apprise.provider_key", url).hexdigest()[:16]


def secret_fragments(url: str) -> set[str]:
    """The parts of ``url`` that may be credentials: the password (and the username of a URL
    without one), and every path segment, host or query value of 6+ characters that is not a
    host name or address. Best effort: Apprise URLs put tokens anywhere."""
    found = set()
    rest = url.split("://", 1)[1] if "://" in url else url
    location, _, query = rest.partition("?")
    location = location.partition("#")[0]
    try:
        parts = urlsplit(url)
        if parts.password:
            found.add(parts.password)
        elif parts.username:
            found.add(parts.username)
    except ValueError:
        pass
    pieces = re.split(r"[/:@]", location)
    pieces += [p for _k, v in parse_qsl(query, keep_blank_values=False) for p in re.split(r"[,\s]", v)]
    for piece in pieces:
        if len(piece) >= 6 and not _HOSTLIKE.fullmatch(piece):
            found.add(piece)
    found |= {unquote(f) for f in found}
    return {f for f in found if len(f) >= 3}


class MaskInFlight(logging.Filter):
    """Masks the secret fragments of every URL being sent right now in the records of the
    loggers it is attached to (a logger filter: it runs before any handler, caplog's too)."""

    def __init__(self):
        super().__init__()
        self._lock = threading.Lock()
        self._fragments = Counter()

    @contextmanager
    def sending(self, url: str):
        """Mask ``secret_fragments(url)`` in every record (any thread) while the block runs;
        nested and concurrent uses of the same URL are counted."""
        fragments = secret_fragments(url)
        with self._lock:
            self._fragments.update(fragments)
        try:
            yield
        finally:
            with self._lock:
                self._fragments.subtract(fragments)
                self._fragments += Counter()  # drop the zero counts

    def mask(self, text: str) -> str:
        """``text`` masked by ``redaction.mask_string`` with every fragment of a URL being sent
        among its secrets (replaced by ``***``)."""
        with self._lock:
            fragments = frozenset(self._fragments)
        return mask_string(text, fragments)

    def filter(self, record: logging.LogRecord) -> bool:
        if not self._fragments:
            return True
        try:
            message = record.getMessage()
        except Exception:
            return True
        masked = self.mask(message)
        if masked != message:
            record.msg, record.args = masked, ()
        return True


MASKER = MaskInFlight()
for _name in _MASKED_LOGGERS:
    logging.getLogger(_name).addFilter(MASKER)


def _message(notification: dict) -> tuple[str, str]:
    """``(title, body)`` as services show them."""
    title = " ".join(f"[{str(notification['severity']).upper()}] {notification['title']}".split())
    body = notification.get("body") or notification["title"]
    return title, f"{body}\n\n{notification['source']} \u00b7 notification {notification['id']}"


class AppriseAdapter:
    """One ``apprise.Apprise`` per URL and send (plugins keep throttling state; a fresh one has
    none), synchronous, Apprise's retries off. See the module doc."""

    def send(self, notification: dict, target: ChannelTarget, context: AttemptContext) -> DeliveryResult:
        """Send to every URL of ``target.secret`` not yet delivered, one provider attempt each
        (``context.provider`` checks the lease before each and records each; without it, as
        outside dispatch, every URL is sent). Returns the channel's aggregate result:
        ``metadata`` ``{"urls", "succeeded", "skipped"}``. Never raises for a provider failure."""
        urls = parse_urls(target.secret)
        if not urls:
            return DeliveryResult(False, retryable=False, error="apprise channel has no URLs in its secret")
        provider = context.provider
        done = provider.succeeded_before() if provider is not None else set()
        title, body = _message(notification)
        notify_type = NOTIFY_TYPES.get(notification.get("severity"), "info")
        timeout = float(target.config.get("timeout") or settings.UNS_WEBHOOK_TIMEOUT)
        results, skipped = [], 0
        for i, url in enumerate(urls, 1):
            key = provider_key(url)
            if key in done:
                skipped += 1
                continue
            if provider is not None and not provider.begin():
                return DeliveryResult(False, retryable=True,
                                      error=f"lease lost before Apprise URL #{i} of {len(urls)}",
                                      metadata={"urls": len(urls), "skipped": skipped})
            result = self.notify_one(url, title, body, notify_type, timeout)
            result = replace(result, metadata={"provider_attempt": i, "provider_attempts": len(urls),
                                               "provider_key": key, **result.metadata})
            if provider is not None:
                provider.observed(result)
            results.append(result)
        failed = [r for r in results if not r.success]
        meta = {"urls": len(urls), "succeeded": len(results) - len(failed), "skipped": skipped}
        answer = "; ".join(f"#{r.metadata['provider_attempt']} {r.metadata.get('service', '?')}: "
                           f"{r.metadata.get('apprise_status') or ('sent' if r.success else r.error)}" for r in results)
        if not failed:
            return DeliveryResult(True, metadata=meta, answer=f"Apprise: {answer}")
        return DeliveryResult(False, retryable=any(r.retryable for r in failed), metadata=meta, answer=f"Apprise: {answer}",
                              error=f"{len(failed)} of {len(urls)} Apprise URL(s) failed: " + "; ".join(
                                  f"#{r.metadata['provider_attempt']} {r.error}" for r in failed))

    def notify_one(self, url: str, title: str, body: str, notify_type, timeout: float) -> DeliveryResult:
        """Send to one Apprise URL, once (no Apprise retry). ``timeout``: seconds for the
        connect and for each read. Never raises; the result names no part of the URL."""
        apprise, asset = _lib(), _asset()
        with MASKER.sending(url):
            plugin = apprise.Apprise.instantiate(url, asset=asset, suppress_exceptions=True)
            if plugin is None:
                return DeliveryResult(False, retryable=False, error="not a URL Apprise can send to")
            service = str(getattr(plugin, "service_name", None) or type(plugin).__name__)
            plugin.retry, plugin.wait, plugin.optional = 0, 0.0, False
            plugin.socket_connect_timeout = plugin.socket_read_timeout = timeout
            sender = apprise.Apprise(asset=asset)
            sender.add(plugin)
            try:
                outcome = sender.notify(body=body, title=title, notify_type=notify_type,
                                        body_format=apprise.NotifyFormat.TEXT)
            except Exception as exc:  # a plugin bug: the provider may or may not have been reached
                return DeliveryResult(False, retryable=True, error=f"{service}: Apprise raised {type(exc).__name__}",
                                      metadata={"service": service})
            status = outcome.results[0].status.name if outcome.results else outcome.status.name
            meta = {"service": service, "apprise_status": status}
            if outcome:
                return DeliveryResult(True, metadata=meta)
            problems = [e.message for r in outcome.results for a in r.attempts for e in a.logs
                        if e.level in ("WARNING", "ERROR", "CRITICAL")]
            detail = MASKER.mask(" ".join(problems[-1].split())) if problems else status
            code = _STATUS.search(detail)
            if code:
                meta["status_code"] = int(code.group(1))
            return DeliveryResult(False, retryable=True, error=f"{service}: {detail[:ERROR_MAX]}", metadata=meta)
