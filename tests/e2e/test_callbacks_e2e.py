"""Response callbacks by real processes: ``uns_serve`` without ``UNS_CALLBACK_URL``
(and without the embedded worker) takes the ACK over HTTP, and a ``runworker`` that has
``UNS_CALLBACK_URL`` / ``UNS_CALLBACK_SECRET`` sends the callback to a real local receiver:

- the web process enqueued it although it has no destination configured;
- every request is signed (Standard Webhooks, verified here independently with hmac), with
  ``webhook-id`` = the event id on every attempt;
- a ``429 Retry-After: 8`` puts the next attempt no earlier than 8 s after the answer (the
  outbox's own backoff would be 5 s);
- a 404 is permanent: one request, ``CALLBACK_FAILED`` (``permanent_failure``) on the timeline;
- a worker SIGKILLed while its callback request hangs, three times over: the attempt was counted
  before the I/O each time, ``callback_attempts`` never goes above 3, and the fourth worker
  gives up (``worker_lost``) without a fourth request.
"""
import base64
import hashlib
import hmac
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

import pytest

from .stack import LOG_SWEEP, Stack, wait_for
from .workerkit import Rows, SlowReceiver

pytestmark = pytest.mark.e2e

CHANNEL = "ack-hook"
CALLBACK_SECRET = "whsec_" + base64.b64encode(b"e2e-callback-signing-key").decode()
PRINCIPALS = {"e2e-producer": "producer", "e2e-responder": "responder", "e2e-operator": "operator"}
HANG = "hang"
DEADLINE = 60.0


class CallbackReceiver:
    """Answers the ``n``-th POST with ``script[n]`` (``(status, headers)``, or ``HANG``: hold
    the request until ``close()``), then 200. ``seen()``: per POST ``headers``, ``raw``,
    ``json``, ``arrived`` and ``answered`` (``time.time()``, just before the answer)."""

    def __init__(self, script):
        self.script = list(script)
        self.lock = threading.Lock()
        self.closing = threading.Event()
        self.requests: list[dict] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                arrived = time.time()
                raw = self.rfile.read(int(self.headers.get("content-length", 0)))
                with receiver.lock:
                    n = len(receiver.requests)
                    seen = {"headers": {k.lower(): v for k, v in self.headers.items()}, "raw": raw,
                            "json": json.loads(raw), "arrived": arrived, "path": self.path}
                    receiver.requests.append(seen)
                step = receiver.script[n] if n < len(receiver.script) else (200, {})
                if step == HANG:
                    receiver.closing.wait()
                    return
                status, headers = step
                seen["answered"] = time.time()
                try:
                    self.send_response(status)
                    for name, value in {**headers, "content-length": "0"}.items():
                        self.send_header(name, value)
                    self.end_headers()
                except OSError:
                    pass

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/uns-callback"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def seen(self) -> list[dict]:
        with self.lock:
            return [dict(r) for r in self.requests]

    def close(self) -> None:
        self.closing.set()
        self.server.shutdown()
        self.server.server_close()


def verified(seen: dict) -> bool:
    """The Standard Webhooks v1 check a receiver makes: HMAC-SHA256 over ``id.timestamp.body``
    keyed with the base64-decoded ``whsec_`` secret."""
    h = seen["headers"]
    key = base64.b64decode(CALLBACK_SECRET.removeprefix("whsec_"))
    mac = hmac.new(key, f"{h['webhook-id']}.{h['webhook-timestamp']}.".encode() + seen["raw"], hashlib.sha256)
    expected = "v1," + base64.b64encode(mac.digest()).decode()
    return any(hmac.compare_digest(expected, sig) for sig in h["webhook-signature"].split())


@pytest.fixture
def channel_receiver():
    r = SlowReceiver()
    yield r
    r.close()


def make_stack(tmp_path, channel_receiver, callback_receiver):
    s = Stack(tmp_path, channel_receiver.url, secret="whsec_" + base64.b64encode(b"e2e-channel-key").decode())
    LOG_SWEEP.add_channel(callback_receiver.url, CALLBACK_SECRET)
    s.prepare(PRINCIPALS, CHANNEL)
    s.serve(UNS_EMBEDDED_WORKER="false")  # no UNS_CALLBACK_URL here: the web process only enqueues
    return s


def worker(stack, name, callback_url, **env):
    """A started ``runworker`` with the callback destination, once its loops run."""
    proc = stack.start(name, "runworker", UNS_CALLBACK_URL=callback_url, UNS_CALLBACK_SECRET=CALLBACK_SECRET, **env)
    wait_for(lambda: "uns worker running" in proc.output() or not proc.running(), f"{name} to start", timeout=DEADLINE)
    assert proc.running(), proc.output()[-3000:]
    return proc


def delivered_awaiting_ack(stack, title: str) -> str:
    with stack.client("e2e-producer") as client:
        answer = client.post("/api/v1/notifications", json={"source": "e2e-cb", "title": title,
                                                            "channels": [CHANNEL], "require_ack": True})
    assert answer.status_code == 202, answer.text
    nid = answer.json()["id"]
    stack.wait_state(nid, "awaiting ack", lambda d: d["ack_status"] == "PENDING", "e2e-operator")
    return nid


