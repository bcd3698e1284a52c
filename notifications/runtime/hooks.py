"""What the layers above the runtime register to hear of its transitions. The runtime calls
whatever is registered and never names a subscriber (imports point down).

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

log = logging.getLogger("uns.events")

_response_settled: list = []
_committed: list = []


def _register(hooks: list, fn) -> None:
    if fn not in hooks:
        hooks.append(fn)


def on_response_settled(fn) -> None:
    _register(_response_settled, fn)


def on_committed(fn) -> None:
    _register(_committed, fn)


def response_settled(runtime, row, ack_status: str, actor: str, now: float) -> None:
    for fn in _response_settled:
        fn(runtime, row, ack_status, actor, now)


def committed(events: list, principal: str | None) -> None:
    for fn in _committed:
        try:
            fn(events, principal=principal)
        except Exception:  # a subscriber must never undo or fail a committed transition
            log.exception("a subscriber to %d committed event(s) failed", len(events))
