"""A scripted adapter for tests: returns queued results and records every call."""
from collections import deque

from .base import DeliveryResult


class FakeAdapter:
    """``script`` is a list of ``DeliveryResult`` (or callables taking the call kwargs) consumed
    in order; when it runs out, ``default`` is returned."""

    def __init__(self, script=None, default: DeliveryResult | None = None):
        self.script = deque(script or [])
        self.default = default or DeliveryResult(True, message_id="fake")
        self.calls = []

    def send(self, notification, target, context):
        self.calls.append({"notification": notification, "target": target, "context": context})
        if not self.script:
            return self.default
        item = self.script.popleft()
        return item(notification=notification, target=target, context=context) if callable(item) else item
