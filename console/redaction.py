"""Keep secrets out of ``/ui`` responses: no secret is ever present in a ``/ui`` response.

Three nets, applied to every successful ``/ui`` body by ``console.views.UIView``:

1. values under secret-looking keys (``secret``, ``password``, ``authorization``, ``api_key``,
   ``token`` ...) are replaced, wherever they sit in producer metadata or event payloads;
2. credentials inside strings are masked by ``notifications.redaction.mask_string``, the one
   masking the logs use too: URL userinfo (``https://user:pw@host``), secret-named parameters
   (``?token=...``, ``&sig=...``) and ``Bearer <token>`` words, so a provider error message that
   quotes a URL cannot leak it;
3. every configured channel secret (``uns_channels.secret``; for an apprise channel also each of
   its URLs) and the password of any channel URL is replaced verbatim wherever it appears.

``lease_token`` stays: it is the reference's fencing id (event catalog), grants nothing and is
what ties a CHANNEL_ATTEMPT_RESULT to its LEASE_LOST.
"""
import functools
from urllib.parse import unquote, urlsplit

from notifications.models import Channel
from notifications.redaction import MASK, mask_string
from oncall.models import ContactMethod

__all__ = ["MASK", "mask_string", "redact", "channel_secrets"]

# Keys whose values are never shown. Matched on the lower-cased key with "-" read as "_".
SECRET_KEYS = frozenset({
    "secret", "client_secret", "signing_secret", "webhook_secret", "password", "passwd", "pwd",
    "authorization", "auth", "api_key", "apikey", "access_token", "refresh_token", "id_token",
    "token", "auth_token", "bearer", "private_key", "credentials", "cookie", "set_cookie",
    "session", "sessionid", "signature", "webhook_signature", "routing_key", "integration_key",
})
# Names that merely look like a secret's and are not credentials: the reference's fencing id
# (support reference payloads), and a contact method's ``has_secret`` (a boolean: whether it has one).
ALLOWED_KEYS = frozenset({"lease_token", "has_secret"})


@functools.lru_cache(maxsize=4096)  # a body's keys are few and repeat on every item
def _is_secret_key(key) -> bool:
    if not isinstance(key, str):
        return False
    k = key.lower().replace("-", "_")
    if k in ALLOWED_KEYS:
        return False
    return k in SECRET_KEYS or k.endswith(("_secret", "_password", "_api_key", "_apikey"))


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
    """Every configured channel secret and channel-URL password, and the same of every person's
    contact method (``oncall.models.ContactMethod``: a channel kind's config and secret), two
    queries. Values shorter than 4 characters are left out: masking them would shred ordinary
    words."""
    found = set()

    def add_password(url):
        try:
            password = urlsplit(url).password
        except ValueError:
            password = None
        if password:
            found.update({password, unquote(password)})

    rows = [*Channel.objects.values_list("secret", "config"), *ContactMethod.objects.values_list("secret", "config")]
    for secret, config in rows:
        if secret:
            found.add(secret)
            # An apprise channel's secret is several URLs (space-separated): each is a secret on
            # its own, and so is the password in it.
            for part in secret.split():
                found.add(part)
                add_password(part)
        url = (config or {}).get("url") if isinstance(config, dict) else None
        if isinstance(url, str):
            add_password(url)
    return frozenset(s for s in found if len(s) >= 4)
