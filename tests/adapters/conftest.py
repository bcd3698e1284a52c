"""Fixtures of the channel adapter tests: the real provider servers of ``channel_servers``."""
import pytest

from channel_servers import start_http, start_smtp, stop_http


@pytest.fixture
def smtp_server():
    """A real SMTP server (aiosmtpd): ``.port``, ``.inbox`` (``channel_servers.Inbox``),
    ``.password`` accepted for AUTH as user ``uns``."""
    controller = start_smtp()
    try:
        yield controller
    finally:
        controller.stop()


@pytest.fixture
def http_receiver():
    """An HTTP server on a free 127.0.0.1 port: ``.port``, ``.receiver`` (``channel_servers.Receiver``)."""
    server = start_http()
    try:
        yield server
    finally:
        stop_http(server)
