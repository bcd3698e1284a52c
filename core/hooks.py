"""What the layers above the runtime register to hear of its transitions. The runtime calls
whatever is registered and never names a subscriber (imports point down). A subscriber is a
callable or its dotted path (``"policies.governance.bridge.settle_response"``), imported on the
first call: an app's ``ready()`` registers without importing the runtime, so a management
command that never writes does not load it.

- ``response_settled``: ``fn(runtime, row, ack_status, actor, now)`` inside the transaction of a
  response (ACKED, DISMISSED) or time-out (TIMED_OUT) that won, after its event and audit row;
  an exception rolls the transition back. Governance settles its decision here
  (``policies.governance.bridge.settle_response``, registered by ``PoliciesConfig.ready``).
- ``committed``: ``fn(events, principal=...)`` after each commit that inserted events (the
  Prometheus counters, ``metrics.record_committed``, registered by ``NotificationsConfig.ready``);
  an exception is logged and never fails the committed write. The live push is the runtime's
  own injected ``publish`` (``Runtime(publish=...)``), called just before these.

Registering the same function twice keeps one registration.
"""
import logging

from django.utils.module_loading import import_string

log = logging.getLogger("uns.events")

_response_settled: list = []
_committed: list = []


def _register(hooks: list, fn) -> None:
    if fn not in hooks:
        hooks.append(fn)


def _resolved(hooks: list) -> list:
    """``hooks`` with each dotted path replaced, in place, by what it names. Raises ``ImportError``
    for a path that names nothing (a wiring bug: it fails the first transition, loudly)."""
    for i, fn in enumerate(hooks):
        if isinstance(fn, str):
            hooks[i] = import_string(fn)
    return hooks


def on_response_settled(fn) -> None:
    """Register ``fn`` (a callable or its dotted path) for ``response_settled``."""
    _register(_response_settled, fn)


def on_committed(fn) -> None:
    """Register ``fn`` (a callable or its dotted path) for ``committed``."""
    _register(_committed, fn)


def response_settled(runtime, row, ack_status: str, actor: str, now: float) -> None:
    """Call every ``response_settled`` subscriber; an exception propagates (the caller's
    transaction rolls back)."""
    for fn in _resolved(_response_settled):
        fn(runtime, row, ack_status, actor, now)


def committed(events: list, principal: str | None) -> None:
    """Call every ``committed`` subscriber; an exception is logged, never raised."""
    for fn in _resolved(_committed):
        try:
            fn(events, principal=principal)
        except Exception:  # a subscriber must never undo or fail a committed transition
            log.exception("a subscriber to %d committed event(s) failed", len(events))
