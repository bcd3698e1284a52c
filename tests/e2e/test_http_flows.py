"""End to end over real HTTP: ``manage.py uns_serve`` (uvicorn, embedded worker loops) on a
fresh database, a real webhook receiver (pytest-httpserver), tokens and the channel made by the
management commands, and ``httpx`` as the client. The scaled shape runs the server without its
worker and a separate ``manage.py runworker``. States are awaited with ``wait_for`` (bounded
deadline); nothing is asserted after a bare sleep. One database serves the module: the embedded
server's scenarios first, then the scaled shape on the same data.
"""
import base64
import hashlib
import hmac
import json
import threading
import time
import uuid

import pytest
from pytest_httpserver import HTTPServer
from werkzeug.datastructures import Headers
from werkzeug.wrappers import Response

from .stack import Stack

pytestmark = pytest.mark.e2e

SECRET = "e2e-signing-secret"
CHANNEL = "e2e-hook"
PRINCIPALS = {"e2e-producer": "producer", "e2e-responder": "responder", "e2e-operator": "operator"}
PROBLEM = "application/problem+json"


class Receiver:
    """The webhook receiver: records every delivery and answers ``status[source]`` (default 200)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.deliveries: list[dict] = []
        self.status: dict[str, int] = {}
        self.url = None

    def __call__(self, request):
        raw = request.get_data()
        body = json.loads(raw)
        with self.lock:
            self.deliveries.append({"headers": Headers(request.headers), "raw": raw, "json": body})
            status = self.status.get(body["source"], 200)
        return Response(json.dumps({"received": status < 300}), status=status, content_type="application/json")

    def for_id(self, nid: str) -> list[dict]:
        with self.lock:
            return [d for d in self.deliveries if d["json"]["id"] == nid]


@pytest.fixture(scope="module")
def receiver():
    server = HTTPServer(host="127.0.0.1", port=0, threaded=True)
    server.start()
    rec = Receiver()
    server.expect_request("/hook", method="POST").respond_with_handler(rec)
    rec.url = server.url_for("/hook")
    yield rec
    server.clear()
    server.stop()


@pytest.fixture(scope="module")
def stack(tmp_path_factory, receiver):
    """Embedded mode: one ``uns_serve`` process serving HTTP and running the worker loops."""
    s = Stack(tmp_path_factory.mktemp("embedded"), receiver.url, secret=SECRET)
    try:
        s.prepare(PRINCIPALS, CHANNEL)
        s.server = s.serve(UNS_EMBEDDED_WORKER="true")  # explicit: PostgreSQL defaults it off
    except BaseException:
        s.close()
        raise
    yield s
    codes = s.close()
    assert all(rc == 0 for rc in codes.values()), f"unclean exit {codes}\n{s.logs()}"


def submit(stack, principal="e2e-producer", headers=None, **fields) -> dict:
    body = {"source": "e2e", "title": "disk full", "channels": [CHANNEL], **fields}
    with stack.client(principal) as client:
        response = client.post("/api/v1/notifications", json=body, headers=headers or {})
    assert response.status_code == 202, response.text
    return response.json()


def detail(stack, nid, principal="e2e-operator") -> dict:
    return stack.detail(nid, principal)


def wait_state(stack, nid, what, predicate) -> dict:
    """Poll the notification's detail (as the operator) until ``predicate(detail)`` holds."""
    return stack.wait_state(nid, what, predicate, "e2e-operator")


def delivered(stack, nid) -> dict:
    return wait_state(stack, nid, "DELIVERED", lambda d: d["status"] == "DELIVERED")


def dead_lettered(stack, nid) -> dict:
    return wait_state(stack, nid, "dead-lettered", lambda d: d["status"] == "FAILED" and d["dead_letter"])


def signature(raw: bytes, headers) -> str:
    """The Standard Webhooks v1 signature the receiver expects for ``raw``."""
    message = f"{headers['webhook-id']}.{headers['webhook-timestamp']}.".encode() + raw
    return "v1," + base64.b64encode(hmac.new(SECRET.encode(), message, hashlib.sha256).digest()).decode()


