"""The webhook timeout bounds the whole POST (``notifications.adapters.http_deadline``), not each
read: a real receiver that trickles its answer a few bytes at a time, every gap well inside the
timeout, gets a timeout, on a new connection and on a pooled one; a prompt receiver on the same
adapter still gets through."""
import socket
import threading

import httpcore
import pytest

from notifications.adapters import http_deadline
from notifications.adapters.base import AttemptContext, ChannelTarget
from notifications.adapters.webhook import WebhookAdapter

ANSWER = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: keep-alive\r\n\r\nok"
PAD = b"X-Pad: " + b"." * 60 + b"\r\n"  # trickled inside the headers
GAP_SECONDS = 0.2     # between trickled bytes: far inside the 2 s per-read timeout
TIMEOUT_SECONDS = 2.0


class Receiver:
    """A real HTTP/1.1 server on 127.0.0.1: answers each request on a connection at once, or, for
    ``trickle`` requests, one header byte every ``GAP_SECONDS`` (about 14 s for the whole answer,
    seven times the timeout). Keeps connections alive."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.stopping = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while not self.stopping.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn):
        buf = b""
        with conn:
            try:
                while not self.stopping.is_set():
                    while b"\r\n\r\n" not in buf:
                        chunk = conn.recv(65536)
                        if not chunk:
                            return
                        buf += chunk
                    head, _, rest = buf.partition(b"\r\n\r\n")
                    length = int(next((line.split(b":")[1] for line in head.split(b"\r\n")
                                       if line.lower().startswith(b"content-length")), b"0"))
                    while len(rest) < length:
                        rest += conn.recv(65536)
                    buf = rest[length:]
                    if b"/trickle" in head.split(b"\r\n")[0]:
                        status, _, tail = ANSWER.partition(b"\r\n")
                        for i in range(len(PAD)):
                            conn.sendall((status + b"\r\n") if i == 0 else PAD[i:i + 1])
                            if self.stopping.wait(GAP_SECONDS):
                                return
                        conn.sendall(tail)
                    else:
                        conn.sendall(ANSWER)
            except OSError:
                return  # the client gave up and closed

    def url(self, path):
        return f"http://127.0.0.1:{self.port}{path}"

    def close(self):
        self.stopping.set()
        self.sock.close()


@pytest.fixture
def receiver():
    r = Receiver()
    yield r
    r.close()


def send(adapter, url):
    target = ChannelTarget("hook", "webhook", {"url": url, "timeout": TIMEOUT_SECONDS})
    return adapter.send({"id": "n1", "source": "s", "title": "t", "severity": "info"}, target, AttemptContext("n1", 1, 1, 1, "lease"))


def test_a_trickling_answer_times_out_on_new_and_pooled_connections(receiver):
    adapter = WebhookAdapter()
    assert send(adapter, receiver.url("/ok")).success  # opens a pooled keep-alive connection
    for _ in range(2):  # the pooled connection, then (after the failed one was dropped) a new one
        result = send(adapter, receiver.url("/trickle"))
        assert not result.success and result.retryable
        assert result.error.startswith(f"timeout after {TIMEOUT_SECONDS}s"), result.error
    assert send(adapter, receiver.url("/ok")).success


def test_a_deadline_already_past_refuses_before_sending():
    class Untouched(httpcore.NetworkStream):
        def read(self, max_bytes, timeout=None):
            raise AssertionError("read past the deadline")

        def write(self, buffer, timeout=None):
            raise AssertionError("written past the deadline")

    stream = http_deadline._DeadlineStream(Untouched())
    with http_deadline.deadline(-1.0):
        with pytest.raises(httpcore.ReadTimeout):
            stream.read(1, timeout=5.0)
        with pytest.raises(httpcore.WriteTimeout):
            stream.write(b"x", timeout=5.0)
    assert http_deadline._bounded(5.0, httpcore.ReadTimeout) == 5.0  # no deadline outside the block
    with http_deadline.deadline(60.0):
        assert 0 < http_deadline._bounded(None, httpcore.ReadTimeout) <= 60.0
        assert http_deadline._bounded(1.0, httpcore.ReadTimeout) == 1.0
