"""End to end over real WebSockets in the scaled shape: two daphne processes (no worker loops:
``UNS_EMBEDDED_WORKER=false``, and daphne runs no lifespan anyway) and a separate ``manage.py
runworker`` on one fresh database, sharing a Redis channel layer, driven by the ``websockets``
client. A timeline socket on daphne A sees the events of a notification submitted over HTTP to
daphne B (ACCEPTED, committed by B) and delivered by the runworker (ATTEMPT_STARTED ..
DELIVERY_RESULT, committed by the worker process) as they commit; an ACK over ``/ws/respond/``
on A reaches a timeline socket on B. Every wait has a bounded deadline.
"""
import json
import time
import uuid

import httpx
import pytest
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import connect

from .stack import DEADLINE, Daphne, Stack, free_port, redis_url, wait_for

pytestmark = pytest.mark.e2e

PRINCIPALS = {"ws-producer": "producer", "ws-responder": "responder", "ws-viewer": "console"}
DELIVERED_KINDS = ["ACCEPTED", "ATTEMPT_STARTED", "CHANNEL_ATTEMPT_STARTED", "CHANNEL_ATTEMPT_RESULT", "DELIVERY_RESULT"]


@pytest.fixture(scope="module")
def scaled(tmp_path_factory):
    """Fresh database, principals, two daphnes and one runworker sharing one Redis layer."""
    url, own_redis = redis_url(tmp_path_factory)
    prefix = f"uns-e2e-{uuid.uuid4().hex[:10]}"  # this run's keys only, even on a shared Redis
    workdir = tmp_path_factory.mktemp("scaled-ws")
    stack = Stack(workdir, "http://127.0.0.1:9/unused", secret="unused-secret")
    try:
        stack.prepare(PRINCIPALS, "unused-hook")
        env = {**stack.env, "REDIS_URL": url, "UNS_CHANNEL_PREFIX": prefix, "UNS_EMBEDDED_WORKER": "false"}
        servers = []
        for name in ("daphne-a", "daphne-b"):
            server = Daphne(name, free_port(), env, workdir / f"{name}.log")
            stack.processes.append(server)
            servers.append(server)
        worker = stack.start("runworker", "runworker", REDIS_URL=url, UNS_CHANNEL_PREFIX=prefix,
                             UNS_EMBEDDED_WORKER="false")
        for server in servers:
            def healthy(server=server):
                if not server.running():
                    raise AssertionError(f"{server.name} exited:\n{server.output()[-3000:]}")
                try:
                    return httpx.get(f"{server.http}/healthz", timeout=1).json() == {"status": "ok"}
                except httpx.HTTPError:
                    return False

            wait_for(healthy, f"{server.name} /healthz", timeout=60)

        def worker_started():
            if not worker.running():
                raise AssertionError(f"runworker exited:\n{worker.output()[-3000:]}")
            return "uns worker running" in worker.output()

        wait_for(worker_started, "runworker started", timeout=60)
    except BaseException:
        stack.close()
        raise
    stack.a, stack.b, stack.worker = servers[0], servers[1], worker
    yield stack
    try:
        stack.close()
    finally:
        import redis

        client = redis.Redis.from_url(url)
        for key in client.scan_iter(f"{prefix}*"):
            client.delete(key)
        if own_redis is not None:
            own_redis.terminate()
            own_redis.wait(DEADLINE)


def auth(stack, principal: str) -> dict:
    return {"Authorization": f"Bearer {stack.tokens[principal]}"}


def socket(stack, server: Daphne, path: str, principal: str | None = None, **kwargs):
    headers = auth(stack, principal) if principal else None
    return connect(f"{server.ws}{path}", additional_headers=headers, proxy=None, open_timeout=10, **kwargs)


def recv_json(ws, timeout: float = DEADLINE) -> dict:
    return json.loads(ws.recv(timeout=timeout))


def receive_until(ws, done, what: str, timeout: float = DEADLINE) -> list[dict]:
    """Receive until ``done(messages so far)`` holds, within ``timeout`` seconds; the messages."""
    deadline = time.monotonic() + timeout
    seen = []
    while True:
        left = deadline - time.monotonic()
        try:
            if left <= 0:
                raise TimeoutError
            message = recv_json(ws, left)
        except TimeoutError:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}; received "
                                 f"{[m.get('event', m).get('kind', m) for m in seen]}") from None
        seen.append(message)
        if done(seen):
            return seen


def got(nid: str, *kinds: str):
    """``done`` for ``receive_until``: every one of ``kinds`` of ``nid`` has arrived."""
    return lambda seen: set(kinds) <= set(kinds_for(seen, nid))


