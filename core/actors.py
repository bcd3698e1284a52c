"""The actor of a write: who did it, as every audit row and event records it (never empty)."""
from . import codes
from .errors import InvalidRequest


def check_actor(actor) -> None:
    """Refuse an empty actor: ``InvalidRequest`` ``actor_required`` (400). The one check of every
    write that records an actor (the response verbs, the DLQ, bulk actions, channels, policies)."""
    if not isinstance(actor, str) or not actor:
        raise InvalidRequest("an actor is required", code=codes.ACTOR_REQUIRED)
