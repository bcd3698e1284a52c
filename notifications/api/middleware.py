"""Request guards before any view: API bodies above ``UNS_MAX_BODY_BYTES`` get 413 problem details
before any parsing, so an oversized request can never reach the runtime; query parameters with a
NUL character (which PostgreSQL cannot compare or store) get 400 ``invalid_query``."""
from django.conf import settings
from django.core.exceptions import RequestDataTooBig

from .problems import problem, problem_response


class BodySizeLimitMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if request.path.startswith(("/api/", "/ui/")) and "\x00" in "".join(
                f"{k}{v}" for k, values in request.GET.lists() for v in values):
            return problem_response(problem(400, "invalid_query", "Invalid query",
                                            "query parameters must not contain U+0000 (NUL)", request.path))
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
