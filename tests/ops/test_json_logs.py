"""``UNS_LOG_FORMAT=json``: one JSON object per line with ``time`` (ISO-8601 UTC),
``level``, ``logger``, ``message``, and ``notification_id`` / ``lease_token`` where they apply;
secrets masked as in plain lines (``RedactSecrets`` runs before the formatter)."""
import io
import json
import logging
import os
import subprocess
import sys
from contextlib import contextmanager
from datetime import datetime

import pytest
from django.conf import settings
from django.utils.module_loading import import_string

from notifications.adapters.base import DeliveryResult
from notifications.models import Event

PASSWORD = "hunter2-pw"
SECRET_URL = f"https://ops:{PASSWORD}@hooks.example.com/x?token=tok-secret-9"


@contextmanager
def json_lines(logger_name: str):
    """Capture ``logger_name``'s records through a handler built as settings.LOGGING builds the
    root one with UNS_LOG_FORMAT=json (the configured formatter and filter); yields a callable
    returning the parsed lines."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(import_string(settings.LOGGING["formatters"]["json"]["()"])())
    handler.addFilter(import_string(settings.LOGGING["filters"]["redact_secrets"]["()"])())
    logger = logging.getLogger(logger_name)
    logger.addHandler(handler)
    try:
        yield lambda: [json.loads(line) for line in stream.getvalue().splitlines()], stream
    finally:
        logger.removeHandler(handler)


@pytest.mark.django_db
def test_an_adapter_failure_line_names_the_notification_and_its_lease(rt, webhook, channel):
    n = rt.accept("alice", {"source": "billing", "title": "disk full", "channels": ["ops-hook"]}).notification

    def boom(**_):
        raise RuntimeError(f"connect to {SECRET_URL} failed")

    webhook.script.append(boom)
    with json_lines("uns.dispatch") as (lines, stream):
        rt.dispatch()
    token = Event.objects.get(notification_id=n.id, kind="CHANNEL_ATTEMPT_STARTED").payload["lease_token"]
    [line] = [entry for entry in lines() if entry["message"].startswith("adapter webhook raised")]
    assert line["notification_id"] == n.id
    assert line["lease_token"] == token
    assert (line["level"], line["logger"]) == ("ERROR", "uns.dispatch")
    assert line["time"].endswith("Z") and datetime.fromisoformat(line["time"]).utcoffset().total_seconds() == 0
    assert "RuntimeError" in line["exc_info"]
    assert PASSWORD not in stream.getvalue() and "tok-secret-9" not in stream.getvalue()


def test_extras_and_tracebacks_are_masked_too():
    with json_lines("uns.test") as (lines, stream):
        log = logging.getLogger("uns.test")
        log.warning("posting to %s", SECRET_URL, extra={"target": SECRET_URL, "nested": {"u": [SECRET_URL]},
                                                          "color_message": "posting to \x1b[1m%s\x1b[0m"})
        try:
            raise ValueError(SECRET_URL)
        except ValueError:
            log.exception("failed")
    first, second = lines()
    assert list(first)[:4] == ["time", "level", "logger", "message"]
    assert first["message"] == "posting to https://***@hooks.example.com/x?token=***"
    assert first["target"] == first["message"].removeprefix("posting to ")
    assert "color_message" not in first  # uvicorn's coloured copy of the message
    assert PASSWORD not in stream.getvalue() and "tok-secret-9" not in stream.getvalue()
    assert "ValueError" in second["exc_info"]


def _manage(*args: str, **env) -> subprocess.CompletedProcess:
    environ = {**os.environ, "PYTHONUNBUFFERED": "1", **env}
    return subprocess.run([sys.executable, "manage.py", *args], cwd=settings.BASE_DIR, env=environ,
                          capture_output=True, text=True, timeout=60)


def test_a_real_process_writes_one_json_object_per_line():
    code = (
        "import logging\n"
        "from notifications.logformat import log_ids\n"
        "log = logging.getLogger('uns.dispatch')\n"
        f"log.warning('adapter webhook raised for n-1 at %s', {SECRET_URL!r}, extra=log_ids('n-1', 'lease-1'))\n"
        "logging.getLogger('httpx').info('HTTP Request: POST %s \"HTTP/1.1 200 OK\"', "
        f"{SECRET_URL!r})\n"
        "try:\n"
        f"    raise OSError({SECRET_URL!r})\n"
        "except OSError:\n"
        "    logging.getLogger('uns.worker').exception('pass failed')\n"
    )
    done = _manage("shell", "-c", code, UNS_LOG_FORMAT="json")
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stderr.splitlines() if line.strip()]
    assert [(entry["logger"], entry["level"]) for entry in lines] == [
        ("uns.dispatch", "WARNING"), ("httpx", "INFO"), ("uns.worker", "ERROR")]
    assert lines[0]["notification_id"] == "n-1" and lines[0]["lease_token"] == "lease-1"
    assert PASSWORD not in done.stderr and "tok-secret-9" not in done.stderr


def test_an_unknown_format_is_refused_at_start():
    done = _manage("check", UNS_LOG_FORMAT="xml")
    assert done.returncode != 0
    assert "UNS_LOG_FORMAT must be plain or json" in done.stderr