def test_delivered_to_the_real_webhook_receiver(stack, receiver):
    sent = time.time()
    nid = submit(stack, source="e2e-ok", severity="warning", body="db-1 at 97%", metadata={"host": "db-1"})["id"]
    d = delivered(stack, nid)
    [delivery] = receiver.for_id(nid)
    body, headers, raw = delivery["json"], delivery["headers"], delivery["raw"]
    assert headers["content-type"] == "application/json"
    assert {k: body[k] for k in ("id", "source", "title", "body", "severity", "metadata", "attempt", "cycle")} == {
        "id": nid, "source": "e2e-ok", "title": "disk full", "body": "db-1 at 97%", "severity": "warning",
        "metadata": {"host": "db-1"}, "attempt": 1, "cycle": 1}
    assert headers["webhook-id"] == headers["idempotency-key"] == f"{nid}:1"
    assert abs(int(headers["webhook-timestamp"]) - sent) < 60
    assert hmac.compare_digest(headers["webhook-signature"], signature(raw, headers))
    assert SECRET.encode() not in raw
    assert d["outcome"]["channels_succeeded"] == [CHANNEL]
    assert [e["kind"] for e in d["timeline"]] == ["ACCEPTED", "ATTEMPT_STARTED", "CHANNEL_ATTEMPT_STARTED",
                                                 "CHANNEL_ATTEMPT_RESULT", "DELIVERY_RESULT"]
    assert d["delivered_at_iso"].endswith("Z") and abs(d["delivered_at"] - sent) < 60
    # The producer reads its own notification too.
    assert detail(stack, nid, "e2e-producer")["status"] == "DELIVERED"


def test_failing_receiver_is_retried_then_dead_lettered_then_replayed(stack, receiver):
    receiver.status["e2e-flaky"] = 503
    nid = submit(stack, source="e2e-flaky")["id"]
    d = dead_lettered(stack, nid)
    assert (d["attempts"], d["cycle"], d["cycle_attempts"]) == (3, 1, 3)  # the policy's max_attempts
    assert d["outcome"]["error_message"].startswith(f"{CHANNEL}: HTTP 503 from 127.0.0.1:")
    attempts = [x["json"] for x in receiver.for_id(nid)]
    assert [(a["attempt"], a["cycle"]) for a in attempts] == [(1, 1), (2, 1), (3, 1)]

    operator = stack.client("e2e-operator")
    items = {i["id"]: i for i in operator.get("/api/v1/dlq", params={"limit": 500}).json()["items"]}
    assert items[nid]["error_message"].startswith(f"{CHANNEL}: HTTP 503 from 127.0.0.1:")
    assert (items[nid]["cycle_attempts"], items[nid]["replay_blocked"]) == (3, False)

    receiver.status["e2e-flaky"] = 200  # the receiver is fixed
    response = operator.post(f"/api/v1/dlq/{nid}/replay")
    assert response.status_code == 200, response.text
    assert (response.json()["cycle"], response.json()["dead_letter"]) == (2, False)
    d = delivered(stack, nid)
    assert (d["attempts"], d["cycle"], d["cycle_attempts"]) == (4, 2, 1)
    last = receiver.for_id(nid)[-1]
    assert (last["json"]["attempt"], last["json"]["cycle"], last["headers"]["webhook-id"]) == (4, 2, f"{nid}:2")
    assert nid not in {i["id"] for i in operator.get("/api/v1/dlq", params={"limit": 500}).json()["items"]}
    replayed = [e for e in d["timeline"] if e["kind"] == "REPLAY_REQUESTED"]
    assert [e["payload"]["actor"] for e in replayed] == ["e2e-operator"]
    operator.close()


