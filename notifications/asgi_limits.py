"""ASGI guard for request bodies on /api/: the limit is enforced before Django reads anything.

Django's ASGI handler reads the whole body before any middleware runs, so a huge (or a falsely
declared, never-sent) body would be read or waited for in full. This wrapper answers 413 problem
details at once when ``Content-Length`` exceeds ``UNS_MAX_BODY_BYTES``, and otherwise buffers at
most that many bytes, answering 413 as soon as a chunked body goes over.
"""
import json

from django.conf import settings

from core.problems import PROBLEM_CONTENT_TYPE, payload_too_large




class BodyLimitMiddleware:
    """Wraps the Django ASGI app. ``limit``: bytes (default ``settings.UNS_MAX_BODY_BYTES``)."""

    def __init__(self, app, limit: int | None = None):
        self.app = app
        self.limit = limit

    async def _refuse(self, scope, send, limit):
        body = json.dumps(payload_too_large(limit, scope["path"])).encode()
        await send({"type": "http.response.start", "status": 413, "headers": [
            (b"content-type", PROBLEM_CONTENT_TYPE.encode()), (b"content-length", str(len(body)).encode()),
            (b"connection", b"close")]})
        await send({"type": "http.response.body", "body": body})

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or not scope["path"].startswith("/api/"):
            return await self.app(scope, receive, send)
        limit = self.limit if self.limit is not None else settings.UNS_MAX_BODY_BYTES
        declared = dict(scope.get("headers") or []).get(b"content-length")
        try:
            if declared is not None and int(declared) > limit:
                return await self._refuse(scope, send, limit)
        except ValueError:
            pass
        messages, size = [], 0
        while True:
            message = await receive()
            messages.append(message)
            if message["type"] != "http.request":
                break  # http.disconnect: let Django see it
            size += len(message.get("body", b""))
            if size > limit:
                return await self._refuse(scope, send, limit)
            if not message.get("more_body", False):
                break
        buffered = iter(messages)

        async def replay():
            for message in buffered:
                return message
            return await receive()

        return await self.app(scope, replay, send)
