"""People targets at send time: a channel slot named ``schedule:<name>``, ``team:<name>`` or
``user:<name>`` (``oncall.targets``) is resolved when its attempt runs, never at intake.

``send`` resolves the target at the attempt's clock (``oncall.targets.resolve``: who is on call
now, a team's members, a user) and records it as ONCALL_RESOLVED (the target, the instant, each
person with why they were chosen and the verified contact methods to try; never an address or a
secret), so "who was on call when this fired" is answered from the timeline alone. Then, person
by person, it tries their verified contact methods in order until one succeeds. Each contact
method's send is one provider attempt of the slot's channel attempt (``ProviderAttempts``): a
committed conditional lease check precedes every one (the first stands on the window's check),
and its answer is its own CHANNEL_ATTEMPT_RESULT whose ``metadata`` names the ``user``, the
``contact_method`` and its ``kind`` (``provider_key``: the user, so a retry does not page again
a person an earlier attempt reached).

The slot's answer: success when at least one person was reached; otherwise a failure whose error
says why (nobody on call, nobody with a verified contact method, each method's error), retryable
when any method's failure was. A target that pages nobody is a permanent failure, handed to the
slot's fallback like any failed channel, or dead-lettered with that reason: never silent.
"""
from dataclasses import replace

from oncall import targets

from ...adapters.base import AttemptContext, ChannelTarget, DeliveryResult
from .. import timeline


class _ContactAttempts:
    """The ``ProviderAttempts`` an adapter sees while paging one contact method (Apprise makes
    one provider attempt per URL): its first ``begin`` stands on the check ``send`` just made,
    every later one is the slot's own committed lease check; its observations are collected for
    ``send`` to record with the person's metadata."""

    def __init__(self, outer):
        self._outer = outer
        self._first = True
        self.observations: list[DeliveryResult] = []

    def begin(self) -> bool:
        if self._first:
            self._first = False
            return True
        return self._outer.begin()

    def observed(self, result: DeliveryResult) -> None:
        self.observations.append(result)

    def succeeded_before(self) -> set[str]:
        return set()


def _tagged(result: DeliveryResult, person: str, contact: targets.Contact, *, reached: bool) -> DeliveryResult:
    """``result`` with the person and contact method in its metadata; ``reached``: this answer
    reached the person (its ``provider_key`` is the user, which a retry skips)."""
    meta = {**result.metadata, "user": person, "contact_method": contact.id, "kind": contact.kind,
            "label": contact.label}
    if reached:
        meta["provider_key"] = person
    return replace(result, metadata=meta)


def send(runtime, c, channel: str, provider) -> DeliveryResult:
    """Page the people target ``channel`` for claim ``c`` (its lease confirmed by the window,
    no transaction open); ``provider``: the slot's ``ProviderAttempts``. Appends ONCALL_RESOLVED
    to ``c.result_events`` and records each contact method's answer through ``provider``.
    Returns the slot's aggregate ``DeliveryResult`` (see the module doc)."""
    now = runtime.clock()
    resolved = targets.resolve(channel, now)
    c.result_events.append(timeline.event(c.id, timeline.ONCALL_RESOLVED, {
        "target": resolved.target,
        "at": resolved.at,
        # [{"user", "source", "layer", "override", "contact_methods": [{"id", "kind", "label"}]}]
        "people": [p.as_event() for p in resolved.people],
        "reason": resolved.reason,
        "lease_token": c.lease_token,
        "attempt": c.attempt,
        "cycle": c.cycle,
        "cycle_attempt": c.cycle_attempt,
    }, now))
    if not any(p.contacts for p in resolved.people):
        return DeliveryResult(False, retryable=False, error=resolved.reason or f"{channel!r} pages nobody")
    reached_before = provider.succeeded_before()
    reached, problems, retryable = [], [], False
    for person in resolved.people:
        if person.user in reached_before:
            reached.append(person.user)
            continue
        if not person.contacts:
            problems.append(f"{person.user}: no verified contact method")
            continue
        for contact in person.contacts:
            if not provider.begin():  # the lease is gone: page nobody else
                return DeliveryResult(False, retryable=True, error="lease lost before paging " + person.user)
            adapter = runtime.adapters.get(contact.kind)
            if adapter is None:
                result = DeliveryResult(False, retryable=False, error=f"no adapter for kind {contact.kind!r}")
                provider.observed(_tagged(result, person.user, contact, reached=False))
                problems.append(f"{person.user} via {contact.kind}: {result.error}")
                continue
            inner = _ContactAttempts(provider)
            context = AttemptContext(c.id, c.attempt, c.cycle, c.cycle_attempt, c.lease_token, inner)
            target = ChannelTarget(targets.person_target_name(person.user), contact.kind, contact.config,
                                   contact.secret)
            try:
                result = adapter.send(c.notification, target, context)
            except Exception as exc:  # an adapter bug must not lose the attempt's record
                result = DeliveryResult(False, retryable=True, error=f"adapter raised {type(exc).__name__}: {exc}")
            # Each provider attempt is one CHANNEL_ATTEMPT_RESULT: Apprise's one per URL, else the answer.
            for observed in inner.observations or [result]:
                provider.observed(_tagged(observed, person.user, contact, reached=result.success and observed.success))
            if result.success:
                reached.append(person.user)
                break
            retryable = retryable or result.retryable
            problems.append(f"{person.user} via {contact.kind} {contact.label or contact.id}: {result.error}")
    if reached:
        return DeliveryResult(True, message_id=",".join(reached), metadata={"reached": reached})
    return DeliveryResult(False, retryable=retryable, error="; ".join(problems)[:2000])
