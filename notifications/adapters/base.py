"""The one Protocol every delivery channel implements."""
from dataclasses import dataclass, field
from typing import Protocol

from django.conf import settings


@dataclass(frozen=True)
class ChannelTarget:
    """A resolved channel configuration handed to an adapter. ``secret`` is for signing only and
    must never be logged or copied into a result."""

    name: str
    kind: str
    config: dict
    secret: str = ""


class ProviderAttempts(Protocol):
    """The runtime's side of an adapter that makes several provider attempts within one channel
    attempt (one per Apprise URL, say). Write-path rule 2: a conditional lease check precedes
    every provider attempt, and each attempt is recorded as its own CHANNEL_ATTEMPT_RESULT.

    An adapter using it calls ``begin()`` before each provider call and ``observed(result)``
    after it; it then returns the channel's aggregate ``DeliveryResult``, which settles the
    channel but is not recorded again. Called from the adapter's thread, no transaction open."""

    def begin(self) -> bool:
        """Confirm the lease before the next provider attempt. The first call stands on the
        check the runtime made before the channel; every later one commits its own conditional
        check and CHANNEL_ATTEMPT_STARTED. False: the lease is gone, do not call the provider."""

    def observed(self, result: "DeliveryResult") -> None:
        """Record one provider attempt's answer (a CHANNEL_ATTEMPT_RESULT row for the settle)."""

    def succeeded_before(self) -> set[str]:
        """``metadata["provider_key"]`` of every provider attempt of this obligation and channel
        that succeeded in an earlier attempt (any cycle): a retry skips them, as a channel that
        succeeded is skipped. One query; empty on the obligation's first attempt."""


@dataclass(frozen=True)
class AttemptContext:
    """Identity of the attempt an adapter is serving (for idempotency headers). ``provider``
    is the runtime's ``ProviderAttempts`` for this channel attempt (None outside dispatch)."""

    notification_id: str
    attempt: int
    cycle: int
    cycle_attempt: int
    lease_token: str
    provider: ProviderAttempts | None = None


@dataclass(frozen=True)
class DeliveryResult:
    """One provider observation. ``retryable`` is meaningful only when ``success`` is false:
    False marks a permanent failure (never retried). ``retry_after``: seconds (>= 0) the
    provider asked to wait, from its answer, before the next attempt (HTTP ``Retry-After``, RFC
    9110 section 10.2.3), or None when it did not say; only a retryable failure's counts. The
    runtime waits ``max(backoff, min(retry_after, UNS_RETRY_AFTER_MAX_SECONDS))``. ``answer``:
    a short excerpt of what the provider said (HTTP status and first bytes, SMTP reply, Apprise
    result), masked, for an operator's ``uns_channel test``; the runtime records none of it."""

    success: bool
    retryable: bool = False
    message_id: str | None = None
    error: str | None = None
    metadata: dict = field(default_factory=dict)
    retry_after: float | None = None
    answer: str | None = None


class ChannelAdapter(Protocol):
    """Deliver one notification through one channel. Runs outside any transaction. Must not
    raise for provider failures (return a failed ``DeliveryResult``); an unexpected exception is
    recorded by the runtime as a retryable failure."""

    def send(self, notification: dict, target: ChannelTarget, context: AttemptContext) -> DeliveryResult: ...


# The largest per-channel timeout (seconds) a channel may set; ``max_timeout_seconds`` also keeps
# it at or below half the dispatch lease (``UNS_LEASE_SECONDS``, 60 s by default).
MAX_TIMEOUT_SECONDS = 300.0


def max_timeout_seconds() -> float:
    """The largest channel timeout this deployment accepts, in seconds: ``MAX_TIMEOUT_SECONDS``,
    and at most half of ``UNS_LEASE_SECONDS``. An attempt that outlives its lease is fenced out
    after it delivered (LEASE_LOST) and sent again, so a timeout must end well inside the lease."""
    return min(MAX_TIMEOUT_SECONDS, float(settings.UNS_LEASE_SECONDS) / 2)


def check_timeout(value) -> float:
    """A channel's ``timeout``: seconds as a finite JSON number (not a boolean or a string),
    0 < timeout <= ``max_timeout_seconds()`` (the one rule for every channel kind). Raises
    ``ValueError`` saying why otherwise."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"timeout must be a number of seconds, got {value!r}")
    seconds = float(value)
    limit = max_timeout_seconds()
    if not 0 < seconds <= limit:  # NaN fails this too
        raise ValueError(f"timeout must be more than 0 and at most {limit:g} seconds (half the dispatch lease, "
                         f"UNS_LEASE_SECONDS), got {value!r}")
    return seconds
