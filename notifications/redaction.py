"""The one secret masking of text, for log lines and ``/ui`` alike.

``mask_string`` masks, inside any text:

1. URL userinfo: ``https://user:pw@host`` becomes ``https://***@host``;
2. values of secret-named parameters (``?token=``, ``&sig=``, ``api_key=``, ``X-Amz-Signature=``,
   ``client_secret=`` ...; the name is matched case-insensitively, see ``_SECRET_PARAM``);
3. ``Bearer`` / ``Token`` / ``Basic`` credentials;
4. any of the caller's known secrets, verbatim.

``RedactSecrets`` is the logging filter settings attach to the root handler and to the loggers
that have handlers of their own (uvicorn, daphne, django.server ...), so no log line carries a
channel URL's password, a webhook's ``?token=`` or a browser's WebSocket ``?token=``.
``console.redaction`` builds the ``/ui`` redaction of JSON bodies on ``mask_string``.
"""
import functools
import logging
import re

MASK = "***"

_USERINFO = re.compile(r"(?P<scheme>\b[a-zA-Z][a-zA-Z0-9+.-]*://)(?P<userinfo>[^/?#@\s'\"<>]+(?:@[^/?#@\s'\"<>]+)*)@")
# A parameter name not preceded by a name character: ``?token=``, ``&Sig=``, `` token=`` at the start
# of a word. Names ending in a secret word after a separator count too (``x-api-key``,
# ``refresh_token``, ``X-Amz-Signature``); the short generic ones (key, sig, auth, code) only
# alone, so ``idempotency_key=`` or ``zip_code=`` stay readable.
_SECRET_PARAM = re.compile(
    r"(?P<name>(?<![\w.-])(?:(?:[a-z0-9]+[_.-])*(?:token|secret|password|passwd|signature|api[_-]?key|access[_-]?key|"
    r"private[_-]?key|credentials?)|key|sig|auth|pwd|code|authorization|session)=)(?P<value>[^&#;,\s'\"<>]+)",
    re.IGNORECASE,
)
_BEARER = re.compile(r"\b(?P<scheme>Bearer|Token|Basic)\s+(?P<value>[A-Za-z0-9._~+/=-]{8,})")


def mask_string(text: str, secrets: frozenset[str] = frozenset()) -> str:
    """``text`` with URL userinfo, secret-named parameter values, ``Bearer``/``Token``/``Basic``
    credentials and every string of ``secrets`` replaced by ``MASK``. Pure; never raises for a
    ``str``. Example: ``mask_string("POST http://u:pw@h/x?token=t&a=1")`` is
    ``"POST http://***@h/x?token=***&a=1"``."""
    # Each pattern runs only on text holding the literal it cannot match without ("://" and "@",
    # "=", the scheme word): the same result, and most strings of a /ui body (titles, ids,
    # states) skip all three (the console masks every string of every response).
    if "@" in text and "://" in text:
        text = _USERINFO.sub(lambda m: f"{m['scheme']}{MASK}@", text)
    # The scheme's credential first: a secret-named parameter holding one ("auth=Basic <creds>")
    # would otherwise mask only the scheme word and leave the credential (trial finding).
    if "Bearer" in text or "Token" in text or "Basic" in text:
        text = _BEARER.sub(lambda m: f"{m['scheme']} {MASK}", text)
    if "=" in text:
        text = _SECRET_PARAM.sub(lambda m: f"{m['name']}{MASK}", text)
    for secret in _longest_first(secrets):  # a longer secret holding a shorter one first
        if secret in text:
            text = text.replace(secret, MASK)
    return text


@functools.lru_cache(maxsize=8)
def _longest_first(secrets: frozenset[str]) -> tuple[str, ...]:
    return tuple(sorted(secrets, key=len, reverse=True))


def _masked_arg(arg):
    """A log argument with its secrets masked; numbers and None pass untouched (``%d`` needs
    them), any other object is replaced by its masked ``str`` only when masking changes it."""
    if arg is None or isinstance(arg, (bool, int, float)):
        return arg
    text = arg if isinstance(arg, str) else str(arg)
    masked = mask_string(text)
    return masked if masked != text or isinstance(arg, str) else arg


class RedactSecrets(logging.Filter):
    """Masks secrets (``mask_string``) in a record in place; never drops a record.

    The arguments are masked one by one, so formatters that read ``record.args`` (uvicorn's
    access log) keep working; if the formatted message still carries something to mask (a
    secret split across arguments) the message is replaced by its masked text with no
    arguments. Exception and stack text are formatted and masked here, before any handler's
    formatter sees them.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            if isinstance(record.msg, str):
                record.msg = mask_string(record.msg)
            if isinstance(record.args, dict):
                record.args = {k: _masked_arg(v) for k, v in record.args.items()}
            elif isinstance(record.args, tuple):
                record.args = tuple(_masked_arg(a) for a in record.args)
            message = record.getMessage()
            masked = mask_string(message)
            if masked != message:
                record.msg, record.args = masked, ()
        except Exception:  # a broken format string is the logging call's problem, not ours
            pass
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = mask_string(record.exc_text)
        if record.stack_info:
            record.stack_info = mask_string(record.stack_info)
        return True
