"""Bearer-token authentication for machine principals (django-rest-knox hashed tokens).

knox's own ``authenticate_credentials`` reads the token rows sharing the 15-character
``token_key`` and then, for each, every token of the user (its expired-token cleanup): three
statements per request, more for a principal with many tokens. Here the lookup is
``notifications.access.token_principal`` (shared with the WebSocket and MCP transports): by the
token's digest, knox's primary key, joined to the user: one indexed statement per request, read
fresh every time, so a revoked (deleted) token, an expiry or a deactivated account takes effect
on the next request. Expired tokens are deleted when presented, as knox does; the user's other
expired tokens are left for ``knox``'s own cleanup paths (login, logoutall), not swept on every
request.
"""
from knox.auth import TokenAuthentication

from notifications.access import token_principal


class BearerTokenAuthentication(TokenAuthentication):
    """``Authorization: Bearer <token>``. Tokens are stored hashed by knox; the principal is the
    token's Django user. A missing header falls through to the session authenticator."""

    def authenticate_credentials(self, token: bytes):
        """``(user, AuthToken)`` for the raw token bytes from the header (``access.token_principal``).
        Raises ``AuthenticationFailed`` (401) for a token that is not UTF-8, unknown, revoked,
        expired, or whose user is inactive."""
        return token_principal(token)
