"""Failure reasons that explain: the one rule turning a channel's error text into a hint an
operator can act on (connection refused or reset, DNS, TLS, timeout, HTTP 4xx permanent, 429, 5xx).

Adapters write the facts into the error (``adapters.webhook``: target host, HTTP status, the
first bytes of the receiver's answer, masked with ``redaction.mask_string``); ``hint`` reads them
back, so ``/ui`` (the DLQ list, a notification's detail) shows the same hint wherever it shows an
error. A hint is advice, never a state: nothing decides on it.
"""
import re

# (pattern over the error text, hint), first match wins: the most specific causes first.
_RULES: tuple[tuple[re.Pattern, str], ...] = tuple((re.compile(p, re.IGNORECASE), h) for p, h in (
    (r"connection refused|ConnectionRefused|Errno 111|ECONNREFUSED",
     "Nothing accepted the connection at the target host and port: is the receiver running and "
     "listening there (and not firewalled)? A replay before it is back fails the same way."),
    (r"connection reset|ECONNRESET|Errno 104|RemoteProtocolError|Server disconnected|peer closed connection",
     "The receiver (or something in front of it: a proxy, a load balancer) closed the connection "
     "before answering: check its logs for a crash or a request it refused; retried with "
     "backoff, and a replay once it is healthy."),
    (r"Name or service not known|getaddrinfo|nodename nor servname|Temporary failure in name resolution|NXDOMAIN",
     "The target host name did not resolve (DNS): check the channel's URL for a typo and this "
     "host's resolver."),
    (r"CERTIFICATE_VERIFY_FAILED|certificate|SSL|TLS|handshake",
     "The TLS handshake failed: the receiver's certificate may be expired, self-signed or for "
     "another host name, or it does not speak HTTPS on that port."),
    (r"timeout|timed out|ReadTimeout|ConnectTimeout",
     "The receiver did not answer within the channel's timeout: it may be overloaded or hanging; "
     "check its health, or raise the channel's timeout if it is just slow."),
    (r"\bHTTP 429\b",
     "The receiver is rate-limiting UNS (HTTP 429): its Retry-After was honoured; wait, or ask "
     "for a higher limit, before replaying many at once."),
    (r"\bHTTP (401|403)\b",
     "The receiver refused UNS's credentials (HTTP 401/403, permanent, not retried): check the "
     "channel's signing secret or the receiver's access rules, then replay."),
    (r"\bHTTP (404|410)\b",
     "The receiver has no such endpoint (HTTP 404/410, permanent, not retried): check the "
     "channel's URL path, then replay."),
    (r"\bHTTP 4\d\d\b",
     "The receiver rejected the request (HTTP 4xx, permanent, not retried): its answer above "
     "says why; fix the payload or the receiver, since a replay unchanged is refused again."),
    (r"\bHTTP 5\d\d\b",
     "The receiver failed while handling the request (HTTP 5xx, retried with backoff until the "
     "attempts ran out): check the receiver's own logs and replay once it is healthy."),
))


def hint(error: str | None) -> str | None:
    """The hint for a channel error (``DeliveryResult.error`` or an outcome's ``error_message``),
    or None when no rule matches or there is no error. Pure."""
    if not error:
        return None
    for pattern, text in _RULES:
        if pattern.search(error):
            return text
    return None
