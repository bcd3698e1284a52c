"""Deprecated aliases of ``/api/v1`` routes: an old path that answers as its successor does.

Every answer of an alias (errors included) carries the ``Deprecation`` header (RFC 9745: the
date the path was deprecated, ``@`` epoch seconds) and ``Link: <successor>; rel="successor-version"``
(RFC 5829), and its OpenAPI operation says ``deprecated: true`` and documents both headers.
"""
from drf_spectacular.utils import OpenApiParameter, extend_schema
from django.urls import reverse

#: 2026-12-03T00:00:00Z: when the DLQ's actions moved under ``/api/v1/dlq/{id}``.
DLQ_ACTIONS_MOVED = 1796256000

#: The response headers of a deprecated alias, for its ``extend_schema(parameters=...)``.
HEADERS = [
    OpenApiParameter("Deprecation", str, OpenApiParameter.HEADER, response=True,
                     description="RFC 9745: this path is deprecated since the date given (`@` epoch seconds)."),
    OpenApiParameter("Link", str, OpenApiParameter.HEADER, response=True,
                     description='The path that replaces this one: `<path>; rel="successor-version"`.'),
]


class DeprecatedAlias:
    """Mixin for a DRF view serving a deprecated path. ``successor``: the URL name of the route
    that replaces it (same URL keyword arguments); ``deprecated_at``: epoch seconds."""

    successor: str
    deprecated_at: int

    def finalize_response(self, request, response, *args, **kwargs):
        response = super().finalize_response(request, response, *args, **kwargs)
        response["Deprecation"] = f"@{self.deprecated_at}"
        response["Link"] = f'<{reverse(self.successor, kwargs=self.kwargs)}>; rel="successor-version"'
        return response


def deprecated(view_class):
    """Class decorator: every operation of ``view_class`` is ``deprecated: true`` with the
    alias headers documented."""
    return extend_schema(deprecated=True, parameters=HEADERS)(view_class)
