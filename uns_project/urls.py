"""URLconf: ``/api/v1/`` (DRF, mutations and reads), ``/admin/``, ``/healthz``."""
from django.contrib import admin
from django.http import JsonResponse
from django.urls import include, path

from notifications.api.problems import problem, problem_response


def healthz(request):
    """Liveness: ``{"status": "ok"}``."""
    return JsonResponse({"status": "ok"})


urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/v1/", include("notifications.api.urls")),
    path("healthz", healthz),
]


def handler404(request, exception=None):
    return problem_response(problem(404, "not_found", "Not found", f"no route for {request.path}", request.path))


def handler500(request):
    return problem_response(problem(500, "internal_error", "Internal server error",
                                    "the server failed; the request may be retried", request.path))
