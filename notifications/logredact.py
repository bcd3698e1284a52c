"""Keep API tokens out of logs.

Browsers open the WebSocket with ``?token=<token>`` (they cannot set headers on a WebSocket), and
uvicorn logs every handshake with its query string (``"WebSocket /ws/timeline/?token=..."``
[accepted]). ``RedactTokens`` rewrites any ``token=<value>`` in a record to ``token=[redacted]``;
settings attach it to the server loggers (``uvicorn.error``, ``uvicorn.access``, ``daphne``,
``django.request``, ``django.server``) and to the root handler.
"""
import logging
import re

TOKEN_IN_QUERY = re.compile(r"(\btoken=)[^&\s\"'#]+", re.IGNORECASE)
REDACTED = r"\1[redacted]"


def redact(text: str) -> str:
    return TOKEN_IN_QUERY.sub(REDACTED, text)


class RedactTokens(logging.Filter):
    """Rewrites the record's message in place when it carries a ``token=`` value; never drops it."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a broken format string is the logging call's problem, not ours
            return True
        if "token=" in message.lower():
            record.msg, record.args = redact(message), ()
        return True
