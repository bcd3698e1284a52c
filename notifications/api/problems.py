"""RFC 9457 problem details: the one error shape of every HTTP endpoint.

``{"type", "title", "status", "detail", "instance", "code", ...extra}`` served as
``application/problem+json``. Domain errors (``UNSError``) keep their stable ``code``.
"""
import json

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.http import Http404, HttpResponse
from rest_framework import exceptions
from rest_framework.response import Response

from notifications.runtime.errors import UNSError

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


def problem_response(body: dict, headers: dict | None = None) -> HttpResponse:
    """A plain Django response (for middleware and URLconf handlers)."""
    response = HttpResponse(json.dumps(body), status=body["status"], content_type=PROBLEM_CONTENT_TYPE)
    for k, v in (headers or {}).items():
        response[k] = v
    return response


def _drf_code(exc: exceptions.APIException) -> str:
    codes = exc.get_codes()
    if isinstance(codes, str):
        return codes
    return exc.default_code


def problem_exception_handler(exc, context):
    """DRF ``EXCEPTION_HANDLER``: render every error as problem details."""
    request = context.get("request")
    instance = request.path if request is not None else None
    headers = {}
    if isinstance(exc, exceptions.ParseError) and isinstance(exc.__cause__, UNSError):
        exc = exc.__cause__  # the parser's refusal is the one every transport gives (parsers.check_value)
    if isinstance(exc, UNSError):
        body = problem(exc.status, exc.code, exc.title, exc.detail, instance, **exc.extra)
    elif isinstance(exc, Http404):
        body = problem(404, "not_found", "Not found", "no such resource", instance)
    elif isinstance(exc, DjangoPermissionDenied):
        body = problem(403, "permission_denied", "Forbidden", str(exc) or "permission denied", instance)
    elif isinstance(exc, exceptions.APIException):
        detail = exc.detail
        extra = {}
        if isinstance(detail, (dict, list)):
            extra["errors"] = detail
            detail = "the request is invalid"
        body = problem(exc.status_code, _drf_code(exc), exc.__class__.__name__.replace("_", " "), str(detail),
                       instance, **extra)
        if isinstance(exc, (exceptions.NotAuthenticated, exceptions.AuthenticationFailed)):
            authenticator = request and request.authenticators and request.authenticators[0]
            if authenticator:
                headers["WWW-Authenticate"] = authenticator.authenticate_header(request)
            body["status"] = 401
        if getattr(exc, "wait", None):
            headers["Retry-After"] = str(int(exc.wait))
    else:
        return None
    return Response(body, status=body["status"], headers=headers, content_type=PROBLEM_CONTENT_TYPE)
