"""The project's URLconf plus the floor ladder's HTTP rungs under ``/floor/`` (bench only).

- ``/floor/django``: a plain Django function view answering 202, through the project's ASGI
  handler and its whole middleware chain (csrf-exempt, as DRF's views are);
- ``/floor/drf``: an empty DRF ``APIView`` with the project's parser and renderer settings and no
  authentication: it parses the JSON body and renders a small body;
- ``/floor/drf-auth``: the same with the project's authentication classes and ``HasCapability``
  (capability ``send``, as ``POST /api/v1/notifications``).
"""
from django.http import HttpResponse
from django.urls import path
from django.views.decorators.csrf import csrf_exempt
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from core.capabilities import SEND
from notifications.api.views import UNSView
from uns_project.urls import handler404, handler500, urlpatterns as project_urlpatterns  # noqa: F401

BODY = {"id": "00000000-0000-4000-8000-000000000000", "status": "PENDING", "dedup_role": "leader"}


@csrf_exempt
def django_view(request):
    return HttpResponse(b'{"status":"PENDING"}', status=202, content_type="application/json")


class DRFView(APIView):
    authentication_classes = []
    permission_classes = [AllowAny]

    def post(self, request):
        request.data  # noqa: B018 - parse the body, as the real view does
        return Response(BODY, status=202)


class DRFAuthView(UNSView):
    capabilities = {"POST": SEND}

    def post(self, request):
        request.data  # noqa: B018
        return Response(BODY, status=202)


urlpatterns = [
    path("floor/django", django_view),
    path("floor/drf", DRFView.as_view()),
    path("floor/drf-auth", DRFAuthView.as_view()),
    *project_urlpatterns,
]
