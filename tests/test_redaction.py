"""``notifications.redaction``: the one masking of secrets in text, and the logging filter that
applies it to every log line. Browser WebSocket ``?token=`` values, channel URL
passwords and secret-named query parameters never reach a log line."""
import logging

import pytest

from notifications.redaction import MASK, RedactSecrets, mask_string

TOKEN = "6ef75b5772e5d6256cf081bee07b94aa82eb635c30f63ab67ea1397f16296312"
PASSWORD = "hunter2-pass"


@pytest.mark.parametrize("raw,expected", [
    (f'"WebSocket /ws/timeline/?token={TOKEN}" [accepted]', '"WebSocket /ws/timeline/?token=***" [accepted]'),
    (f"/ws/respond/?a=1&token={TOKEN}&b=2", "/ws/respond/?a=1&token=***&b=2"),
    (f"/x?TOKEN={TOKEN}", "/x?TOKEN=***"),
    (f"token={TOKEN}", "token=***"),
    (f"http://user:{PASSWORD}@127.0.0.1:9/hook", "http://***@127.0.0.1:9/hook"),
    ("https://u:p@ss@h.example/x", "https://***@h.example/x"),  # an unencoded @ in the password
    ("http://h/x?Api_Key=k1&X-Amz-Signature=s2&sig=s3&Access_Token=t4&refresh_token=t5&ok=1",
     "http://h/x?Api_Key=***&X-Amz-Signature=***&sig=***&Access_Token=***&refresh_token=***&ok=1"),
    ("?key=a&secret=b&password=c&auth=d&client_secret=e&x-api-key=f",
     "?key=***&secret=***&password=***&auth=***&client_secret=***&x-api-key=***"),
    ("Authorization: Bearer abcdefgh12345", "Authorization: Bearer ***"),
    # a secret-named parameter holding a scheme and its credential (trial finding: the credential leaked)
    ("auth=Basic aG9va3VzZXI6aG9va3Bhc3M=", "auth=*** ***"),
    ("authorization=Bearer abcdefgh12345&x=1", "authorization=*** ***&x=1"),
    # names that merely contain a secret word stay readable
    ("?idempotency_key=abc&monkey=1&sigma=2&zip_code=3", "?idempotency_key=abc&monkey=1&sigma=2&zip_code=3"),
    ("mail bob@example.com about http://example.com/x", "mail bob@example.com about http://example.com/x"),
    ("plain words", "plain words"),
])
def test_mask_string(raw, expected):
    assert mask_string(raw) == expected


def test_mask_string_masks_known_secrets_verbatim():
    assert mask_string("signed with whsec_abc123", frozenset({"whsec_abc123"})) == f"signed with {MASK}"


def _record(msg, *args, exc_info=None, name="httpx"):
    return logging.LogRecord(name, logging.INFO, __file__, 1, msg, args or None, exc_info)


def test_the_filter_masks_the_httpx_request_line_and_keeps_the_rest():
    import httpx

    url = httpx.URL(f"http://user:{PASSWORD}@127.0.0.1:9/hook?token={TOKEN}&x=1")
    record = _record('HTTP Request: %s %s "%s %d %s"', "POST", url, "HTTP/1.1", 429, "Too Many Requests")
    assert RedactSecrets().filter(record) is True
    line = record.getMessage()
    assert PASSWORD not in line and TOKEN not in line
    assert line == 'HTTP Request: POST http://***@127.0.0.1:9/hook?token=***&x=1 "HTTP/1.1 429 Too Many Requests"'


def test_the_filter_keeps_arguments_that_formatters_read():
    """uvicorn's access formatter unpacks ``record.args``: they stay a tuple, masked one by one."""
    record = _record('%s - "%s %s HTTP/%s" %d', "127.0.0.1:5", "GET", f"/ui/x?token={TOKEN}", "1.1", 200)
    RedactSecrets().filter(record)
    assert record.args == ("127.0.0.1:5", "GET", "/ui/x?token=***", "1.1", 200)


def test_the_filter_masks_a_secret_split_across_arguments_and_exception_text():
    record = _record("%s%s", "http://user:", f"{PASSWORD}@host/")
    RedactSecrets().filter(record)
    assert PASSWORD not in record.getMessage()
    try:
        raise ValueError(f"cannot reach http://user:{PASSWORD}@host/?token={TOKEN}")
    except ValueError:
        import sys

        record = _record("delivery failed", exc_info=sys.exc_info())
    RedactSecrets().filter(record)
    text = logging.Formatter().format(record)
    assert "ValueError" in text and PASSWORD not in text and TOKEN not in text


def test_settings_attach_the_filter_to_the_server_loggers_and_httpx(caplog):
    for name in ("uvicorn.error", "uvicorn.access", "daphne", "django.request", "django.server", "httpx"):
        assert any(isinstance(f, RedactSecrets) for f in logging.getLogger(name).filters), name
    logger = logging.getLogger("uvicorn.error")
    with caplog.at_level(logging.INFO, logger="uvicorn.error"):
        logger.info('%s - "WebSocket %s" [accepted]', "127.0.0.1:5", f"/ws/timeline/?token={TOKEN}")
    assert TOKEN not in caplog.text and "token=***" in caplog.text


def test_root_handler_redacts_every_logger():
    handler_filters = [f for h in logging.getLogger().handlers for f in h.filters]
    assert any(isinstance(f, RedactSecrets) for f in handler_filters)


def test_a_secret_holding_another_is_masked_whole():
    """Known secrets are replaced longest first: the shorter one inside it leaves no tail."""
    from notifications.redaction import mask_string

    for secrets in (frozenset({"abcdef", "abcdefgh"}), frozenset({"abcdefgh", "abcdef"})):
        assert mask_string("x abcdefgh y abcdef", secrets) == "x *** y ***"
