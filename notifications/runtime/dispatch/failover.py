"""Failover: which channel of a claim is attempted next (reference: the policy's ``fallback_channels``).

Each effective channel is a slot served by its chain ``[channel, *fallbacks]``; a failure that
ends a channel for the cycle hands its slot to the next fallback (CHANNEL_FAILED_OVER). The rules
are mixed into ``claim.Claim``; ``docs/explanation/dispatch.md`` tells the whole story.
"""
from ...adapters.base import DeliveryResult
from .. import timeline


class Failover:
    """The chain rules of one claim. The host (``claim.Claim``) provides ``id``, ``lease_token``,
    ``attempt``, ``cycle``, ``cycle_attempt``, ``effective``, ``outcome``, ``results`` (channel ->
    ``DeliveryResult`` of this attempt), ``result_events`` and ``given_up`` (the channels of this
    cycle handed over to their next fallback, stored as ``outcome["failover"]``)."""

    def _restore_given_up(self) -> None:
        """``given_up`` from the stored ``outcome["failover"]``; a replay (new cycle) starts every chain again."""
        stored = self.outcome.get("failover") or {}
        if stored.get("cycle") == self.cycle:
            self.given_up = set(stored.get("given_up") or ())

    def chain(self, primary: str) -> list[str]:
        """The channels that may serve ``primary``'s slot, in order: itself, then its fallbacks."""
        return [primary, *(self.effective.get("fallback_channels") or {}).get(primary, [])]

    def all_channels(self) -> set[str]:
        """Every channel a chain of this claim may attempt."""
        return {ch for p in self.effective["channels"] for ch in self.chain(p)}

    def succeeded(self) -> set[str]:
        """Channels delivered in this obligation: earlier attempts' and this attempt's."""
        return {*self.outcome.get("channels_succeeded", []), *(ch for ch, r in self.results.items() if r.success)}

    def current(self, primary: str) -> str:
        """The channel now serving ``primary``'s slot: the first of its chain not given up."""
        chain = self.chain(primary)
        return next((ch for ch in chain if ch not in self.given_up), chain[-1])

    def open_slots(self) -> list[str]:
        """The effective channels whose slot no channel of its chain has delivered yet."""
        done = self.succeeded()
        return [p for p in self.effective["channels"] if not any(ch in done for ch in self.chain(p))]

    def next_channel(self) -> str | None:
        """The next channel this attempt should try: the current channel of the first open slot
        that has no answer in this attempt yet (policy order), or None when none is left."""
        for p in self.open_slots():
            ch = self.current(p)
            if ch not in self.results:
                return ch
        return None

    def exhausted(self) -> bool:
        """This attempt is the cycle's last (``cycle_attempt >= max_attempts``)."""
        return self.cycle_attempt >= int(self.effective["max_attempts"])

    def fail_over(self, channel: str, result: DeliveryResult, now: float) -> None:
        """After ``channel`` failed: if that failure ends it for this cycle (permanent, or on the
        cycle's last attempt), every open slot it serves that has a fallback left hands over to
        the next one (``given_up``) with a CHANNEL_FAILED_OVER row for the settle; the claim's
        next channel is then the fallback. A chain's last channel is never given up."""
        if result.success or (result.retryable and not self.exhausted()):
            return
        moves = []
        for p in self.open_slots():
            chain = self.chain(p)
            if self.current(p) != channel:
                continue
            rest = [ch for ch in chain[chain.index(channel) + 1:] if ch not in self.given_up]
            if rest:
                moves.append((p, rest[0]))
        for p, fallback in moves:
            self.given_up.add(channel)
            self.result_events.append(timeline.event(self.id, timeline.CHANNEL_FAILED_OVER, {
                "channel": channel,
                "fallback": fallback,
                "primary": p,
                "reason": "permanent_failure" if not result.retryable else "attempts_exhausted",
                "error": result.error,
                "lease_token": self.lease_token,
                "attempt": self.attempt,
                "cycle": self.cycle,
                "cycle_attempt": self.cycle_attempt,
            }, now))
