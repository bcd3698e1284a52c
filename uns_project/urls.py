"""URLconf: ``/api/v1/`` (DRF, mutations and reads), ``/admin/``, ``/healthz``, ``/metrics``."""
from django.contrib import admin
from django.http import JsonResponse
from django.urls import include, path

from core import codes
from core.problems import problem_of, problem_response
from notifications.metrics_http import metrics_view


def healthz(request):
    """Liveness: always 200 ``{"status": "ok"}`` while the process answers; it checks no
    dependency (readiness is ``/readyz``, ``notifications.health``)."""
    return JsonResponse({"status": "ok"})


# The apps' admin modules: discovered here, not at start-up (uns_project.apps.AdminConfig).
admin.autodiscover()

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/v1/", include("notifications.api.urls")),
    path("api/v1/", include("policies.api.urls")),
    path("healthz", healthz),
    path("metrics", metrics_view, name="metrics"),  # Prometheus (notifications.metrics_http)
]

# The operator console: operator login, the read-only /ui read models (INV-UI-001)
# and the built React app at / and /console/.
from console.urls import app_urlpatterns, auth_urlpatterns, ui_urlpatterns  # noqa: E402

urlpatterns += [
    path("api/v1/auth/", include(auth_urlpatterns)),
    path("ui/", include(ui_urlpatterns)),
    *app_urlpatterns,
]


def handler400(request, exception=None):
    """Django's own 400s (a ``Host`` header not in ``ALLOWED_HOSTS``, another suspicious request)
    as problem details, like every other answer (trial finding: these were Django's HTML page).
    The detail names no header value."""
    return problem_response(problem_of(codes.INVALID_REQUEST, "the request was refused as malformed or suspicious "
                                       "(for example a Host header this server does not serve)", request.path))


def handler404(request, exception=None):
    return problem_response(problem_of(codes.NOT_FOUND, f"no route for {request.path}", request.path))


def handler500(request):
    return problem_response(problem_of(codes.INTERNAL_ERROR, "the server failed; the request may be retried",
                                       request.path))


# OpenAPI 3 schema and Swagger UI (drf-spectacular); the UI's assets from the sidecar package.
from pathlib import Path  # noqa: E402

import drf_spectacular_sidecar  # noqa: E402
from django.conf import settings  # noqa: E402
from django.urls import re_path  # noqa: E402
from django.views.static import serve as _serve_static  # noqa: E402
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView  # noqa: E402

urlpatterns += [
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="swagger-ui"),
    re_path(rf"^{settings.STATIC_URL.strip('/')}/drf_spectacular_sidecar/(?P<path>.+)$", _serve_static,
            {"document_root": Path(drf_spectacular_sidecar.__file__).parent / "static" / "drf_spectacular_sidecar"}),
]

# Readiness: database, migrations, channel layer, embedded worker loops.
from notifications.health import readyz  # noqa: E402

urlpatterns += [path("readyz", readyz)]
