"""Real provider servers for the channel tests, in-process on free 127.0.0.1 ports: an SMTP
server (aiosmtpd) and an HTTP receiver (``http.server`` in a thread). Both record what they
received and answer from a script, so a test can make a provider fail once and then accept.
Used by the fixtures of ``tests/adapters/conftest.py`` and by the end-to-end channel tests
(import as ``from channel_servers import ...``: ``tests/`` is on the path through its conftest)."""
import json
import socket
import threading
from collections import deque
from email import message_from_bytes, policy
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SMTP_USER = "uns"
SMTP_PASSWORD = "smtp-Pa55word-ZQ9"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Inbox:
    """aiosmtpd handler. ``data_replies``: replies to DATA consumed in order (then ``250``);
    every message is recorded, refused or not. ``rcpt_replies``: ``{address: reply}`` refusals."""

    def __init__(self):
        self.data_replies = deque()
        self.rcpt_replies = {}
        self.received = []  # (envelope rcpt_tos, parsed message, reply)
        self.logins = []

    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):
        reply = self.rcpt_replies.get(address)
        if reply:
            return reply
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server, session, envelope):
        reply = self.data_replies.popleft() if self.data_replies else "250 Message accepted for delivery"
        message = message_from_bytes(envelope.original_content or envelope.content, policy=policy.default)
        self.received.append((list(envelope.rcpt_tos), message, reply))
        return reply

    @property
    def delivered(self):
        return [(rcpts, m) for rcpts, m, reply in self.received if reply.startswith("250")]


def start_smtp():
    """A started aiosmtpd ``Controller`` (``.port``, ``.inbox``, ``.password``); AUTH (over
    plain TCP, as a local relay would allow) accepts ``SMTP_USER`` / ``SMTP_PASSWORD``. Stop it
    with ``.stop()``."""
    from aiosmtpd.controller import Controller
    from aiosmtpd.smtp import AuthResult

    inbox = Inbox()

    def authenticator(server, session, envelope, mechanism, auth_data):
        ok = auth_data.login == SMTP_USER.encode() and auth_data.password == SMTP_PASSWORD.encode()
        if ok:
            inbox.logins.append(auth_data.login.decode())
        return AuthResult(success=ok, handled=False)  # handled=False: aiosmtpd answers 535

    controller = Controller(inbox, hostname="127.0.0.1", port=free_port(), auth_require_tls=False,
                            authenticator=authenticator, decode_data=False)
    controller.start()
    controller.inbox, controller.password = inbox, SMTP_PASSWORD
    return controller


class Receiver:
    """What the HTTP receiver saw (``requests``: dicts of method, path, headers, json, status)
    and the statuses it answers with (``statuses``, consumed in order, then 200). ``hold``:
    ``{path: threading.Event}``, a POST to such a path is counted (``held_calls``, and a release
    of the ``held`` semaphore) and answered only once its event is set (at most ``HOLD_MAX``
    seconds): a receiver that is slow for as long as a test says, without a sleep."""

    HOLD_MAX = 30.0

    def __init__(self):
        self.requests = []
        self.statuses = deque()
        self.lock = threading.Lock()
        self.hold: dict[str, threading.Event] = {}
        self.held = threading.Semaphore(0)
        self.held_calls = 0


def start_http():
    """A started HTTP server on a free 127.0.0.1 port answering every POST: ``.port``,
    ``.receiver`` (a ``Receiver``). Stop it with ``stop_http(server)``."""
    receiver = Receiver()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("content-length") or 0))
            with receiver.lock:
                status = receiver.statuses.popleft() if receiver.statuses else 200
                try:
                    parsed = json.loads(body)
                except ValueError:
                    parsed = None
                receiver.requests.append({"method": "POST", "path": self.path, "headers": dict(self.headers),
                                          "json": parsed, "status": status})
                release = receiver.hold.get(self.path)
                if release is not None:
                    receiver.held_calls += 1
            if release is not None:
                receiver.held.release()
                release.wait(receiver.HOLD_MAX)
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.end_headers()
            self.wfile.write(b"{}")

        def log_message(self, *args):  # keep the test output quiet
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    server.receiver = receiver
    server.port = server.server_address[1]
    return server


def stop_http(server) -> None:
    server.shutdown()
    server.server_close()
