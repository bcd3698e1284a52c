"""Operator login for the console: ``POST /api/v1/auth/login`` and ``/api/v1/auth/logout``.

Login lives under ``/api/v1/`` because ``/ui/*`` answers safe methods only (INV-UI-001). It
trades a username and password for a short-lived django-rest-knox token (stored hashed) that the
app keeps in memory only and sends as ``Authorization: Bearer``; no cookie is set, so there is
no session for a cross-site request to ride and nothing for page scripts to read back later.
Only principals with the console capability may log in to the console.
"""
from datetime import timedelta

from django.conf import settings
from django.contrib.auth import authenticate
from drf_spectacular.utils import OpenApiResponse, extend_schema
from knox.models import AuthToken
from rest_framework.permissions import AllowAny, IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from notifications.api import openapi as doc
from notifications.api.auth import BearerTokenAuthentication
from notifications.access import VIEW_CONSOLE, has_capability
from notifications.runtime.errors import InvalidRequest, UNSError
from notifications.selectors import iso

from .throttle import LoginThrottle, record_login_failure

DEFAULT_TTL_SECONDS = 8 * 3600


class LoginFailed(UNSError):
    status = 401
    code = "invalid_credentials"
    title = "Login failed"


class ConsoleAccessDenied(UNSError):
    status = 403
    code = "console_access_denied"
    title = "No console access"


def token_ttl() -> timedelta:
    return timedelta(seconds=getattr(settings, "UNS_CONSOLE_TOKEN_TTL_SECONDS", DEFAULT_TTL_SECONDS))


class LoginView(APIView):
    """``POST /api/v1/auth/login`` ``{"username", "password"}``.

    200 ``{"token", "username", "expiry", "expiry_iso"}`` (``Cache-Control: no-store``); 400 for a
    malformed body, 401 ``invalid_credentials`` (the same for an unknown user and a wrong
    password), 403 ``console_access_denied`` for a principal without the console capability,
    429 ``throttled`` with ``Retry-After`` while the client's address or the username is over its
    failure limit (console.throttle), whatever the password. Public by nature: it is how a principal gets credentials.
    """

    authentication_classes = []
    permission_classes = [AllowAny]
    throttle_classes = [LoginThrottle]
    # Declared for the URLconf walk (notifications.api.permissions): this mutation needs no
    # capability because it only ever issues a token for the credentials it was given.
    capabilities = {"POST": None}

    @extend_schema(summary="Console login: credentials for a short-lived token", tags=["auth"],
                   request=doc.LoginRequestSerializer, responses={200: doc.LoginSerializer, **doc.problems(
                       c401="`invalid_credentials`.", c403="`console_access_denied`: no console capability.",
                       c429="`throttled`: too many failed logins from this address or for this username; see `Retry-After`.")})
    def post(self, request):
        data = request.data
        username = data.get("username") if isinstance(data, dict) else None
        password = data.get("password") if isinstance(data, dict) else None
        errors = [{"field": name, "message": "is required"} for name, value in
                  (("username", username), ("password", password)) if not isinstance(value, str) or not value]
        if errors:
            raise InvalidRequest("username and password are required", errors=errors)
        user = authenticate(request._request, username=username, password=password)
        if user is None or not user.is_active:
            record_login_failure(request)
            raise LoginFailed("the username or password is not right")
        if not has_capability(user, VIEW_CONSOLE):
            raise ConsoleAccessDenied(f"{user.get_username()} may not use the console (needs the console capability)")
        instance, token = AuthToken.objects.create(user=user, expiry=token_ttl())
        expiry = instance.expiry.timestamp()
        return Response({"token": token, "username": user.get_username(), "expiry": expiry, "expiry_iso": iso(expiry)},
                        headers={"Cache-Control": "no-store"})


class LogoutView(APIView):
    """``POST /api/v1/auth/logout``: revoke the Bearer token the request carries. 204."""

    authentication_classes = [BearerTokenAuthentication]
    permission_classes = [IsAuthenticated]
    # Any authenticated principal may end its own token; it reaches nothing else.
    capabilities = {"POST": None}

    @extend_schema(summary="Console logout: revoke this token", tags=["auth"], request=None,
                   responses={204: OpenApiResponse(description="Revoked.")})
    def post(self, request):
        if isinstance(request.auth, AuthToken):
            request.auth.delete()
        return Response(status=204)
