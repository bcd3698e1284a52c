"""Request guards before any view: API bodies above ``UNS_MAX_BODY_BYTES`` get 413 problem details
before any parsing, so an oversized request can never reach the runtime; under ``/api/``, ``/ui/``
and ``/admin/``, query parameters (names or values) that ``parsers.refusal`` refuses (a NUL
character, which PostgreSQL cannot compare or store) get 400 ``invalid_query``, and an admin path
holding one is a 404 (the admin's ``/admin/.../%00/change/`` and ``?status__exact=%00`` were 500s
on PostgreSQL)."""
from django.conf import settings
from django.core.exceptions import RequestDataTooBig

from .parsers import refusal
from .problems import problem, problem_response

# Where a path or query reaches the ORM: the API, the console's read models, the Django admin.
ADMIN_PREFIX = "/admin/"
GUARDED_PREFIXES = ("/api/", "/ui/", ADMIN_PREFIX)


class BodySizeLimitMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if request.path.startswith(GUARDED_PREFIXES):
            # The API's and /ui's views answer a bad id in their path with their own 404 code
            # (``policy_not_found``, ...); the admin's would look it up (a 500 on PostgreSQL).
            if request.path.startswith(ADMIN_PREFIX) and refusal(request.path):
                # No instance: the problem's instance is the path, the NUL would only be echoed back.
                return problem_response(problem(404, "not_found", "Not found", "no such resource"))
            for key, values in request.GET.lists():
                found = refusal(key) or refusal(values)
                if found:
                    name = key.encode("utf-8", "backslashreplace").decode().replace("\x00", "\\x00")
                    return problem_response(problem(400, "invalid_query", "Invalid query", f"{name}: {found[1]}",
                                                    request.path, errors=[{"field": name, "message": found[1]}]))
        if request.path.startswith("/api/") and request.method in ("POST", "PUT", "PATCH", "DELETE"):
            limit = settings.UNS_MAX_BODY_BYTES
            too_big = problem(413, "payload_too_large", "Payload too large",
                              f"request bodies are limited to {limit} bytes", request.path, limit_bytes=limit)
            try:
                declared = int(request.META.get("CONTENT_LENGTH") or 0)
            except ValueError:
                declared = 0
            if declared > limit:
                return problem_response(too_big)
            try:
                if len(request.body) > limit:
                    return problem_response(too_big)
            except RequestDataTooBig:
                return problem_response(too_big)
        return self.get_response(request)
