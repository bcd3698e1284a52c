"""The policy lifecycle's refusals: DRAFT -> ACTIVE -> RETIRED, and DRAFT -> RETIRED to abandon
a draft. RETIRED is final: a retired version comes back only as a clone (a new DRAFT version with
the same content). The edges are ``core.transitions.POLICY_STATUS``'s; this module says why a
verb is refused (a ``Conflict`` with a stable code). Pure, so it is unit-tested without a
database."""
from core import codes
from core.errors import Conflict
from core.transitions import EDIT, POLICY_STATUS

from .content import DEFAULT_POLICY_ID
from .models import ACTIVE, DRAFT, RETIRED

# The lifecycle verbs' edges (activate, retire): the table's, without the edit self-edge.
TRANSITIONS = {state: frozenset(POLICY_STATUS.edges[state] - {state}) for state in POLICY_STATUS.states}

# The stable error code of each refused transition.
_REFUSALS = {
    (RETIRED, ACTIVE): (codes.POLICY_RETIRED, "RETIRED is final; clone this version to a new DRAFT to bring it back"),
    (ACTIVE, DRAFT): (codes.POLICY_NOT_DRAFT, "an ACTIVE version is immutable; clone it to a new DRAFT to change it"),
    (RETIRED, DRAFT): (codes.POLICY_NOT_DRAFT, "a RETIRED version is immutable; clone it to a new DRAFT to change it"),
}


def allowed(current: str, target: str) -> bool:
    return target in TRANSITIONS.get(current, frozenset())


def check(current: str, target: str, *, policy_id: str, version: int) -> None:
    """Raise ``Conflict`` unless ``current -> target`` is a lifecycle transition."""
    if allowed(current, target):
        return
    code, detail = _REFUSALS.get((current, target), (codes.INVALID_TRANSITION, f"{current} -> {target} is not allowed"))
    raise Conflict(f"{policy_id} v{version}: {detail}", code=code, policy_id=policy_id, version=version,
                   policy_status=current)


def check_editable(current: str, *, policy_id: str, version: int) -> None:
    """Content may change only while DRAFT (an edit is DRAFT -> DRAFT, the ``EDIT`` self-edge)."""
    if not POLICY_STATUS.allows(current, DRAFT, edge=EDIT):
        check(current, DRAFT, policy_id=policy_id, version=version)


def retire_refusal(policy_id: str, status: str) -> Conflict | None:
    """The Conflict retiring ``policy_id`` in ``status`` meets beyond the table above, or None:
    the default policy's ACTIVE version can only be replaced (``default_policy_required``).
    ``store.retire`` raises it; ``verbs`` leaves Retire out for it."""
    if status == ACTIVE and policy_id == DEFAULT_POLICY_ID:
        return Conflict(f"the default policy {DEFAULT_POLICY_ID!r} cannot be retired, only replaced: "
                        "activate another version of it", code=codes.DEFAULT_POLICY_REQUIRED,
                        policy_id=policy_id, policy_status=status)
    return None


def verbs(policy_id: str, status: str) -> list[str]:
    """The lifecycle verbs a policy admin may use on a version of ``policy_id`` in ``status``:
    the ones the server would carry out (``allowed``, ``retire_refusal``), so the console
    offers no action the server refuses. Clone is always possible."""
    out = []
    if allowed(status, ACTIVE):
        out.append("activate")
    if allowed(status, RETIRED) and retire_refusal(policy_id, status) is None:
        out.append("retire")
    return [*out, "clone"]
