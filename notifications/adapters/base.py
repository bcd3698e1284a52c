"""The one Protocol every delivery channel implements."""
from dataclasses import dataclass, field
from typing import Protocol


@dataclass(frozen=True)
class ChannelTarget:
    """A resolved channel configuration handed to an adapter. ``secret`` is for signing only and
    must never be logged or copied into a result."""

    name: str
    kind: str
    config: dict
    secret: str = ""


@dataclass(frozen=True)
class AttemptContext:
    """Identity of the attempt an adapter is serving (for idempotency headers)."""

    notification_id: str
    attempt: int
    cycle: int
    cycle_attempt: int
    lease_token: str


@dataclass(frozen=True)
class DeliveryResult:
    """One provider observation. ``retryable`` is meaningful only when ``success`` is false:
    False marks a permanent failure (never retried). ``retry_after``: seconds (>= 0) the
    provider asked to wait, from its answer, before the next attempt (HTTP ``Retry-After``, RFC
    9110 section 10.2.3), or None when it did not say; only a retryable failure's counts. The
    runtime waits ``max(backoff, min(retry_after, UNS_RETRY_AFTER_MAX_SECONDS))``."""

    success: bool
    retryable: bool = False
    message_id: str | None = None
    error: str | None = None
    metadata: dict = field(default_factory=dict)
    retry_after: float | None = None


class ChannelAdapter(Protocol):
    """Deliver one notification through one channel. Runs outside any transaction. Must not
    raise for provider failures (return a failed ``DeliveryResult``); an unexpected exception is
    recorded by the runtime as a retryable failure."""

    def send(self, notification: dict, target: ChannelTarget, context: AttemptContext) -> DeliveryResult: ...