def respond(stack, nid: str, verb: str) -> None:
    with stack.client("e2e-responder") as client:
        answer = client.post(f"/api/v1/notifications/{nid}/{verb}", json={})
    assert answer.status_code == 200, answer.text


def outbox_row(rows: Rows, nid: str, kind: str) -> dict:
    [(eid, pending, attempts, error)] = rows._query(
        "SELECT id, callback_pending, callback_attempts, callback_error FROM uns_events "
        "WHERE notification_id = %s AND kind = %s", (nid, kind))
    return {"id": eid, "pending": bool(pending), "attempts": attempts, "error": error}


def gave_up(rows: Rows, nid: str) -> list[dict]:
    found = rows._query("SELECT payload FROM uns_events WHERE notification_id = %s AND kind = %s",
                        (nid, "CALLBACK_FAILED"))
    return [p if isinstance(p, dict) else json.loads(p) for (p,) in found]


def test_signed_callbacks_honour_retry_after_and_a_4xx_gives_up_at_once(tmp_path, channel_receiver):
    callbacks = CallbackReceiver([(404, {}), (429, {"Retry-After": "8"})])
    stack = make_stack(tmp_path, channel_receiver, callbacks)
    try:
        worker(stack, "runworker", callbacks.url)
        rows = Rows(stack.database_url)

        # 1. DISMISSED -> 404: permanent, one request, CALLBACK_FAILED
        refused = delivered_awaiting_ack(stack, "refused callback")
        respond(stack, refused, "dismiss")
        wait_for(lambda: gave_up(rows, refused), "CALLBACK_FAILED", timeout=DEADLINE)
        [failed] = gave_up(rows, refused)
        event = outbox_row(rows, refused, "DISMISSED")
        answer = f"HTTP 404 from {urlsplit(callbacks.url).netloc}"  # the one webhook sender's error text
        assert failed == {"event_id": event["id"], "event_kind": "DISMISSED", "attempts": 1,
                          "reason": "permanent_failure", "error": answer, "status_code": 404}
        assert (event["pending"], event["attempts"], event["error"]) == (False, 1, answer)
        [first] = callbacks.seen()
        assert verified(first) and first["json"]["kind"] == "DISMISSED"

        # 2. ACKED -> 429 Retry-After: 8, then 200
        acked = delivered_awaiting_ack(stack, "rate limited callback")
        respond(stack, acked, "ack")
        wait_for(lambda: not outbox_row(rows, acked, "ACKED")["pending"], "the ACKED callback", timeout=DEADLINE)
        event = outbox_row(rows, acked, "ACKED")
        assert (event["attempts"], event["error"]) == (2, None) and not gave_up(rows, acked)
        _, limited, ok = callbacks.seen()
        assert ok["arrived"] >= limited["answered"] + 8.0  # no earlier than asked (the backoff is 5 s)
        for seen in (limited, ok):
            assert verified(seen)
            assert seen["headers"]["webhook-id"] == event["id"]  # the same on every attempt
            assert seen["headers"]["user-agent"] == "UNS-callback/1"
            assert seen["json"]["kind"] == "ACKED" and seen["json"]["notification"]["id"] == acked
            assert seen["json"]["notification"]["actor"] == "e2e-responder"
    finally:
        stack.close()
        callbacks.close()


def test_a_worker_killed_mid_callback_never_makes_more_than_three_attempts(tmp_path, channel_receiver):
    callbacks = CallbackReceiver([HANG, HANG, HANG])
    stack = make_stack(tmp_path, channel_receiver, callbacks)
    rows = Rows(stack.database_url)
    # the callback lease is the dispatch lease: 3 s here, below the 30 s the hung request may take
    fast = {"UNS_LEASE_SECONDS": "3", "UNS_WEBHOOK_TIMEOUT": "30"}
    try:
        first = worker(stack, "runworker-1", callbacks.url, **fast)
        nid = delivered_awaiting_ack(stack, "hung callback")
        respond(stack, nid, "ack")
        proc = first
        for n in (1, 2, 3):
            wait_for(lambda: len(callbacks.seen()) >= n, f"callback request {n}", timeout=DEADLINE)
            # the claim committed the attempt before the request left
            assert outbox_row(rows, nid, "ACKED")["attempts"] == n
            proc.popen.kill()  # SIGKILL: nothing after the request runs
            proc.popen.wait(DEADLINE)
            proc = worker(stack, f"runworker-{n + 1}", callbacks.url, **fast)
        wait_for(lambda: gave_up(rows, nid), "CALLBACK_FAILED after the third lost attempt", timeout=DEADLINE)
        [failed] = gave_up(rows, nid)
        assert failed["reason"] == "worker_lost" and failed["attempts"] == 3
        event = outbox_row(rows, nid, "ACKED")
        assert (event["pending"], event["attempts"]) == (False, 3)
        assert len(callbacks.seen()) == 3
        assert all(verified(s) and s["headers"]["webhook-id"] == event["id"] for s in callbacks.seen())
    finally:
        stack.close()
        callbacks.close()
