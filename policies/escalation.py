"""The ``escalation`` setting of policy content: a chain of levels, one schema.

Two forms, both valid in ``defaults`` and ``rules[].set``::

    {"target": "oncall"}                                    (the one-target form: one level)
    {"levels": [                                            (a chain)
        {"channels": ["team-lead"], "wait_seconds": 300},
        {"channels": ["manager"], "wait_seconds": 600, "repeat": 3},
        {"channels": ["director", "cto"], "wait_seconds": 900}
    ]}

A level names its ``channels`` (one escalation notification is sent to all of them), how long
to ``wait_seconds`` for a response after it fired before the chain goes on, and how many times
to ``repeat`` it (default 1; "repeat until reached": the level is sent again after each wait, up
to ``repeat`` times, before the next level). The first level fires when the notification's own
acknowledgement deadline passes (TIMED_OUT); the chain ends (``ESCALATION_EXHAUSTED``) when the
last level's last wait passes without a response. The one-target form is the chain
``[{"channels": [target], "wait_seconds": 0, "repeat": 1}]``: it fires once and ends.

``check(value)`` validates (the pydantic models below are the one rule, used by
``policies.content``); ``levels(value)`` returns the chain of a stored (valid) setting as
``Level`` tuples, the one normalisation every reader (runtime, simulation, console) calls.
"""
from dataclasses import dataclass
from typing import Annotated

from pydantic import Field, ValidationError

from core.schema import ChannelName, Schema, errors_of


MAX_LEVELS = 10
MAX_REPEAT = 10
MAX_WAIT_SECONDS = 7 * 86400.0
MAX_LEVEL_CHANNELS = 16


class EscalationLevel(Schema):
    """One level of an escalation chain."""

    channels: Annotated[list[ChannelName], Field(min_length=1, max_length=MAX_LEVEL_CHANNELS)] = Field(
        description="Channels the level's escalation notification is sent to.")
    wait_seconds: float = Field(ge=0, le=MAX_WAIT_SECONDS, allow_inf_nan=False,
                                description="Seconds to wait for a response after the level fired.")
    repeat: int = Field(1, ge=1, le=MAX_REPEAT, description="How many times the level is sent (one wait each).")


class EscalationChain(Schema):
    """``{"levels": [...]}``: the chain form."""

    levels: Annotated[list[EscalationLevel], Field(min_length=1, max_length=MAX_LEVELS)]


class EscalationTarget(Schema):
    """``{"target": channel}``: the one-target form (a one-level chain)."""

    target: ChannelName


@dataclass(frozen=True)
class Level:
    """A level of a stored chain: ``number`` (1-based), ``channels``, ``wait_seconds``, ``repeat``."""

    number: int
    channels: tuple[str, ...]
    wait_seconds: float
    repeat: int

    def as_dict(self) -> dict:
        return {"level": self.number, "channels": list(self.channels), "wait_seconds": self.wait_seconds,
                "repeat": self.repeat}


def check(value, prefix: str) -> list[dict]:
    """The ``{"field", "message"}`` errors of an ``escalation`` setting at ``prefix`` (empty when
    valid): null, the one-target form or the chain form (``EscalationChain``)."""
    if value is None:
        return []
    if not isinstance(value, dict) or set(value) not in ({"target"}, {"levels"}):
        return [{"field": prefix, "message": 'must be null, {"target": channel name} or {"levels": [...]}'}]
    if "target" in value:
        return _errors(EscalationTarget, value, prefix)
    chain = value["levels"]
    if isinstance(chain, list) and 1 <= len(chain) <= MAX_LEVELS:  # name the level at fault
        return [e for i, lv in enumerate(chain) for e in _errors(EscalationLevel, lv, f"{prefix}.levels[{i}]")]
    return _errors(EscalationChain, value, prefix)


def _errors(model, value, prefix: str) -> list[dict]:
    try:
        model.model_validate(value)
    except ValidationError as exc:
        return [{"field": f"{prefix}.{e['field']}" if e["field"] else prefix, "message": e["message"]}
                for e in errors_of(exc)]
    return []


def levels(value) -> list[Level]:
    """The chain of a stored ``escalation`` setting (already valid): ``[]`` for null."""
    if not value:
        return []
    if "target" in value:
        return [Level(1, (value["target"],), 0.0, 1)]
    return [Level(i, tuple(lv["channels"]), float(lv["wait_seconds"]), int(lv.get("repeat", 1)))
            for i, lv in enumerate(value["levels"], start=1)]


def channel_paths(value, prefix: str) -> list[tuple[str, str]]:
    """``(field path, channel name)`` of every channel a (possibly invalid) setting names, for the
    activation-time check that each is configured and enabled (``policies.store.channel_errors``)."""
    if not isinstance(value, dict):
        return []
    if isinstance(value.get("target"), str):
        return [(f"{prefix}.target", value["target"])]
    named = []
    for i, lv in enumerate(value.get("levels") or [] if isinstance(value.get("levels"), list) else []):
        if isinstance(lv, dict) and isinstance(lv.get("channels"), list):
            named += [(f"{prefix}.levels[{i}].channels", c) for c in lv["channels"] if isinstance(c, str)]
    return named


def steps(chain: list[Level]) -> list[tuple[Level, int]]:
    """The chain flattened into the steps it fires, in order: ``(level, repetition)`` with
    repetition 1..``level.repeat``. A row's ``escalation_step`` counts the steps fired."""
    return [(lv, r) for lv in chain for r in range(1, lv.repeat + 1)]


def first_step_of(chain: list[Level], number: int) -> int:
    """Index in ``steps(chain)`` of level ``number``'s first repetition."""
    return sum(lv.repeat for lv in chain[:number - 1])


def schedule(chain: list[Level]) -> list[dict]:
    """What simulation shows: every step with ``after_timeout_seconds``, when it fires counted
    from the acknowledgement deadline when nobody responds, and the chain's end."""
    out, t = [], 0.0
    for lv, rep in steps(chain):
        out.append({"level": lv.number, "repetition": rep, "channels": list(lv.channels), "after_timeout_seconds": t})
        t += lv.wait_seconds
    if out:
        out.append({"exhausted": True, "after_timeout_seconds": t})
    return out
