"""``login_refused``: the people-audit row of a console login the throttle refused
(``console.throttle``). The throttle decides; this records, in a transaction of its own."""
from django.contrib.auth import get_user_model
from django.db import transaction

from .. import people_audit

UNKNOWN_USER = "(unknown user)"


def login_refused(username: str | None, address: str, retry_after: int, now: float) -> None:
    """Record LOGIN_REFUSED: ``username`` (the name tried) was refused at ``now`` (epoch seconds)
    from ``address`` for ``retry_after`` seconds. A name that is no user's is recorded as
    ``(unknown user)``, not as typed: what lands in a username field by mistake (a password) must
    not reach the audit. 2 statements (the user lookup, the insert)."""
    known = bool(username) and get_user_model().objects.filter(username=username).exists()
    who = username if known else UNKNOWN_USER
    with transaction.atomic():
        people_audit.record(who, "LOGIN_REFUSED", who, at=now, title=who,
                            detail={"address": address, "retry_after": retry_after})
