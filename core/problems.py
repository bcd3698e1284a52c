"""RFC 9457 problem details: the one error shape of every transport.

``{"type", "title", "status", "detail", "instance", "code", ...extra}`` served as
``application/problem+json``. Domain errors (``core.errors.UNSError``) keep their stable ``code``;
a code's status and title come from the catalog (``core.codes``).
"""
import json

from django.http import HttpResponse

from . import codes
from .codes import CATALOG

PROBLEM_CONTENT_TYPE = "application/problem+json"


STANDARD_MEMBERS = frozenset({"type", "title", "status", "detail", "instance", "code"})


def problem(status: int, code: str, title: str, detail: str, instance: str | None = None, /, **extra) -> dict:
    """Extension members never replace a standard one: an extra sharing a standard member's name
    (a runtime ``Conflict``'s ``status`` is the notification's status) becomes ``notification_<name>``."""
    body = {"type": f"urn:uns:problem:{code}", "title": title, "status": status, "detail": detail, "code": code}
    if instance:
        body["instance"] = instance
    for key, value in extra.items():
        body[f"notification_{key}" if key in STANDARD_MEMBERS else key] = value
    return body


def problem_of(code: str, detail: str, instance: str | None = None, /, **extra) -> dict:
    """``problem`` for a catalogued ``code``, with the catalog's status and title."""
    status, title = CATALOG[code]
    return problem(status, code, title, detail, instance, **extra)


def payload_too_large(limit: int, instance: str | None, *, what: str = "request bodies", unit: str = "bytes") -> dict:
    """413 ``payload_too_large``: ``what`` (the HTTP body, a WebSocket message) is limited to
    ``limit`` ``unit``; ``limit_bytes`` carries the limit. The one 413 of every transport (the
    ASGI guard, the request middleware, the WebSocket consumers)."""
    return problem_of(codes.PAYLOAD_TOO_LARGE, f"{what} are limited to {limit} {unit}", instance, limit_bytes=limit)


def problem_response(body: dict, headers: dict | None = None) -> HttpResponse:
    """A plain Django response (for middleware and URLconf handlers)."""
    response = HttpResponse(json.dumps(body), status=body["status"], content_type=PROBLEM_CONTENT_TYPE)
    for k, v in (headers or {}).items():
        response[k] = v
    return response
