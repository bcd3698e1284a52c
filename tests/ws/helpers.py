"""Helpers for the WebSocket tests: open a socket on the real ASGI application, read close
codes and messages with bounded waits."""
import asyncio
import time
from contextlib import asynccontextmanager

from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator

RECEIVE_TIMEOUT = 5.0


def application():
    from uns_project.asgi import application as app

    return app


@asynccontextmanager
async def socket(path: str, *, token: str | None = None, query: str = "", headers=()):
    """A connected communicator (``comm.accepted`` False when the handshake was denied); always
    disconnected on exit."""
    hdrs = list(headers)
    if token is not None:
        hdrs.append((b"authorization", f"Bearer {token}".encode()))
    comm = WebsocketCommunicator(application(), path + (f"?{query}" if query else ""), headers=hdrs)
    connected, _ = await comm.connect(timeout=RECEIVE_TIMEOUT)
    comm.accepted = connected
    try:
        yield comm
    finally:
        await comm.disconnect()


async def close_code(comm) -> int | None:
    """The close code of a socket refused after the handshake (accepted, then closed)."""
    assert comm.accepted, "the handshake itself was denied"
    output = await comm.receive_output(timeout=RECEIVE_TIMEOUT)
    assert output["type"] == "websocket.close", output
    return output.get("code")


async def receive(comm, timeout: float = RECEIVE_TIMEOUT) -> dict:
    return await comm.receive_json_from(timeout=timeout)


async def receive_until(comm, predicate, what: str, timeout: float = RECEIVE_TIMEOUT) -> list[dict]:
    """Receive messages until one satisfies ``predicate``; returns every message received, the
    matching one last. Fails after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    seen = []
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise AssertionError(f"timed out waiting for {what}; received {seen}")
        try:
            message = await comm.receive_json_from(timeout=left)
        except asyncio.TimeoutError:
            raise AssertionError(f"timed out waiting for {what}; received {seen}") from None
        seen.append(message)
        if predicate(message):
            return seen


def live_kinds(messages: list[dict], notification_id: str | None = None) -> list[str]:
    return [m["event"]["kind"] for m in messages
            if m.get("type") == "event" and (notification_id is None or m["event"]["notification_id"] == notification_id)]


def sync(fn, *args, **kwargs):
    """Run ORM / runtime code from an async test (in the consumers' database thread)."""
    return database_sync_to_async(fn)(*args, **kwargs)
