"""The ASGI body guard answers 413 before the application reads an oversized body."""
import json

import pytest

from notifications.asgi_limits import BodyLimitMiddleware

pytestmark = pytest.mark.anyio
LIMIT = 100


@pytest.fixture
def anyio_backend():
    return "asyncio"


class Recorder:
    def __init__(self):
        self.bodies = []

    async def __call__(self, scope, receive, send):
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        self.bodies.append(body)
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})


async def run(app, headers, chunks, path="/api/v1/notifications"):
    scope = {"type": "http", "path": path, "headers": headers, "method": "POST"}
    pending = [{"type": "http.request", "body": c, "more_body": i < len(chunks) - 1} for i, c in enumerate(chunks)]
    received, sent = [], []

    async def receive():
        if not pending:
            raise AssertionError("the body was read past what was sent")
        received.append(1)
        return pending.pop(0)

    async def send(message):
        sent.append(message)

    await BodyLimitMiddleware(app, limit=LIMIT)(scope, receive, send)
    return sent, len(received)


async def test_declared_oversize_is_refused_without_reading():
    app = Recorder()
    sent, reads = await run(app, [(b"content-length", b"999999999")], [b"{}"])
    assert reads == 0 and app.bodies == []
    assert sent[0]["status"] == 413
    assert json.loads(sent[1]["body"])["code"] == "payload_too_large"


async def test_chunked_body_going_over_is_refused_as_soon_as_it_does():
    app = Recorder()
    sent, reads = await run(app, [], [b"x" * 60, b"x" * 60, b"x" * 60])
    assert reads == 2 and app.bodies == []
    assert sent[0]["status"] == 413


async def test_body_at_the_limit_reaches_the_app_whole():
    app = Recorder()
    sent, _ = await run(app, [(b"content-length", b"100")], [b"a" * 50, b"b" * 50])
    assert app.bodies == [b"a" * 50 + b"b" * 50]
    assert sent[0]["status"] == 200


async def test_paths_outside_the_api_are_not_buffered():
    app = Recorder()
    sent, _ = await run(app, [(b"content-length", b"999")], [b"y" * 150], path="/admin/login/")
    assert app.bodies == [b"y" * 150] and sent[0]["status"] == 200
