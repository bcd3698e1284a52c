"""Body-size guard: API bodies above ``UNS_MAX_BODY_BYTES`` get 413 problem details before any
parsing, so an oversized request can never reach the runtime."""
from django.conf import settings
from django.core.exceptions import RequestDataTooBig

from .problems import problem, problem_response


class BodySizeLimitMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
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