def kinds_for(messages: list[dict], nid: str) -> list[str]:
    return [m["event"]["kind"] for m in messages if m.get("type") == "event" and m["event"]["notification_id"] == nid]


def test_live_timeline_across_processes_and_ack_over_the_socket(scaled):
    with socket(scaled, scaled.a, "/ws/timeline/", "ws-viewer") as stream:
        stream.send(json.dumps({"action": "subscribe", "stream": "all", "limit": 0}))
        assert recv_json(stream)["type"] == "subscribed"

        # Submitted over HTTP to daphne B; the worker process delivers it.
        with httpx.Client(base_url=scaled.b.http, headers=auth(scaled, "ws-producer"), timeout=10) as producer:
            response = producer.post("/api/v1/notifications", json={
                "source": "e2e-ws", "title": "disk full", "channels": ["console"], "require_ack": True})
        assert response.status_code == 202, response.text
        nid = response.json()["id"]
        # Each process pushes its own events in commit order; across processes (B's ACCEPTED, the
        # worker's delivery events) arrival order is not guaranteed: clients order by (at, id).
        try:
            pushed = receive_until(stream, got(nid, *DELIVERED_KINDS), "ACCEPTED .. DELIVERY_RESULT pushed live")
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n{scaled.logs()}") from None
        events = [m["event"] for m in pushed if m.get("type") == "event" and m["event"]["notification_id"] == nid]
        assert sorted(e["kind"] for e in events) == sorted(DELIVERED_KINDS)  # each exactly once
        assert [e["kind"] for e in sorted(events, key=lambda e: (e["at"], e["id"]))] == DELIVERED_KINDS
        worker_kinds = [e["kind"] for e in events if e["kind"] != "ACCEPTED"]
        assert worker_kinds == DELIVERED_KINDS[1:]  # one process: pushed in the order it committed
        assert next(e for e in events if e["kind"] == "DELIVERY_RESULT")["payload"]["status"] == "DELIVERED"

        # A timeline socket on daphne B, subscribed to this notification: catch-up from the database.
        with socket(scaled, scaled.b, "/ws/timeline/", "ws-viewer") as follow:
            follow.send(json.dumps({"action": "subscribe", "notification_id": nid}))
            subscribed = recv_json(follow)
            assert subscribed["type"] == "subscribed"
            assert [e["kind"] for e in subscribed["events"]] == DELIVERED_KINDS  # stored order: (at, id)

            # Respond over /ws/respond/ on daphne A: snooze, then ACK (twice: idempotent).
            with socket(scaled, scaled.a, "/ws/respond/", "ws-responder") as respond:
                respond.send(json.dumps({"action": "snooze", "request_id": "z-1", "notification_id": nid,
                                         "seconds": 600}))
                snoozed = recv_json(respond)
                assert snoozed["request_id"] == "z-1" and snoozed["ok"] is True, snoozed
                for _ in range(2):
                    respond.send(json.dumps({"action": "ack", "request_id": "a-1", "notification_id": nid,
                                             "metadata": {"via": "ws"}}))
                    acked = recv_json(respond)
                    assert acked["request_id"] == "a-1" and acked["ok"] is True, acked
                    n = acked["notification"]
                    assert (n["id"], n["ack_status"], n["actor"]) == (nid, "ACKED", "ws-responder")
                respond.send(json.dumps({"action": "dismiss", "request_id": "d-1", "notification_id": nid}))
                refused = recv_json(respond)
                assert refused["ok"] is False and refused["problem"]["code"] == "ack_conflict"

            # Committed by daphne A, seen on B's socket (through Redis) and on A's stream.
            on_b = receive_until(follow, got(nid, "ACKED"), "ACKED on daphne B")
            assert kinds_for(on_b, nid) == ["SNOOZED", "ACKED"]
            assert on_b[-1]["event"]["payload"]["actor"] == "ws-responder"
        on_a = receive_until(stream, got(nid, "ACKED"), "ACKED on daphne A")
        assert kinds_for(on_a, nid) == ["SNOOZED", "ACKED"]

    with httpx.Client(base_url=scaled.a.http, headers=auth(scaled, "ws-viewer"), timeout=10) as viewer:
        timeline = viewer.get(f"/api/v1/notifications/{nid}").json()["timeline"]
    assert [e["kind"] for e in timeline].count("ACKED") == 1


@pytest.mark.parametrize("path,principal,code", [("/ws/timeline/", None, 4401), ("/ws/respond/", None, 4401),
                                                 ("/ws/respond/", "ws-viewer", 4403),
                                                 ("/ws/timeline/", "ws-producer", 4403)])
