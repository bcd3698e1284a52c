"""Keep secrets out of ``/ui`` responses (issue 5: "no secret is ever present in a /ui response").

Three nets, applied to every successful ``/ui`` body by ``console.views.UIView``:

1. values under secret-looking keys (``secret``, ``password``, ``authorization``, ``api_key``,
   ``token`` ...) are replaced, wherever they sit in producer metadata or event payloads;
2. credentials inside strings are masked: URL userinfo (``https://user:pw@host``), sensitive
   query parameters (``?token=...``, ``&sig=...``) and ``Bearer <token>`` words, so a provider
   error message that quotes a URL cannot leak it;
3. every configured channel secret (``uns_channels.secret``) and the password of any channel URL
   is replaced verbatim wherever it appears.

``lease_token`` stays: it is the reference's fencing id (event catalog), grants nothing and is
what ties a CHANNEL_ATTEMPT_RESULT to its LEASE_LOST.
"""
import re
from urllib.parse import unquote, urlsplit

MASK = "***"

# Keys whose values are never shown. Matched on the lower-cased key with "-" read as "_".
SECRET_KEYS = frozenset({
    "secret", "client_secret", "signing_secret", "webhook_secret", "password", "passwd", "pwd",
    "authorization", "auth", "api_key", "apikey", "access_token", "refresh_token", "id_token",
    "token", "auth_token", "bearer", "private_key", "credentials", "cookie", "set_cookie",
    "session", "sessionid", "signature", "webhook_signature", "routing_key", "integration_key",
})
# Ids that merely end in "token" and are not credentials (support reference payloads).
ALLOWED_KEYS = frozenset({"lease_token"})

_USERINFO = re.compile(r"(?P<scheme>\b[a-zA-Z][a-zA-Z0-9+.-]*://)(?P<userinfo>[^/@\s'\"<>]+)@")
_QUERY_SECRET = re.compile(
    r"(?P<name>[?&;](?:access_token|token|auth|api_key|apikey|key|secret|sig|signature|password|"
    r"client_secret|code)=)(?P<value>[^&#\s'\"<>]+)",
    re.IGNORECASE,
)
_BEARER = re.compile(r"\b(?P<scheme>Bearer|Token|Basic)\s+(?P<value>[A-Za-z0-9._~+/=-]{8,})")


def _is_secret_key(key) -> bool:
    if not isinstance(key, str):
        return False
    k = key.lower().replace("-", "_")
    if k in ALLOWED_KEYS:
        return False
    return k in SECRET_KEYS or k.endswith(("_secret", "_password", "_api_key", "_apikey"))


def mask_string(text: str, secrets: frozenset[str] = frozenset()) -> str:
    """``text`` with URL credentials, secret query values, bearer words and known secrets masked."""
    text = _USERINFO.sub(lambda m: f"{m['scheme']}{MASK}@", text)
    text = _QUERY_SECRET.sub(lambda m: f"{m['name']}{MASK}", text)
    text = _BEARER.sub(lambda m: f"{m['scheme']} {MASK}", text)
    for secret in secrets:
        if secret in text:
            text = text.replace(secret, MASK)
    return text


def redact(value, secrets: frozenset[str] = frozenset()):
    """A copy of a JSON-like ``value`` with every secret masked (see the module docstring)."""
    if isinstance(value, dict):
        return {k: (MASK if _is_secret_key(k) and v not in (None, "", [], {}) else redact(v, secrets))
                for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact(v, secrets) for v in value]
    if isinstance(value, str):
        return mask_string(value, secrets)
    return value


def channel_secrets() -> frozenset[str]:
    """Every configured channel secret and channel-URL password (one query). Values shorter
    than 4 characters are left out: masking them would shred ordinary words."""
    from notifications.models import Channel

    found = set()
    for secret, config in Channel.objects.values_list("secret", "config"):
        if secret:
            found.add(secret)
        url = (config or {}).get("url") if isinstance(config, dict) else None
        if isinstance(url, str):
            try:
                password = urlsplit(url).password
            except ValueError:
                password = None
            if password:
                found.update({password, unquote(password)})
    return frozenset(s for s in found if len(s) >= 4)
