"""The ``escalation`` setting as a chain of levels: validated by the pydantic models
of ``policies.escalation`` (the one-target form stays valid), every level's channels checked at
activation, and the chain shown by simulation."""
import pytest

from core.errors import InvalidRequest
from notifications.models import Channel
from policies import escalation, store
from policies.content import validate_content
from policies.simulation import simulate
from policyhelpers import content

CHAIN = {"levels": [
    {"channels": ["lead"], "wait_seconds": 60},
    {"channels": ["manager"], "wait_seconds": 120, "repeat": 2},
]}


def errors(value, where="defaults"):
    if where == "defaults":
        body = content(escalation=value)
    else:
        body = content(rules=[{"name": "r", "match": {}, "set": {"escalation": value}}])
    return validate_content(body)


@pytest.mark.parametrize("value", [None, {"target": "oncall"}, CHAIN,
                                   {"levels": [{"channels": ["a", "b"], "wait_seconds": 0, "repeat": 10}]}])
def test_valid_forms(value):
    assert errors(value) == [] and errors(value, "rule") == []


@pytest.mark.parametrize("value, field, message", [
    ("oncall", "defaults.escalation", 'must be null, {"target": channel name} or {"levels": [...]}'),
    ({"target": "a", "levels": []}, "defaults.escalation", 'must be null, {"target": channel name} or {"levels": [...]}'),
    ({"target": 5}, "defaults.escalation.target", "must be a string"),
    ({"levels": []}, "defaults.escalation.levels", None),
    ({"levels": "x"}, "defaults.escalation.levels", "must be a list"),
    ({"levels": [{"channels": ["a"]}]}, "defaults.escalation.levels[0].wait_seconds", "is required"),
    ({"levels": [{"channels": ["a"], "wait_seconds": 1}, {"channels": [], "wait_seconds": 1}]},
     "defaults.escalation.levels[1].channels", None),
    ({"levels": [{"channels": ["a"], "wait_seconds": -1}]}, "defaults.escalation.levels[0].wait_seconds",
     "must be at least 0"),
    ({"levels": [{"channels": ["a"], "wait_seconds": "60"}]}, "defaults.escalation.levels[0].wait_seconds",
     "must be a number"),
    ({"levels": [{"channels": ["a"], "wait_seconds": 1, "repeat": 0}]}, "defaults.escalation.levels[0].repeat",
     "must be at least 1"),
    ({"levels": [{"channels": ["a"], "wait_seconds": 1, "repeat": 1.5}]}, "defaults.escalation.levels[0].repeat",
     "must be an integer"),
    ({"levels": [{"channels": ["a"], "wait_seconds": 1, "repeat": 11}]}, "defaults.escalation.levels[0].repeat",
     "must be at most 10"),
    ({"levels": [{"channels": ["a"], "wait_seconds": 1, "delay": 3}]}, "defaults.escalation.levels[0].delay",
     "unknown field"),
    ({"levels": [{"channels": ["a"], "wait_seconds": 1}] * 11}, "defaults.escalation.levels",
     "must have at most 10 items"),
])
def test_invalid_chains_name_the_field(value, field, message):
    found = errors(value)
    assert [e["field"] for e in found] == [field]
    if message is not None:
        assert found[0]["message"] == message


def test_the_one_target_form_is_a_one_level_chain():
    assert escalation.levels({"target": "oncall"}) == [escalation.Level(1, ("oncall",), 0.0, 1)]
    assert escalation.levels(None) == []


@pytest.mark.django_db
def test_activation_checks_every_level_s_channels(clock):
    row = store.create_draft("x", content(escalation=CHAIN), actor="a", clock=clock)
    Channel.objects.create(name="lead", kind="console", config={})
    with pytest.raises(InvalidRequest) as err:
        store.activate("x", row.version, actor="a", clock=clock)
    assert [e["field"] for e in err.value.extra["errors"]] == ["defaults.escalation.levels[1].channels"]
    Channel.objects.create(name="manager", kind="console", config={})
    store.activate("x", row.version, actor="a", clock=clock)


@pytest.mark.django_db
def test_simulation_shows_the_chain_and_when_each_step_fires(clock):
    for name in ("lead", "manager"):
        Channel.objects.create(name=name, kind="console", config={})
    row = store.create_draft("x", content(priority=5, rules=[
        {"name": "svc-pages", "match": {"source": "svc"}, "set": {"escalation": CHAIN}}]), actor="a", clock=clock)
    store.activate("x", row.version, actor="a", clock=clock)
    result = simulate("alice", {"source": "svc", "title": "t"}, now=clock())
    assert (result["policy_id"], result["rule"]) == ("x", "svc-pages")
    assert result["escalation_chain"] == {
        "levels": [{"level": 1, "channels": ["lead"], "wait_seconds": 60.0, "repeat": 1},
                   {"level": 2, "channels": ["manager"], "wait_seconds": 120.0, "repeat": 2}],
        "schedule": [
            {"level": 1, "repetition": 1, "channels": ["lead"], "after_timeout_seconds": 0.0},
            {"level": 2, "repetition": 1, "channels": ["manager"], "after_timeout_seconds": 60.0},
            {"level": 2, "repetition": 2, "channels": ["manager"], "after_timeout_seconds": 180.0},
            {"exhausted": True, "after_timeout_seconds": 300.0},
        ]}


@pytest.mark.django_db
def test_simulation_without_a_chain(clock):
    assert simulate("alice", {"source": "svc", "title": "t"}, now=clock())["escalation_chain"] == {
        "levels": [], "schedule": []}
