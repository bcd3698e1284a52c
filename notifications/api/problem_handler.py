"""The DRF ``EXCEPTION_HANDLER``: every error of a DRF view as RFC 9457 problem details
(``core.problems``), domain errors (``UNSError``) keeping their catalogued ``code``."""
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.http import Http404
from rest_framework import exceptions
from rest_framework.response import Response

from core import codes
from core.errors import UNSError
from core.problems import PROBLEM_CONTENT_TYPE, problem, problem_of



def _drf_code(exc: exceptions.APIException) -> str:
    found = exc.get_codes()
    if isinstance(found, str):
        return found
    return exc.default_code


def problem_exception_handler(exc, context):
    """DRF ``EXCEPTION_HANDLER``: render every error as problem details."""
    request = context.get("request")
    instance = request.path if request is not None else None
    headers = {}
    if isinstance(exc, exceptions.ParseError) and isinstance(exc.__cause__, UNSError):
        exc = exc.__cause__  # the parser's refusal is the one every transport gives (core.json_values)
    if isinstance(exc, UNSError):
        body = problem(exc.status, exc.code, exc.title, exc.detail, instance, **exc.extra)
    elif isinstance(exc, Http404):
        body = problem_of(codes.NOT_FOUND, "no such resource", instance)
    elif isinstance(exc, DjangoPermissionDenied):
        body = problem_of(codes.PERMISSION_DENIED, str(exc) or "permission denied", instance)
    elif isinstance(exc, exceptions.APIException):
        detail = exc.detail
        extra = {}
        if isinstance(detail, (dict, list)):
            extra["errors"] = detail
            detail = "the request is invalid"
        code = _drf_code(exc)
        # The catalog's title for a catalogued code (one title per code, core.codes), else DRF's class name.
        title = codes.CATALOG[code].title if code in codes.CATALOG else exc.__class__.__name__
        body = problem(exc.status_code, code, title, str(detail), instance, **extra)
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
