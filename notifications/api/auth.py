"""Bearer-token authentication for machine principals (django-rest-knox hashed tokens)."""
from knox.auth import TokenAuthentication
from rest_framework.exceptions import AuthenticationFailed


class BearerTokenAuthentication(TokenAuthentication):
    """``Authorization: Bearer <token>``. Tokens are stored hashed by knox; the principal is the
    token's Django user. A missing header falls through to the session authenticator."""

    def authenticate_credentials(self, token):
        # knox decodes the token as UTF-8; header bytes that are not UTF-8 must be a 401, not a 500.
        try:
            token.decode("utf-8")
        except UnicodeDecodeError:
            raise AuthenticationFailed("Invalid token.") from None
        return super().authenticate_credentials(token)
