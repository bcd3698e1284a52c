"""Webhook channel: HTTP POST of the notification as JSON, with httpx.

Classification: 2xx success; 408, 429, 5xx, timeouts and transport errors retryable; every other
status (3xx, 4xx) permanent. With a channel ``secret`` the request is signed per the Standard
Webhooks scheme: ``webhook-id``, ``webhook-timestamp`` (epoch seconds) and ``webhook-signature:
v1,<base64 HMAC-SHA256 of "{id}.{timestamp}.{body}">``.
"""
import base64
import hashlib
import hmac
import threading
import time

import httpx
from django.conf import settings

from ..runtime.keys import canonical_json
from .base import AttemptContext, ChannelTarget, DeliveryResult

RETRYABLE_STATUS = frozenset({408, 429})


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


def signing_key(secret: str) -> bytes:
    """The HMAC key of a channel secret. A Standard Webhooks secret ``whsec_<base64>`` keys with
    its base64-decoded bytes, as that spec's verifiers expect; any other secret with its UTF-8
    bytes."""
    if secret.startswith("whsec_"):
        try:
            return base64.b64decode(secret[len("whsec_"):], validate=True)
        except ValueError:
            pass
    return secret.encode("utf-8")


def sign(secret: str, message_id: str, timestamp: int, body: bytes) -> str:
    """Standard Webhooks ``v1`` signature: base64 HMAC-SHA256 of ``{id}.{timestamp}.{body}``
    keyed with ``signing_key(secret)``."""
    mac = hmac.new(signing_key(secret), f"{message_id}.{timestamp}.".encode() + body, hashlib.sha256)
    return "v1," + base64.b64encode(mac.digest()).decode("ascii")


class WebhookAdapter:
    """POSTs to ``target.config['url']`` with a timeout (``config['timeout']`` seconds, else
    ``UNS_WEBHOOK_TIMEOUT``). ``transport`` lets tests inject an httpx transport."""

    def __init__(self, transport: httpx.BaseTransport | None = None):
        self._transport = transport
        self._client: httpx.Client | None = None
        self._lock = threading.Lock()

    def _http(self) -> httpx.Client:
        """One pooled client per adapter, shared by the dispatch threads (httpx.Client is
        thread-safe). Building a client per send loads the CA bundle each time: ~100 ms a POST
        against ~3 ms reused (bench/README.md)."""
        with self._lock:
            if self._client is None:
                self._client = httpx.Client(transport=self._transport, follow_redirects=False,
                                            limits=httpx.Limits(max_connections=32, max_keepalive_connections=16))
            return self._client

    def send(self, notification: dict, target: ChannelTarget, context: AttemptContext) -> DeliveryResult:
        url = target.config.get("url")
        if not url:
            return DeliveryResult(False, retryable=False, error="channel has no url configured")
        body = canonical_json(payload(notification, context))
        message_id = f"{context.notification_id}:{context.cycle}"
        headers = {
            "content-type": "application/json",
            "user-agent": "UNS-webhook/1",
            "idempotency-key": message_id,
            "webhook-id": message_id,
        }
        if target.secret:
            ts = int(time.time())
            headers["webhook-timestamp"] = str(ts)
            headers["webhook-signature"] = sign(target.secret, message_id, ts, body)
        timeout = float(target.config.get("timeout") or settings.UNS_WEBHOOK_TIMEOUT)
        try:
            response = self._http().post(url, content=body, headers=headers, timeout=timeout)
        except httpx.TimeoutException as exc:
            return DeliveryResult(False, retryable=True, error=f"timeout after {timeout}s: {type(exc).__name__}")
        except httpx.HTTPError as exc:
            return DeliveryResult(False, retryable=True, error=f"transport error: {type(exc).__name__}: {exc}")
        code = response.status_code
        meta = {"status_code": code}
        if 200 <= code < 300:
            return DeliveryResult(True, message_id=response.headers.get("x-request-id") or message_id, metadata=meta)
        retryable = code in RETRYABLE_STATUS or code >= 500
        return DeliveryResult(False, retryable=retryable, error=f"HTTP {code}", metadata=meta)
