"""Operator login for the console: ``POST /api/v1/auth/login`` and ``/api/v1/auth/logout``.

Login lives under ``/api/v1/`` because ``/ui/*`` answers safe methods only (INV-UI-001). It
trades a username and password for a short-lived Django session (stored server-side, ended by
logout or after ``UNS_CONSOLE_TOKEN_TTL_SECONDS``), so a reload keeps the operator logged in:

- the session cookie is ``HttpOnly`` (no page script, of this origin or another, reads it),
  ``SameSite=Strict`` (a cross-site request does not carry it) and ``Secure`` when the request
  came over HTTPS (``uns_project.cookies.SecureCookiesOnHttps``);
- every state-changing request made with the session needs the CSRF token (DRF's
  ``SessionAuthentication`` enforces Django's CSRF check: ``X-CSRFToken`` header, and the
  ``Origin`` must be this site). The token is in the bodies of the login and ``/ui/me`` answers,
  which only this origin's scripts can read (no CORS); the CSRF cookie is ``HttpOnly`` too;
- the console's WebSocket authenticates with the same cookie (``notifications.ws_auth``: the
  session, re-checked before each message, and ``OriginCheck``).

Machine clients keep their knox Bearer tokens; logout also revokes a Bearer token it is given.
Only principals with the console capability may log in to the console.
"""
import time
from datetime import timedelta

from django.conf import settings
from django.contrib.auth import authenticate
from django.contrib.auth import login as start_session
from django.contrib.auth import logout as end_session
from django.middleware.csrf import get_token
from rest_framework.authentication import SessionAuthentication
from drf_spectacular.utils import OpenApiResponse, extend_schema
from knox.models import AuthToken
from rest_framework.permissions import AllowAny, IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from core import codes
from core.capabilities import VIEW_CONSOLE
from core.errors import InvalidRequest, UNSError
from core.times import iso
from notifications import payloads
from notifications.api import openapi as doc
from notifications.api.auth import BearerTokenAuthentication
from notifications.access import has_capability

from .throttle import LoginThrottle, record_login_failure

DEFAULT_TTL_SECONDS = 8 * 3600


class LoginFailed(UNSError):
    code = codes.INVALID_CREDENTIALS


class ConsoleAccessDenied(UNSError):
    code = codes.CONSOLE_ACCESS_DENIED


def token_ttl() -> timedelta:
    return timedelta(seconds=getattr(settings, "UNS_CONSOLE_TOKEN_TTL_SECONDS", DEFAULT_TTL_SECONDS))


class LoginView(APIView):
    """``POST /api/v1/auth/login`` ``{"username", "password"}``.

    200 ``{"username", "expiry", "expiry_iso", "csrf_token"}`` (``Cache-Control: no-store``) and
    the session cookie (HttpOnly, SameSite=Strict; no credential in the body, a reload keeps the
    session until it expires or is logged out); 400 for a
    malformed body, 401 ``invalid_credentials`` (the same for an unknown user and a wrong
    password), 403 ``console_access_denied`` for a principal without the console capability,
    429 ``throttled`` with ``Retry-After`` while the client's address or the username is over its
    failure limit (console.throttle), whatever the password. Public by nature: it is how a principal gets credentials.
    """

    authentication_classes = []
    permission_classes = [AllowAny]
    throttle_classes = [LoginThrottle]
    # Declared for the URLconf walk (notifications.api.permissions): this mutation needs no
    # capability because it only ever starts a session for the credentials it was given.
    capabilities = {"POST": None}

    @extend_schema(summary="Console login: start a session (HttpOnly cookie) for these credentials", tags=["auth"],
                   request=payloads.LoginRequest, responses={200: payloads.Login, **doc.problems(
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
        django_request = request._request
        start_session(django_request, user, backend=getattr(user, "backend", None))  # rotates the key and the CSRF token
        ttl = token_ttl()
        django_request.session.set_expiry(int(ttl.total_seconds()))
        expiry = time.time() + ttl.total_seconds()
        return Response({"username": user.get_username(), "expiry": expiry, "expiry_iso": iso(expiry),
                         "csrf_token": get_token(django_request)}, headers={"Cache-Control": "no-store"})


def session_expiry(request) -> float | None:
    """When the request's console session ends (epoch seconds), or None without a session."""
    session = getattr(request, "session", None)
    if session is None or not session.session_key:
        return None
    return time.time() + session.get_expiry_age()


class LogoutView(APIView):
    """``POST /api/v1/auth/logout``: end the console session (its cookie is cleared; the request
    needs the CSRF token like every session write) and revoke the Bearer token the request
    carries, if any. 204; 401 without credentials; 403 ``permission_denied`` for a session
    request without a valid CSRF token."""

    authentication_classes = [BearerTokenAuthentication, SessionAuthentication]
    permission_classes = [IsAuthenticated]
    # Any authenticated principal may end its own token; it reaches nothing else.
    capabilities = {"POST": None}

    @extend_schema(summary="Console logout: end this session or revoke this token", tags=["auth"], request=None,
                   responses={204: OpenApiResponse(description="Ended.")})
    def post(self, request):
        if isinstance(request.auth, AuthToken):
            request.auth.delete()
        else:
            end_session(request._request)
        return Response(status=204, headers={"Cache-Control": "no-store"})
