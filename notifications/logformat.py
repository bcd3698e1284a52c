"""Log line formats: ``UNS_LOG_FORMAT=plain`` (the default, ``time LEVEL logger
message``) or ``json``: one JSON object per line,

    {"time": "2026-12-01T21:40:00.123Z", "level": "ERROR", "logger": "uns.dispatch",
     "message": "adapter webhook raised for 0b9e...", "notification_id": "0b9e...",
     "lease_token": "5f1c...", "exc_info": "Traceback ..."}

``time`` is ISO-8601 in UTC with milliseconds; ``notification_id`` and ``lease_token`` appear when
the logging call passes them (``log_ids``, the one helper the runtime uses), as do other
``extra=`` members. Secrets: the ``RedactSecrets`` filter masks the message and exception text
before any formatter; this formatter masks again every string member it writes (extras such as
Django's ``request`` included, and the traceback, which python-json-logger formats afresh from
``exc_info`` rather than reusing the filter's masked text), so a URL password never reaches a
JSON line.
"""
from datetime import datetime, timezone

from pythonjsonlogger.core import RESERVED_ATTRS
from pythonjsonlogger.json import JsonFormatter

from .redaction import mask_string

def log_ids(notification_id: str, lease_token: str | None = None) -> dict:
    """The ``extra=`` of a log call about one notification (and the lease it is held under):
    ``{"notification_id": ..., "lease_token": ...}``, ``lease_token`` only when given. JSON lines
    carry them as members; plain lines are unchanged (the message names the id as before)."""
    ids = {"notification_id": notification_id}
    if lease_token is not None:
        ids["lease_token"] = lease_token
    return ids


def _plain(value):
    """A JSON-native value, secrets masked: strings masked, containers walked, anything else
    (a Django request, an exception) as its masked ``str``."""
    if value is None or isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, str):
        return mask_string(value)
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return mask_string(str(value))


class JSONFormatter(JsonFormatter):
    """python-json-logger's ``JsonFormatter`` with UNS's members and order: ``time``, ``level``,
    ``logger``, ``message``, then the record's extras (``notification_id``, ``lease_token``, ...)
    and ``exc_info`` / ``stack_info`` when present; every string masked (``mask_string``)."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("fmt", ["levelname", "name", "message"])
        kwargs.setdefault("style", "__sequence__")
        kwargs.setdefault("rename_fields", {"levelname": "level", "name": "logger"})
        kwargs.setdefault("json_ensure_ascii", False)
        # uvicorn's records carry the message again with terminal colours: not for a log store.
        kwargs.setdefault("reserved_attrs", [*RESERVED_ATTRS, "color_message"])
        super().__init__(*args, **kwargs)

    def add_fields(self, log_data, record, message_dict):
        log_data["time"] = (datetime.fromtimestamp(record.created, tz=timezone.utc)
                            .isoformat(timespec="milliseconds").replace("+00:00", "Z"))
        super().add_fields(log_data, record, message_dict)

    def process_log_record(self, log_data):
        return {key: _plain(value) for key, value in log_data.items()}
