"""The policy lifecycle's transition table: DRAFT -> ACTIVE -> RETIRED, and DRAFT -> RETIRED to
abandon a draft. RETIRED is final: a retired version comes back only as a clone (a new DRAFT
version with the same content). Pure, so it is unit-tested without a database."""
from notifications.runtime.errors import Conflict

from .models import ACTIVE, DRAFT, RETIRED

TRANSITIONS = {
    DRAFT: frozenset({ACTIVE, RETIRED}),
    ACTIVE: frozenset({RETIRED}),
    RETIRED: frozenset(),
}

# The stable error code of each refused transition.
_REFUSALS = {
    (RETIRED, ACTIVE): ("policy_retired", "RETIRED is final; clone this version to a new DRAFT to bring it back"),
    (ACTIVE, DRAFT): ("policy_not_draft", "an ACTIVE version is immutable; clone it to a new DRAFT to change it"),
    (RETIRED, DRAFT): ("policy_not_draft", "a RETIRED version is immutable; clone it to a new DRAFT to change it"),
}


def allowed(current: str, target: str) -> bool:
    return target in TRANSITIONS.get(current, frozenset())


def check(current: str, target: str, *, policy_id: str, version: int) -> None:
    """Raise ``Conflict`` unless ``current -> target`` is a lifecycle transition."""
    if allowed(current, target):
        return
    code, detail = _REFUSALS.get((current, target), ("invalid_transition", f"{current} -> {target} is not allowed"))
    raise Conflict(f"{policy_id} v{version}: {detail}", code=code, policy_id=policy_id, version=version,
                   policy_status=current)


def check_editable(current: str, *, policy_id: str, version: int) -> None:
    """Content may change only while DRAFT (an edit is DRAFT -> DRAFT)."""
    if current != DRAFT:
        check(current, DRAFT, policy_id=policy_id, version=version)