def test_a_4xx_receiver_answer_is_not_retried(stack, receiver):
    receiver.status["e2e-gone"] = 404
    nid = submit(stack, source="e2e-gone")["id"]
    d = dead_lettered(stack, nid)
    assert (d["attempts"], d["cycle_attempts"]) == (1, 1)
    assert d["outcome"]["error_message"].startswith(f"{CHANNEL}: HTTP 404 from 127.0.0.1:")
    assert len(receiver.for_id(nid)) == 1
    result = [e for e in d["timeline"] if e["kind"] == "CHANNEL_ATTEMPT_RESULT"]
    [meta] = [e["payload"]["metadata"] for e in result]
    assert (meta["status_code"], meta["retryable"], meta["host"]) == (404, False, receiver.url.split("/")[2])
    assert meta["answer_excerpt"] == '{"received": false}'  # the receiver's answer, first bytes


def test_ack_with_a_responder_token(stack, receiver):
    nid = submit(stack, source="e2e-ack", require_ack=True)["id"]
    wait_state(stack, nid, "awaiting ACK", lambda d: d["ack_status"] == "PENDING")
    with stack.client("e2e-producer") as producer:
        refused = producer.post(f"/api/v1/notifications/{nid}/ack", json={})
    assert refused.status_code == 403 and refused.headers["content-type"] == PROBLEM
    assert refused.json()["code"] == "permission_denied"
    with stack.client("e2e-responder") as responder:
        response = responder.post(f"/api/v1/notifications/{nid}/ack", json={"metadata": {"ticket": "INC-1"}})
        assert response.status_code == 200, response.text
        body = response.json()
        assert (body["ack_status"], body["actor"], body["response_metadata"]) == ("ACKED", "e2e-responder",
                                                                                  {"ticket": "INC-1"})
        again = responder.post(f"/api/v1/notifications/{nid}/ack", json={"metadata": {"ticket": "INC-1"}})
        assert (again.status_code, again.json()["ack_status"]) == (200, "ACKED")
    assert [e["kind"] for e in detail(stack, nid)["timeline"]].count("ACKED") == 1


def test_idempotent_repeat_and_fingerprint_conflict(stack, receiver):
    key = {"Idempotency-Key": f"e2e-{uuid.uuid4()}"}
    first = submit(stack, source="e2e-idem", headers=key)
    with stack.client("e2e-producer") as producer:
        again = producer.post("/api/v1/notifications", json={"source": "e2e-idem", "title": "disk full",
                                                              "channels": [CHANNEL]}, headers=key)
        assert again.status_code == 200, again.text
        assert {**again.json(), "status": None} == {**first, "status": None}  # the worker may have delivered
        conflict = producer.post("/api/v1/notifications", json={"source": "e2e-idem", "title": "another title",
                                                                 "channels": [CHANNEL]}, headers=key)
    assert conflict.status_code == 409 and conflict.headers["content-type"] == PROBLEM
    assert conflict.json()["code"] == "idempotency_conflict"
    delivered(stack, first["id"])
    assert len(receiver.for_id(first["id"])) == 1


def test_bad_requests_over_real_http(stack):
    with stack.client(None) as anonymous:
        response = anonymous.post("/api/v1/notifications", json={"source": "s", "title": "t"})
    assert response.status_code == 401 and response.headers["www-authenticate"] == "Bearer"
    assert response.headers["content-type"] == PROBLEM
    with stack.client("e2e-producer") as producer:
        cases = [
            (producer.post("/api/v1/notifications", content=b"{", headers={"content-type": "application/json"}),
             400, "parse_error"),
            (producer.post("/api/v1/notifications", content=b"[" * 3000 + b"]" * 3000,
                           headers={"content-type": "application/json"}), 400, "parse_error"),
            (producer.post("/api/v1/notifications", content=b"{}", headers={"content-type": "text/plain"}),
             415, "unsupported_media_type"),
            (producer.post("/api/v1/notifications", json={"source": "s", "title": "t", "channels": ["nope"]}),
             422, "unknown_channel"),
            (producer.post("/api/v1/notifications", content=b" " * (64 * 1024 + 1),
                           headers={"content-type": "application/json"}), 413, "payload_too_large"),
            # chunked, no Content-Length: refused for its size all the same
            (producer.post("/api/v1/notifications", content=iter([b" " * 16384] * 5),
                           headers={"content-type": "application/json"}), 413, "payload_too_large"),
            (producer.get(f"/api/v1/notifications/{uuid.uuid4()}"), 404, "not_found"),
        ]
    for response, status, code in cases:
        assert (response.status_code, response.headers["content-type"]) == (status, PROBLEM), response.text
        assert response.json()["code"] == code


