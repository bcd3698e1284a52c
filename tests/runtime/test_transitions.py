"""The state machines as data (reference 1.1 and 1.2), ``settle()`` and ``backoff_seconds()``.
Pure: no database."""
import itertools

import pytest

from notifications.runtime.transitions import (
    ACK_TRANSITIONS,
    STATUS_TRANSITIONS,
    IllegalTransition,
    Settlement,
    backoff_seconds,
    check_ack,
    check_status,
    settle,
)

STATUSES = ["PENDING", "DELIVERED", "FAILED", "DEDUPLICATED"]
ACK_STATES = [None, "PENDING", "ACKED", "DISMISSED", "TIMED_OUT"]

# Reference 1.1 projected onto uns_notifications.status:
#   PENDING_LEADER/FOLLOWER -> PENDING (retry, lease change, promotion, relink),
#   -> DELIVERED, -> FAILED (best effort or DLQ), follower -> DEDUPLICATED;
#   FAILED_DLQ -> PENDING (replay), FAILED_DLQ -> FAILED (resolve).
ALLOWED_STATUS = {
    ("PENDING", "PENDING"), ("PENDING", "DELIVERED"), ("PENDING", "FAILED"), ("PENDING", "DEDUPLICATED"),
    ("FAILED", "PENDING"), ("FAILED", "FAILED"),
}
# Reference 1.2.
ALLOWED_ACK = {
    (None, "PENDING"),
    ("PENDING", "ACKED"), ("PENDING", "DISMISSED"), ("PENDING", "TIMED_OUT"),
}


def test_status_table_is_exactly_the_reference_diagram():
    edges = {(old, new) for old, targets in STATUS_TRANSITIONS.items() for new in targets}
    assert edges == ALLOWED_STATUS
    assert set(STATUS_TRANSITIONS) == set(STATUSES)


def test_ack_table_is_exactly_the_reference_diagram():
    edges = {(old, new) for old, targets in ACK_TRANSITIONS.items() for new in targets}
    assert edges == ALLOWED_ACK
    assert set(ACK_TRANSITIONS) == set(ACK_STATES)


@pytest.mark.parametrize("old,new", list(itertools.product(STATUSES, STATUSES)))
def test_check_status_accepts_only_reference_edges(old, new):
    if (old, new) in ALLOWED_STATUS:
        check_status(old, new)
    else:
        with pytest.raises(IllegalTransition):
            check_status(old, new)


@pytest.mark.parametrize("old,new", list(itertools.product(ACK_STATES, ACK_STATES[1:])))
def test_check_ack_accepts_only_reference_edges(old, new):
    if (old, new) in ALLOWED_ACK:
        check_ack(old, new)
    else:
        with pytest.raises(IllegalTransition):
            check_ack(old, new)


def test_check_status_rejects_unknown_states():
    with pytest.raises(IllegalTransition):
        check_status("LEASED", "DELIVERED")


@pytest.mark.parametrize("mode", ["GUARANTEED", "BEST_EFFORT"])
def test_settle_all_channels_succeeded_is_delivered(mode):
    assert settle(delivery_mode=mode, all_succeeded=True, permanent_failure=False, cycle_attempts=5,
                  max_attempts=5) == Settlement("DELIVERED", False, False)


@pytest.mark.parametrize("mode", ["GUARANTEED", "BEST_EFFORT"])
def test_settle_transient_failure_with_budget_left_retries(mode):
    assert settle(delivery_mode=mode, all_succeeded=False, permanent_failure=False, cycle_attempts=4,
                  max_attempts=5) == Settlement("PENDING", False, True)


def test_settle_guaranteed_exhausted_is_dead_lettered():
    assert settle(delivery_mode="GUARANTEED", all_succeeded=False, permanent_failure=False, cycle_attempts=5,
                  max_attempts=5) == Settlement("FAILED", True, False)


def test_settle_best_effort_exhausted_fails_without_dead_letter():
    assert settle(delivery_mode="BEST_EFFORT", all_succeeded=False, permanent_failure=False, cycle_attempts=5,
                  max_attempts=5) == Settlement("FAILED", False, False)


@pytest.mark.parametrize("mode,dead_letter", [("GUARANTEED", True), ("BEST_EFFORT", False)])
def test_settle_permanent_failure_never_retries(mode, dead_letter):
    assert settle(delivery_mode=mode, all_succeeded=False, permanent_failure=True, cycle_attempts=1,
                  max_attempts=5) == Settlement("FAILED", dead_letter, False)


def test_settle_attempts_beyond_budget_still_fail():
    # A row replayed under a policy with a smaller budget must not retry forever.
    assert settle(delivery_mode="GUARANTEED", all_succeeded=False, permanent_failure=False, cycle_attempts=9,
                  max_attempts=3).status == "FAILED"


BACKOFF = dict(base=2.0, factor=2.0, cap=300.0, jitter=0.2)


def test_backoff_grows_exponentially_at_the_jitter_midpoint():
    delays = [backoff_seconds(cycle_attempt=n, unit_random=0.5, **BACKOFF) for n in range(1, 6)]
    assert delays == [2.0, 4.0, 8.0, 16.0, 32.0]


def test_backoff_is_capped():
    assert backoff_seconds(cycle_attempt=9, unit_random=0.5, **BACKOFF) == 300.0
    assert backoff_seconds(cycle_attempt=60, unit_random=0.5, **BACKOFF) == 300.0


def test_backoff_jitter_spreads_symmetrically_around_the_raw_delay():
    low = backoff_seconds(cycle_attempt=3, unit_random=0.0, **BACKOFF)
    high = backoff_seconds(cycle_attempt=3, unit_random=0.999999, **BACKOFF)
    assert low == pytest.approx(8.0 * 0.8)
    assert high == pytest.approx(8.0 * 1.2, rel=1e-5)
    # the cap bounds the raw delay; jitter spreads around the capped value
    assert backoff_seconds(cycle_attempt=20, unit_random=0.0, **BACKOFF) == pytest.approx(240.0)


def test_backoff_first_attempt_is_base_and_never_negative():
    assert backoff_seconds(cycle_attempt=0, unit_random=0.5, **BACKOFF) == 2.0
    assert backoff_seconds(cycle_attempt=1, base=5.0, factor=3.0, cap=100.0, jitter=1.0, unit_random=0.0) == 0.0
    assert backoff_seconds(cycle_attempt=1, base=5.0, factor=3.0, cap=100.0, jitter=0.0, unit_random=0.9) == 5.0
