"""The lifecycle transition table, without a database: DRAFT -> ACTIVE -> RETIRED, DRAFT ->
RETIRED (abandon); RETIRED is final; ACTIVE and RETIRED content is immutable."""
import pytest

from core.errors import Conflict
from policies import lifecycle
from policies.models import ACTIVE, DRAFT, RETIRED


@pytest.mark.parametrize("current,target", [(DRAFT, ACTIVE), (DRAFT, RETIRED), (ACTIVE, RETIRED)])
def test_allowed_transitions(current, target):
    assert lifecycle.allowed(current, target)
    lifecycle.check(current, target, policy_id="p", version=1)


@pytest.mark.parametrize("current,target,code", [
    (RETIRED, ACTIVE, "policy_retired"),
    (RETIRED, DRAFT, "policy_not_draft"),
    (ACTIVE, DRAFT, "policy_not_draft"),
    (ACTIVE, ACTIVE, "invalid_transition"),
    (RETIRED, RETIRED, "invalid_transition"),
    (DRAFT, DRAFT, "invalid_transition"),
])
def test_refused_transitions_raise_conflict_with_a_stable_code(current, target, code):
    assert not lifecycle.allowed(current, target)
    with pytest.raises(Conflict) as err:
        lifecycle.check(current, target, policy_id="p", version=3)
    assert err.value.code == code
    assert err.value.extra["policy_status"] == current


def test_retired_is_final():
    assert lifecycle.TRANSITIONS[RETIRED] == frozenset()


@pytest.mark.parametrize("status", [ACTIVE, RETIRED])
def test_only_drafts_are_editable(status):
    lifecycle.check_editable(DRAFT, policy_id="p", version=1)
    with pytest.raises(Conflict) as err:
        lifecycle.check_editable(status, policy_id="p", version=1)
    assert err.value.code == "policy_not_draft"
