"""The one write path of UNS (DESIGN.md): every state change goes through ``Runtime``.

``Runtime(clock=...)`` takes an injected clock returning float epoch seconds; its verbs are the
spec's: ``accept``, ``dispatch``, ``acknowledge``, ``expire``, ``deliver_callbacks``,
``replay``, ``resolve_failure``, plus ``snooze``, ``escalate``, ``create_bulk``/``run_bulk``,
``create_silence``/``update_silence``/``expire_silence``, ``respond_before_delivery`` and ``run_once``. The runtime
never imports a transport, a read model or a feature: the live push is an injected ``publish``
callable, and governance and the metrics register on ``hooks``.
"""
import random
import time

from django.conf import settings
from django.utils.module_loading import import_string

from core.errors import Conflict, InvalidRequest, NotFound, PolicyUnavailable, UnknownChannel, UNSError

from ..adapters.registry import default_adapters
from . import bulk, callbacks, dlq, early, escalation, intake, responses, silences
from . import dispatch as _dispatch
from . import snooze as _snooze

__all__ = ["Runtime", "UNSError", "InvalidRequest", "UnknownChannel", "NotFound", "Conflict", "PolicyUnavailable"]


def default_publisher():
    """The live-push publisher named by ``settings.UNS_EVENT_PUBLISHER`` (a dotted path to a
    factory returning ``publish(events)``), or None when that setting is empty."""
    path = getattr(settings, "UNS_EVENT_PUBLISHER", None)
    return import_string(path)() if path else None


class Runtime:
    """The durable application service shared by every transport.

    ``clock``: () -> float epoch seconds. ``adapters``: ``{channel kind: ChannelAdapter}``
    (default: webhook and console). ``callback``: callable taking the callback body dict and
    returning a ``DeliveryResult`` (or None for success), or None for no destination in this
    process (default: ``callbacks.configured_callback``, an ``HttpCallback`` to
    ``UNS_CALLBACK_URL`` on this runtime's webhook adapter, when set). ``concurrency``: adapter
    threads per dispatch batch. ``rng``: () -> float in [0, 1) for backoff jitter.
    ``publish``: callable taking a list of committed ``Event`` rows, called after each commit
    that inserted events, or None for no live push (default: ``default_publisher()``).
    ``retry_after_max_seconds``: the longest wait a provider's ``Retry-After`` may impose on a
    retry (default ``UNS_RETRY_AFTER_MAX_SECONDS``; ``core.transitions.retry_delay_seconds``).
    """

    def __init__(self, *, clock=time.time, adapters=None, callback=..., lease_seconds=None, batch_size=None,
                 concurrency=None, rng=None, publish=..., retry_after_max_seconds=None):
        self.clock = clock
        self.adapters = adapters if adapters is not None else default_adapters(clock)
        if callback is ...:
            callback = callbacks.configured_callback(self.adapters)
        self.callback = callback
        self.lease_seconds = float(lease_seconds if lease_seconds is not None else settings.UNS_LEASE_SECONDS)
        self.batch_size = int(batch_size or settings.UNS_DISPATCH_BATCH)
        self.concurrency = int(concurrency or getattr(settings, "UNS_DISPATCH_CONCURRENCY", 1))
        self.random = rng or random.random
        self.publish = default_publisher() if publish is ... else publish
        self.retry_after_max_seconds = float(retry_after_max_seconds if retry_after_max_seconds is not None
                                             else settings.UNS_RETRY_AFTER_MAX_SECONDS)

    def accept(self, principal: str, request: dict) -> intake.AcceptResult:
        """See ``intake.accept``."""
        return intake.accept(self, principal, request)

    def dispatch(self, limit: int | None = None) -> list[_dispatch.DispatchReport]:
        """See ``dispatch.dispatch``."""
        return _dispatch.dispatch(self, limit)

    def acknowledge(self, notification_id: str, actor: str, dismiss: bool = False, metadata=None,
                    approve: bool = False, bulk_action_id: str | None = None):
        """See ``responses.acknowledge``."""
        return responses.acknowledge(self, notification_id, actor, dismiss=dismiss, metadata=metadata,
                                     approve=approve, bulk_action_id=bulk_action_id)

    def expire(self, limit: int = 500) -> list[str]:
        """The timeout pass: ``responses.expire`` (deadlines, then due escalation steps), then
        ``early.honour`` (responses that came before their delivery). Returns the ids timed out."""
        swept = responses.expire(self, limit)
        early.honour(self, limit)
        return swept

    def respond_before_delivery(self, notification_id: str, actor: str, *, dismiss: bool, resolved: bool,
                                metadata=None) -> dict:
        """See ``early.remember``."""
        return early.remember(self, notification_id, actor, dismiss=dismiss, resolved=resolved, metadata=metadata)

    def create_silence(self, actor: str, request: dict):
        """See ``silences.create``."""
        return silences.create(self, actor, request)

    def update_silence(self, silence_id: str, actor: str, request: dict):
        """See ``silences.update``."""
        return silences.update(self, silence_id, actor, request)

    def expire_silence(self, silence_id: str, actor: str):
        """See ``silences.expire``."""
        return silences.expire(self, silence_id, actor)

    def deliver_callbacks(self, limit: int = 100) -> dict:
        """See ``callbacks.deliver_callbacks``."""
        return callbacks.deliver_callbacks(self, limit)

    def replay(self, notification_id: str, actor: str, bulk_action_id: str | None = None):
        """See ``dlq.replay``."""
        return dlq.replay(self, notification_id, actor, bulk_action_id=bulk_action_id)

    def resolve_failure(self, notification_id: str, actor: str, bulk_action_id: str | None = None):
        """See ``dlq.resolve_failure``."""
        return dlq.resolve_failure(self, notification_id, actor, bulk_action_id=bulk_action_id)

    def create_bulk(self, actor: str, request: dict):
        """See ``bulk.create``."""
        return bulk.create(self, actor, request)

    def run_bulk(self, bulk_id: str, actor: str, limit: int | None = None) -> dict:
        """See ``bulk.run``."""
        return bulk.run(self, bulk_id, actor, limit)

    def snooze(self, notification_id: str, actor: str, seconds, metadata=None, request_id: str | None = None,
               bulk_action_id: str | None = None):
        """See ``snooze.snooze``."""
        return _snooze.snooze(self, notification_id, actor, seconds, metadata=metadata, request_id=request_id,
                              bulk_action_id=bulk_action_id)

    def escalate(self, notification_id: str, actor: str, reason: str = "", request_id: str | None = None):
        """See ``escalation.escalate``."""
        return escalation.escalate(self, notification_id, actor, reason, request_id=request_id)

    def stop_escalation(self, notification_id: str, actor: str, dismiss: bool = False, metadata=None) -> bool:
        """See ``escalation.stop_for_source``."""
        return escalation.stop_for_source(self, notification_id, actor, dismiss=dismiss, metadata=metadata)

    def run_once(self) -> dict:
        """One dispatch pass and one expiry sweep, without waiting on callbacks.
        Returns ``{"dispatched": [DispatchReport], "expired": [id]}``."""
        return {"dispatched": self.dispatch(), "expired": self.expire()}