def test_an_operator_manages_a_channel_over_real_http(stack, receiver):
    """``/api/v1/channels`` through uvicorn: create a signed webhook channel, test it against the
    real receiver, deliver through it, refuse to disable the routed ``console`` channel, and
    disable the new one (after which intake naming it is refused)."""
    secret = "whsec_ZTJlLWFwaS1jaGFubmVsLWtleQ=="
    with stack.client("e2e-operator") as op:
        r = op.post("/api/v1/channels", json={"name": "e2e-api-hook", "kind": "webhook",
                                              "config": {"url": receiver.url, "timeout": 5}, "secret": secret})
        assert r.status_code == 201, r.text
        assert secret not in r.text and r.json()["has_secret"] is True
        r = op.post("/api/v1/channels/e2e-api-hook/test")
        assert r.status_code == 200 and r.json()["success"] is True, r.text
        assert r.json()["answer"] == 'HTTP 200 {"received": true}'
        nid = submit(stack, channels=["e2e-api-hook"])["id"]
        delivered(stack, nid)
        assert receiver.for_id(nid)[0]["headers"]["webhook-signature"].startswith("v1,")
        r = op.post("/api/v1/channels/console/disable")
        assert r.status_code == 409 and r.json()["code"] == "channel_routed"
        r = op.post("/api/v1/channels/e2e-api-hook/disable")
        assert r.status_code == 200 and r.json()["enabled"] is False
    with stack.client("e2e-producer") as producer:
        r = producer.post("/api/v1/notifications", json={"source": "e2e", "title": "t", "channels": ["e2e-api-hook"]})
        assert r.status_code == 422 and r.json()["code"] == "unknown_channel", r.text
        assert producer.get("/api/v1/channels").status_code == 403


def test_sigterm_stops_the_embedded_server_cleanly(stack):
    """Last in this module: the server finishes its worker loops and exits 0 on SIGTERM."""
    rc = stack.server.terminate()
    output = stack.server.output()
    assert rc == 0, output[-3000:]
    assert "embedded worker loops stopped" in output
    assert "Application shutdown complete" in output


def test_scaled_shape_server_without_worker_and_a_separate_runworker(stack, receiver):
    """The same database served by ``uns_serve`` without its loops and one ``runworker``."""
    if stack.server.running():  # run alone (-k): the embedded server must not deliver for it
        assert stack.server.terminate() == 0
    worker = stack.start("runworker", "runworker", "--poll-interval", "0.05")  # starts while the server does
    server = stack.serve(UNS_EMBEDDED_WORKER="false")
    assert "embedded worker disabled" in server.output()
    assert "worker loop dispatch started" not in server.output()
    nid = submit(stack, source="e2e-scaled")["id"]
    d = delivered(stack, nid)
    assert "worker loop dispatch started" in worker.output()
    assert len(receiver.for_id(nid)) == 1
    assert d["outcome"]["channels_succeeded"] == [CHANNEL]
    assert [e["kind"] for e in d["timeline"]][-1] == "DELIVERY_RESULT"
    rc = worker.terminate()
    assert rc == 0, worker.output()[-3000:]
    assert "uns worker stopped" in worker.output()
    assert server.terminate() == 0, server.output()[-3000:]
