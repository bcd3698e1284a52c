"""Bearer-token authentication for machine principals (django-rest-knox hashed tokens).

knox's own ``authenticate_credentials`` reads the token rows sharing the 15-character
``token_key`` and then, for each, every token of the user (its expired-token cleanup): three
statements per request, more for a principal with many tokens. Here the lookup is by the token's
digest, knox's primary key, joined to the user: one indexed statement per request, read fresh
every time, so a revoked (deleted) token, an expiry or a deactivated account takes effect on the
next request. Expired tokens are deleted when presented, as knox does; the user's other expired
tokens are left for ``knox``'s own cleanup paths (login, logoutall), not swept on every request.
"""
import binascii

from django.utils import timezone
from knox.auth import TokenAuthentication
from knox.crypto import hash_token
from knox.models import get_token_model
from knox.signals import token_expired
from rest_framework.exceptions import AuthenticationFailed


class BearerTokenAuthentication(TokenAuthentication):
    """``Authorization: Bearer <token>``. Tokens are stored hashed by knox; the principal is the
    token's Django user. A missing header falls through to the session authenticator."""

    def authenticate_credentials(self, token: bytes):
        """``(user, AuthToken)`` for the raw token bytes from the header, in one indexed query
        (digest primary key, user joined). Raises ``AuthenticationFailed`` (401) for a token that
        is not UTF-8, unknown, revoked, expired, or whose user is inactive."""
        # knox decodes the token as UTF-8; header bytes that are not UTF-8 must be a 401, not a 500.
        try:
            text = token.decode("utf-8")
        except UnicodeDecodeError:
            raise AuthenticationFailed("Invalid token.") from None
        try:
            digest = hash_token(text)
        except (TypeError, ValueError, binascii.Error):
            raise AuthenticationFailed("Invalid token.") from None
        # The digest is hex whatever the token held (a NUL byte in a filter is a PostgreSQL error).
        auth_token = get_token_model().objects.select_related("user").filter(digest=digest).first()
        if auth_token is None:
            raise AuthenticationFailed("Invalid token.")
        if auth_token.expiry is not None and auth_token.expiry < timezone.now():
            username = auth_token.user.get_username()
            auth_token.delete()
            token_expired.send(sender=self.__class__, username=username, source="auth_token")
            raise AuthenticationFailed("Invalid token.")
        return self.validate_user(auth_token)
