"""Failure reasons that explain: a failed webhook attempt names the target host, the
HTTP status and the first bytes of the receiver's answer (masked), against real sockets; and
``failure_hints.hint`` is the one rule turning such errors into advice."""
import socket
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from notifications.adapters.base import AttemptContext, ChannelTarget
from notifications.adapters.webhook import ANSWER_EXCERPT_BYTES, WebhookAdapter
from notifications.failure_hints import hint

SECRET = "whsec-signing-s3cret-value"


class Answer(BaseHTTPRequestHandler):
    status = 400
    body = b""

    def do_POST(self):
        self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(self.status)
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, *args):
        pass


@pytest.fixture
def receiver():
    server = HTTPServer(("127.0.0.1", 0), Answer)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def send(url: str, secret: str | None = SECRET):
    target = ChannelTarget("hook", "webhook", {"url": url, "timeout": 5}, secret)
    return WebhookAdapter().send({"id": "n1", "source": "s", "title": "t", "severity": "info"}, target,
                                 AttemptContext("n1", 1, 1, 1, "lease"))


def test_a_4xx_names_host_status_and_the_answer_masked(receiver, monkeypatch):
    port = receiver.server_address[1]
    monkeypatch.setattr(Answer, "status", 422)
    monkeypatch.setattr(Answer, "body", (b'{"error": "field title\\n too long", "echo": "Bearer abcdefghijkl", "sig": "'
                                         + SECRET.encode() + b'"}'))
    result = send(f"http://user:pw@127.0.0.1:{port}/hook?token=t0p")
    assert (result.success, result.retryable) == (False, False)
    assert result.error.startswith(f"HTTP 422 from 127.0.0.1:{port}: ")
    assert '"error": "field title\\n too long"' in result.error
    assert SECRET not in result.error and "abcdefghijkl" not in result.error and "pw" not in result.error
    assert result.metadata["host"] == f"127.0.0.1:{port}" and result.metadata["status_code"] == 422
    assert SECRET not in result.metadata["answer_excerpt"]
    assert "permanent" in hint(result.error)


def test_a_long_answer_is_cut(receiver, monkeypatch):
    monkeypatch.setattr(Answer, "status", 503)
    monkeypatch.setattr(Answer, "body", b"x" * 5000)
    result = send(f"http://127.0.0.1:{receiver.server_address[1]}/hook")
    assert result.retryable and result.error.endswith("x" * ANSWER_EXCERPT_BYTES + " …")
    assert "HTTP 5xx" in hint(result.error)


def test_an_empty_answer_is_just_the_status(receiver, monkeypatch):
    monkeypatch.setattr(Answer, "status", 404)
    result = send(f"http://127.0.0.1:{receiver.server_address[1]}/hook")
    assert result.error == f"HTTP 404 from 127.0.0.1:{receiver.server_address[1]}"
    assert "URL path" in hint(result.error)


def test_connection_refused_names_the_host_and_hints_at_the_listener():
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    result = send(f"http://127.0.0.1:{port}/hook")
    assert result.retryable and f"to 127.0.0.1:{port}" in result.error
    assert "running and listening" in hint(result.error)


def test_a_connection_reset_by_the_receiver_hints_at_it():
    """Trial finding: a receiver resetting its connections left its dead letters without a hint."""
    import struct
    import threading

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    port = server.getsockname()[1]

    def reset_each():
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            conn.recv(65536)
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            conn.close()  # RST, no answer

    threading.Thread(target=reset_each, daemon=True).start()
    try:
        result = send(f"http://127.0.0.1:{port}/hook")
    finally:
        server.close()
    assert result.retryable and f"to 127.0.0.1:{port}" in result.error
    assert "closed the connection" in hint(result.error), result.error


@pytest.mark.parametrize("error,words", [
    ("hook: transport error to h:443: ConnectError: [SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed", "TLS"),
    ("hook: timeout after 5.0s: ReadTimeout (waiting for h:80)", "timeout"),
    ("hook: transport error to nowhere.invalid: ConnectError: [Errno -2] Name or service not known", "DNS"),
    ("hook: HTTP 401 from h", "credentials"),
    ("hook: HTTP 429 from h", "rate-limiting"),
    ("hook: HTTP 410 from h", "URL path"),
    ("a: HTTP 400 from h; b: HTTP 503 from g", "permanent"),
])
def test_hints_for_the_common_cases(error, words):
    assert words in hint(error)


@pytest.mark.parametrize("error", [None, "", "something nobody anticipated"])
def test_no_hint_without_a_known_cause(error):
    assert hint(error) is None
