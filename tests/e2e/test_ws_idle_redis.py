"""Idle WebSockets live on the Redis channel layer.

Each consumer of a daphne process waits for its messages with channels-redis' blocking
``BZPOPMIN`` (up to ``RedisChannelLayer.brpop_timeout`` = 5 s per call, then again). redis-py 8
reads with a 5 s default ``socket_timeout``, so with the defaults the client's read timer races
the server's blocking pop and an idle socket is closed with 1011 ("Timeout reading from ...")
after about 5 s. ``uns_project/settings.py`` configures the layer's client with no read timeout
(and a short, explicit connect timeout, set here through ``UNS_REDIS_CONNECT_TIMEOUT``).

The test holds several idle sockets (the client sends no pings) on one daphne using the Redis
layer for longer than three times every client-side timeout in play, then commits an event
through that daphne's HTTP API and receives it live on every one of them.
"""
import json
import time
import uuid
from contextlib import ExitStack

import httpx
import pytest
from channels_redis.core import RedisChannelLayer
from redis._defaults import DEFAULT_SOCKET_TIMEOUT
from websockets.exceptions import ConnectionClosed, InvalidHandshake
from websockets.sync.client import connect

from .stack import Daphne, Stack, flush_redis_prefix, free_port, redis_url, wait_for
from .test_ws_e2e import auth, got, kinds_for, receive_until, recv_json

pytestmark = pytest.mark.e2e

PRINCIPALS = {"idle-producer": "producer", "idle-viewer": "console"}
SOCKETS = 4
CONNECT_TIMEOUT = 5  # seconds: UNS_REDIS_CONNECT_TIMEOUT, set explicitly for the daphne below
# Every client-side timeout that could cut an idle socket: the connect timeout we set, the
# layer's blocking-pop period and redis-py's default read timeout (the one that used to fire).
HOLD = 3 * max(CONNECT_TIMEOUT, RedisChannelLayer.brpop_timeout, DEFAULT_SOCKET_TIMEOUT) + 1  # 16 s


@pytest.fixture(scope="module")
def idle_stack(tmp_path_factory):
    """A fresh database and one daphne on the Redis layer (this run's own key prefix)."""
    url, own_redis = redis_url(tmp_path_factory)
    prefix = f"uns-idle-{uuid.uuid4().hex[:10]}"
    workdir = tmp_path_factory.mktemp("idle-ws")
    stack = Stack(workdir, "http://127.0.0.1:9/unused", secret="unused-secret")
    try:
        stack.prepare(PRINCIPALS, "unused-hook")
        env = {**stack.env, "REDIS_URL": url, "UNS_CHANNEL_PREFIX": prefix, "UNS_EMBEDDED_WORKER": "false",
               "UNS_REDIS_CONNECT_TIMEOUT": str(CONNECT_TIMEOUT)}
        server = Daphne("daphne-idle", free_port(), env, workdir / "daphne-idle.log")
        stack.processes.append(server)

        def healthy():
            if not server.running():
                raise AssertionError(f"daphne exited:\n{server.output()[-3000:]}")
            try:
                return httpx.get(f"{server.http}/healthz", timeout=1).json() == {"status": "ok"}
            except httpx.HTTPError:
                return False

        wait_for(healthy, "daphne /healthz", timeout=60)
    except BaseException:
        stack.close()
        raise
    stack.daphne = server
    yield stack
    try:
        stack.close()
    finally:
        flush_redis_prefix(url, prefix)
        if own_redis is not None:
            own_redis.terminate()
            own_redis.wait(30)


def test_idle_sockets_outlive_every_redis_client_timeout_and_then_receive_live(idle_stack):
    server = idle_stack.daphne
    sockets = []
    with ExitStack() as opened:
        for i in range(SOCKETS):
            try:
                # ping_interval=None: the client sends nothing while idle (no keepalive traffic).
                ws = opened.enter_context(connect(f"{server.ws}/ws/timeline/", proxy=None, open_timeout=10,
                                                  additional_headers=auth(idle_stack, "idle-viewer"),
                                                  ping_interval=None))
                sockets.append(ws)
                ws.send(json.dumps({"action": "subscribe", "stream": "all", "limit": 0}))
                assert recv_json(ws)["type"] == "subscribed"
            except (InvalidHandshake, ConnectionClosed, TimeoutError) as exc:
                raise AssertionError(f"socket {i}: {exc!r}\n{server.output()[-3000:]}") from None

        # Idle for HOLD seconds: nothing arrives and no socket is closed. Each socket is watched in
        # turn (a close shows up at once, with its code); the hold ends at the deadline.
        deadline = time.monotonic() + HOLD
        while (left := deadline - time.monotonic()) > 0:
            for i, ws in enumerate(sockets):
                try:
                    message = ws.recv(timeout=min(1.0, max(left, 0.01)))
                except TimeoutError:
                    continue
                except ConnectionClosed as closed:
                    raise AssertionError(f"idle socket {i} closed after {HOLD - deadline + time.monotonic():.1f}s of {HOLD}s "
                                         f"({closed.rcvd}):\n{server.output()[-3000:]}") from None
                raise AssertionError(f"idle socket {i} received {message!r} with nothing produced")
        assert server.running(), server.output()[-3000:]
        assert "Timeout reading" not in server.output(), server.output()[-3000:]

        # Now an event: committed by this daphne (ACCEPTED), pushed through Redis to every socket.
        with httpx.Client(base_url=server.http, headers=auth(idle_stack, "idle-producer"), timeout=10) as producer:
            response = producer.post("/api/v1/notifications", json={
                "source": "e2e-idle", "title": "after a quiet spell", "channels": ["console"]})
        assert response.status_code == 202, response.text
        nid = response.json()["id"]
        for i, ws in enumerate(sockets):
            try:
                pushed = receive_until(ws, got(nid, "ACCEPTED"), f"ACCEPTED live on idle socket {i}")
            except (AssertionError, ConnectionClosed) as exc:
                raise AssertionError(f"{exc!r}\n{server.output()[-3000:]}") from None
            assert kinds_for(pushed, nid) == ["ACCEPTED"]
