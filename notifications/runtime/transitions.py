"""The two orthogonal state machines of the support reference (section 1), as data.

Pure functions, unit-tested without a database. The runtime asserts every transition it
writes against these tables, and its conditional UPDATEs name the prior state they expect.
"""
from dataclasses import dataclass

PENDING = "PENDING"
DELIVERED = "DELIVERED"
FAILED = "FAILED"
DEDUPLICATED = "DEDUPLICATED"
STATUSES = (PENDING, DELIVERED, FAILED, DEDUPLICATED)

ACK_PENDING = "PENDING"
ACKED = "ACKED"
DISMISSED = "DISMISSED"
TIMED_OUT = "TIMED_OUT"
ACK_TERMINAL = (ACKED, DISMISSED, TIMED_OUT)

GUARANTEED = "GUARANTEED"
BEST_EFFORT = "BEST_EFFORT"
DELIVERY_MODES = (GUARANTEED, BEST_EFFORT)

# uns_notifications.status: allowed (from -> to). PENDING -> PENDING is a retry or a lease
# change; FAILED -> PENDING is an operator replay; FAILED -> FAILED clears dead_letter.
STATUS_TRANSITIONS = {
    PENDING: frozenset({PENDING, DELIVERED, FAILED, DEDUPLICATED}),
    FAILED: frozenset({PENDING, FAILED}),
    DELIVERED: frozenset(),
    DEDUPLICATED: frozenset(),
}

# uns_notifications.ack_status: None is "not required or not yet delivered".
ACK_TRANSITIONS = {
    None: frozenset({ACK_PENDING}),
    ACK_PENDING: frozenset({ACKED, DISMISSED, TIMED_OUT}),
    ACKED: frozenset(),
    DISMISSED: frozenset(),
    TIMED_OUT: frozenset(),
}


class IllegalTransition(AssertionError):
    """A code path tried a transition the reference does not allow (a bug, not bad input)."""


def check_status(old: str, new: str) -> None:
    if new not in STATUS_TRANSITIONS.get(old, ()):
        raise IllegalTransition(f"status {old} -> {new} is not in the reference state machine")


def check_ack(old: str | None, new: str) -> None:
    if new not in ACK_TRANSITIONS.get(old, ()):
        raise IllegalTransition(f"ack_status {old} -> {new} is not in the reference state machine")


@dataclass(frozen=True)
class Settlement:
    """What one dispatch attempt settles to: ``status`` and ``dead_letter``; ``retry`` when
    the row goes back to PENDING with backoff."""

    status: str
    dead_letter: bool
    retry: bool


def settle(*, delivery_mode: str, all_succeeded: bool, permanent_failure: bool,
           cycle_attempts: int, max_attempts: int) -> Settlement:
    """Decide the outcome of a dispatch attempt (reference 1.1, LEASED_DISPATCH exits).

    - every channel succeeded: DELIVERED;
    - a transient failure with ``cycle_attempts < max_attempts``: back to PENDING (retry);
    - otherwise (budget exhausted or a permanent failure, which is never retried):
      FAILED with ``dead_letter`` true for GUARANTEED, false for BEST_EFFORT.
    """
    if all_succeeded:
        return Settlement(DELIVERED, False, False)
    if not permanent_failure and cycle_attempts < max_attempts:
        return Settlement(PENDING, False, True)
    return Settlement(FAILED, delivery_mode == GUARANTEED, False)


def backoff_seconds(*, cycle_attempt: int, base: float, factor: float, cap: float, jitter: float,
                    unit_random: float) -> float:
    """Delay in seconds before retry number ``cycle_attempt`` (1-based): exponential
    ``base * factor ** (cycle_attempt - 1)`` capped at ``cap``, then spread by +/- ``jitter``
    (a fraction, 0..1) using ``unit_random`` drawn from [0, 1). Never negative."""
    raw = min(cap, base * factor ** max(0, cycle_attempt - 1))
    spread = raw * jitter * (2.0 * unit_random - 1.0)
    return max(0.0, raw + spread)
