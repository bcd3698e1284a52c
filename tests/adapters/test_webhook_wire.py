"""The webhook's wire (httpcore's connection pool, used directly) sends what httpx's client
sent: the same method, target, body and headers (``Host``, the URL's userinfo as
``Authorization: Basic``, the signature), against a real receiver; only httpx's own
``Accept-Encoding`` and ``Connection`` defaults are left out, so an answer is never compressed."""
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

from notifications.adapters.base import AttemptContext, ChannelTarget
from notifications.adapters.http_deadline import DeadlineTransport
from notifications.adapters.webhook import WebhookAdapter


class Capture(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    seen: list = []

    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        Capture.seen.append((self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, body))
        answer = b"slow down"
        self.send_response(429)
        self.send_header("Retry-After", "7")
        self.send_header("X-Request-Id", "r-1")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *args):
        pass


@pytest.fixture
def receiver():
    Capture.seen = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), Capture)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.shutdown()
    server.server_close()


def test_the_pool_sends_what_the_httpx_client_sent(receiver, monkeypatch):
    monkeypatch.setattr("time.time", lambda: 1_700_000_000.0)  # the signature's timestamp
    url = f"http://bot:pa%20ss@127.0.0.1:{receiver.server_address[1]}/hook/a b?x=1&y=é"
    target = ChannelTarget("hook", "webhook", {"url": url, "timeout": 5}, "whsec_c2VjcmV0")
    note = {"id": "n1", "source": "s", "title": "t", "severity": "info"}
    httpx_client = WebhookAdapter(transport=DeadlineTransport())
    results = [adapter.send(note, target, AttemptContext("n1", 1, 1, 1, "lease"))
               for adapter in (WebhookAdapter(), httpx_client)]
    assert results[0] == results[1]  # classified the same: 429, retryable, its Retry-After
    assert (results[0].retryable, results[0].retry_after, results[0].metadata["status_code"]) == (True, 7.0, 429)
    (method, path, pool, body), (method2, path2, client, body2) = Capture.seen
    assert (method, path, body) == (method2, path2, body2) and path == "/hook/a%20b?x=1&y=%C3%A9"
    for name in ("accept-encoding", "connection"):  # httpx's defaults
        client.pop(name, None)
        pool.pop(name, None)
    assert pool == client
    assert pool["authorization"] == "Basic Ym90OnBhIHNz"  # bot:pa ss
    assert pool["webhook-signature"].startswith("v1,") and pool["webhook-timestamp"] == "1700000000"


def test_a_success_takes_the_receivers_request_id(receiver, monkeypatch):
    monkeypatch.setattr(Capture, "do_POST", _ok)
    result = WebhookAdapter().post(f"http://127.0.0.1:{receiver.server_address[1]}/hook", b"{}", message_id="m:1")
    assert (result.success, result.message_id, result.answer) == (True, "r-2", "HTTP 200 fine")


def _ok(self):
    self.rfile.read(int(self.headers["Content-Length"]))
    self.send_response(200)
    self.send_header("x-request-id", "r-2")
    self.send_header("Content-Length", "4")
    self.end_headers()
    self.wfile.write(b"fine")


@pytest.mark.parametrize("url", ["http:///hook", "ftp://h/hook", "not a url", "http://127.0.0.1:1/hook"])
def test_bad_urls_fail_as_they_did_through_httpx(url):
    new = WebhookAdapter().post(url, b"{}", message_id="m:1", timeout=2)
    before = WebhookAdapter(transport=DeadlineTransport()).post(url, b"{}", message_id="m:1", timeout=2)
    assert (new.success, new.retryable, new.error) == (False, True, before.error)


def test_an_unparseable_url_raises_as_before():
    for adapter in (WebhookAdapter(), WebhookAdapter(transport=DeadlineTransport())):
        with pytest.raises(httpx.InvalidURL):
            adapter.post("http://[::1/hook", b"{}", message_id="m:1")


def _endless(self):
    """A 500 whose chunked body never ends (until the client hangs up)."""
    self.rfile.read(int(self.headers["Content-Length"]))
    self.send_response(500)
    self.send_header("Transfer-Encoding", "chunked")
    self.end_headers()
    chunk = b"x" * 65536
    try:
        while True:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
    except OSError:
        pass  # the client closed the connection: what this test wants


@pytest.mark.parametrize("adapter", [WebhookAdapter, lambda: WebhookAdapter(transport=DeadlineTransport())],
                         ids=["pool", "httpx"])
def test_an_endless_answer_is_cut_at_the_cap_not_read_to_the_deadline(receiver, monkeypatch, adapter):
    """Trial finding: the whole answer was read into memory (400 MB answers grew a server to 2.5
    GB). Only ``MAX_ANSWER_BYTES`` are read; the attempt fails on its status, not on its
    deadline, and its excerpt says the answer went on."""
    monkeypatch.setattr(Capture, "do_POST", _endless)
    target = ChannelTarget("hook", "webhook", {"url": f"http://127.0.0.1:{receiver.server_address[1]}/h",
                                               "timeout": 30}, None)
    result = adapter().send({"id": "n1", "source": "s", "title": "t", "severity": "info"}, target,
                            AttemptContext("n1", 1, 1, 1, "lease"))
    assert (result.success, result.metadata["status_code"]) == (False, 500)
    assert result.metadata["answer_excerpt"] == "x" * 200 + " …"


def _echo_key(self):
    self.rfile.read(int(self.headers["Content-Length"]))
    answer = b"bad signature, expected key raw=echo-secret-123"
    self.send_response(500)
    self.send_header("Content-Length", str(len(answer)))
    self.end_headers()
    self.wfile.write(answer)


def test_a_receiver_echoing_the_decoded_signing_key_shows_it_masked(receiver, monkeypatch):
    """Trial finding: the channel's ``whsec_`` secret was masked, its decoded key was not."""
    import base64

    monkeypatch.setattr(Capture, "do_POST", _echo_key)
    secret = "whsec_" + base64.b64encode(b"echo-secret-123").decode()
    target = ChannelTarget("hook", "webhook", {"url": f"http://127.0.0.1:{receiver.server_address[1]}/h"}, secret)
    result = WebhookAdapter().send({"id": "n1", "source": "s", "title": "t", "severity": "info"}, target,
                                   AttemptContext("n1", 1, 1, 1, "lease"))
    assert "echo-secret-123" not in result.metadata["answer_excerpt"]
    assert result.metadata["answer_excerpt"] == "bad signature, expected key raw=***"


def test_each_post_is_logged_as_httpx_logged_it_with_the_urls_secrets_masked(receiver, monkeypatch, caplog):
    monkeypatch.setattr(Capture, "do_POST", _ok)
    port = receiver.server_address[1]
    with caplog.at_level("INFO", logger="uns.webhook"):
        WebhookAdapter().post(f"http://u:pw-s3cret@127.0.0.1:{port}/hook?token=t0k3n&team=ops", b"{}", message_id="m:1")
    assert f'HTTP Request: POST http://***@127.0.0.1:{port}/hook?token=***&team=ops "HTTP/1.1 200 OK"' in caplog.text
    assert "s3cret" not in caplog.text and "t0k3n" not in caplog.text