def test_refusals_reach_a_real_client_as_close_codes(scaled, path, principal, code):
    with socket(scaled, scaled.a, path, principal) as ws:
        with pytest.raises(ConnectionClosed) as closed:
            ws.recv(timeout=DEADLINE)
    assert closed.value.rcvd is not None and closed.value.rcvd.code == code


def test_wrong_token_in_the_query_is_4401(scaled):
    with connect(f"{scaled.a.ws}/ws/timeline/?token=not-a-token", proxy=None, open_timeout=10) as ws:
        with pytest.raises(ConnectionClosed) as closed:
            ws.recv(timeout=DEADLINE)
    assert closed.value.rcvd.code == 4401


def test_query_token_works_for_browser_style_clients(scaled):
    token = scaled.tokens["ws-viewer"]
    with connect(f"{scaled.b.ws}/ws/timeline/?token={token}", proxy=None, open_timeout=10,
                 origin=f"http://127.0.0.1:{scaled.b.port}") as ws:
        ws.send(json.dumps({"action": "subscribe", "stream": "all", "limit": 1}))
        assert recv_json(ws)["type"] == "subscribed"


def test_a_foreign_origin_is_refused_at_the_handshake(scaled):
    with pytest.raises(InvalidStatus) as refused:
        connect(f"{scaled.a.ws}/ws/timeline/", additional_headers=auth(scaled, "ws-viewer"), proxy=None,
                origin="https://evil.example", open_timeout=10)
    assert refused.value.response.status_code == 403


@pytest.fixture(scope="module")
def embedded(tmp_path_factory):
    """Embedded mode: one ``uns_serve`` process (uvicorn) serving HTTP and WebSocket and running
    the worker loops in its own threads, on the in-memory channel layer (no REDIS_URL)."""
    stack = Stack(tmp_path_factory.mktemp("embedded-ws"), "http://127.0.0.1:9/unused", secret="unused-secret")
    try:
        stack.prepare(PRINCIPALS, "unused-hook")
        stack.serve(UNS_EMBEDDED_WORKER="true")
    except BaseException:
        stack.close()
        raise
    stack.ws = stack.base_url.replace("http://", "ws://")
    yield stack
    stack.close()


def test_embedded_worker_threads_push_to_sockets_of_the_same_process(embedded):
    headers = auth(embedded, "ws-viewer")
    with connect(f"{embedded.ws}/ws/timeline/", additional_headers=headers, proxy=None, open_timeout=10) as stream:
        stream.send(json.dumps({"action": "subscribe", "stream": "all", "limit": 0}))
        assert recv_json(stream)["type"] == "subscribed"
        with embedded.client("ws-producer") as producer:
            response = producer.post("/api/v1/notifications", json={
                "source": "e2e-ws", "title": "embedded", "channels": ["console"], "require_ack": True})
        assert response.status_code == 202, response.text
        nid = response.json()["id"]
        try:
            pushed = receive_until(stream, got(nid, *DELIVERED_KINDS), "delivery events from the embedded worker")
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n{embedded.logs()}") from None
        events = [m["event"] for m in pushed if m.get("type") == "event" and m["event"]["notification_id"] == nid]
        assert [e["kind"] for e in sorted(events, key=lambda e: (e["at"], e["id"]))] == DELIVERED_KINDS
        # the worker thread's own events arrive in the order it committed them
        assert [e["kind"] for e in events if e["kind"] != "ACCEPTED"] == DELIVERED_KINDS[1:]
        with connect(f"{embedded.ws}/ws/respond/", additional_headers=auth(embedded, "ws-responder"), proxy=None,
                     open_timeout=10) as respond:
            respond.send(json.dumps({"action": "ack", "request_id": "e-1", "notification_id": nid}))
            assert recv_json(respond)["ok"] is True
        assert kinds_for(receive_until(stream, got(nid, "ACKED"), "ACKED"), nid) == ["ACKED"]


def test_a_query_token_never_reaches_the_server_log(embedded):
    """uvicorn logs each handshake with its query string; the token in it is redacted."""
    token = embedded.tokens["ws-viewer"]
    with connect(f"{embedded.ws}/ws/timeline/?token={token}", proxy=None, open_timeout=10) as ws:
        ws.send(json.dumps({"action": "subscribe", "stream": "all", "limit": 0}))
        assert recv_json(ws)["type"] == "subscribed"
    server = embedded.processes[-1]
    wait_for(lambda: "/ws/timeline/?token=***" in server.output(), "the redacted handshake log line")
    assert token not in server.output()
