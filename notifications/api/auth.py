"""Bearer-token authentication for machine principals (django-rest-knox hashed tokens)."""
from knox.auth import TokenAuthentication


class BearerTokenAuthentication(TokenAuthentication):
    """``Authorization: Bearer <token>``. Tokens are stored hashed by knox; the principal is the
    token's Django user. A missing header falls through to the session authenticator."""
