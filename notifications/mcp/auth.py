"""Who is calling an MCP tool, and may they.

The principal is a Django user named by a django-rest-knox token, verified exactly as the HTTP
API verifies ``Authorization: Bearer`` (``notifications.access.token_principal``, one query):

- streamable HTTP: the SDK's bearer middleware calls ``KnoxTokenVerifier`` on every HTTP request
  (no or a bad token: 401 before any MCP message is read); the tool then re-reads the token the
  middleware stored on the request (``HttpIdentity``).
- stdio: one token for the whole process, from ``UNS_MCP_TOKEN`` or ``--token-file`` and never
  argv (``StdioIdentity``); ``manage.py mcp_server`` refuses to start unless it verifies.

Every tool call re-verifies its token and re-reads the user's permissions (``has_capability``:
one query), so a revoked token, a deactivated user or a withdrawn group takes effect on the next
call, not the next process. The bearer middleware's check runs with ``thread_sensitive=False``,
so the requests of different clients do not queue for the process's one thread-sensitive thread.
The refusals are ``access``'s (``NotAuthenticated``, ``TokenRefused``, ``CapabilityDenied``): the
codes DRF gives the same failures over HTTP, and the ones the WebSocket consumers answer.
"""
from channels.db import database_sync_to_async
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from rest_framework import exceptions as drf_exceptions

from core.errors import UNSError
from notifications.access import CapabilityDenied, NotAuthenticated, TokenRefused, has_capability, token_principal


def authenticate_token(token: str | None):
    """The active Django user that ``token`` (a knox token string) belongs to.

    Sync (ORM). Raises ``NotAuthenticated`` for an empty token, ``TokenRefused`` for any token
    knox does not accept. The message never echoes the token.
    """
    if not token:
        raise NotAuthenticated("an API token is required")
    try:
        user, _ = token_principal(token)
    except drf_exceptions.AuthenticationFailed:
        raise TokenRefused("invalid, expired or revoked token") from None
    return user


def require(user, capabilities: tuple[str, ...]) -> None:
    """Raise ``CapabilityDenied`` unless ``user`` holds one of ``capabilities`` (its permissions
    read in one query, ``access.has_capability``)."""
    if not has_capability(user, capabilities):
        raise CapabilityDenied("your principal lacks the capability this tool needs",
                               capabilities=list(capabilities))


def authorize(token: str | None, capabilities: tuple[str, ...]):
    """``authenticate_token`` then ``require``; returns the user. Sync (ORM)."""
    user = authenticate_token(token)
    require(user, capabilities)
    return user


class KnoxTokenVerifier:
    """The SDK's ``TokenVerifier`` over knox tokens, for the streamable HTTP bearer middleware.

    ``client_id`` is the username and ``subject`` the user's primary key, so the SDK binds each
    MCP session to the principal that opened it.
    """

    async def verify_token(self, token: str) -> AccessToken | None:
        def verify():
            try:
                return authenticate_token(token)
            except UNSError:
                return None

        user = await database_sync_to_async(verify, thread_sensitive=False)()
        if user is None:
            return None
        return AccessToken(token=token, client_id=user.get_username(), subject=str(user.pk), scopes=[])


class StdioIdentity:
    """A stdio server acts for the one principal whose token it was started with."""

    transport = "stdio"

    def __init__(self, token: str):
        self._token = token

    def token(self, request) -> str | None:
        return self._token


class HttpIdentity:
    """A streamable HTTP server acts for the bearer of each request's token."""

    transport = "http"

    def token(self, request) -> str | None:
        user = request.scope.get("user") if request is not None else None
        if not isinstance(user, AuthenticatedUser):
            return None
        return user.access_token.token
