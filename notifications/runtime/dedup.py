"""The dedup decision, the one definition of it (support reference 1.1, intake; architecture,
"Pending ownership remains exclusive beyond TTL expiry ... FAILED owners never suppress a fresh
obligation").

Pure: plain values in, a small typed result out, no database. Intake (``accept``), policy
simulation (through ``intake.dedup_plan``) and the replay blockers (``dlq``) all call ``decide``.
"""
from dataclasses import dataclass

from core.transitions import DELIVERED, PENDING

LEADER = "leader"
FOLLOWER = "follower"
DEDUPLICATED = "deduplicated"
ROLES = (LEADER, FOLLOWER, DEDUPLICATED)  # what the APIs answer as ``dedup_role`` / ``dedup.role``


@dataclass(frozen=True)
class DedupDecision:
    """``role``: ``leader`` | ``follower`` | ``deduplicated``.

    ``owner_id``/``owner_status``: the live owner a follower waits behind (PENDING) or a
    deduplicated request is satisfied by (DELIVERED); None for a leader. ``generation``: the
    window generation the request belongs to (a leader starts ``previous + 1``).
    ``new_generation``: True exactly when the request must become the window's owner.
    """

    role: str
    owner_id: str | None
    owner_status: str | None
    generation: int
    new_generation: bool

    @property
    def live_owner(self) -> bool:
        """Whether another notification carries the window's obligation now."""
        return self.role != LEADER


def decide(*, owner_id: str | None, owner_status: str | None, generation: int, until: float,
           now: float) -> DedupDecision:
    """The role a request takes in a dedup window.

    ``owner_id``: the window's recorded owner (None: no window row, or no owner);
    ``owner_status``: that owner's status (None when the row is gone); ``generation``: the
    window's generation (0 when there is no window row); ``until``: epoch seconds the suppression
    window of a DELIVERED owner runs to; ``now``: epoch seconds.

    A PENDING owner is followed (ownership is exclusive beyond the window's TTL); a DELIVERED
    owner deduplicates while ``now < until``; anything else (no owner, a missing owner row, a
    FAILED owner, an expired delivered window) makes the request lead a new generation.
    Raises nothing.
    """
    if owner_id and owner_status == PENDING:
        return DedupDecision(FOLLOWER, owner_id, PENDING, generation, False)
    if owner_id and owner_status == DELIVERED and now < until:
        return DedupDecision(DEDUPLICATED, owner_id, DELIVERED, generation, False)
    return DedupDecision(LEADER, None, None, generation + 1, True)
