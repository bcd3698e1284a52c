"""Tokens passed as ``?token=`` (browser WebSockets) never reach a log line."""
import logging

from notifications.logredact import RedactTokens, redact

TOKEN = "6ef75b5772e5d6256cf081bee07b94aa82eb635c30f63ab67ea1397f16296312"


def test_redact_rewrites_every_token_value():
    assert redact(f'"WebSocket /ws/timeline/?token={TOKEN}" [accepted]') == \
        '"WebSocket /ws/timeline/?token=[redacted]" [accepted]'
    assert redact(f"/ws/respond/?a=1&token={TOKEN}&b=2") == "/ws/respond/?a=1&token=[redacted]&b=2"
    assert redact(f"/x?TOKEN={TOKEN}") == "/x?TOKEN=[redacted]"
    assert redact("no secrets here") == "no secrets here"


def test_the_filter_rewrites_formatted_records_on_the_server_loggers(caplog):
    logger = logging.getLogger("uvicorn.error")
    assert any(isinstance(f, RedactTokens) for f in logger.filters), "settings.LOGGING attaches the filter"
    with caplog.at_level(logging.INFO, logger="uvicorn.error"):
        logger.info('%s - "WebSocket %s" [accepted]', "127.0.0.1:5", f"/ws/timeline/?token={TOKEN}")
    assert TOKEN not in caplog.text and "token=[redacted]" in caplog.text


def test_root_handler_redacts_too():
    handler_filters = [f for h in logging.getLogger().handlers for f in h.filters]
    assert any(isinstance(f, RedactTokens) for f in handler_filters)
