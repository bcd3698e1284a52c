"""Adapter lookup by channel kind."""
from .console import ConsoleAdapter
from .webhook import WebhookAdapter


def default_adapters(clock) -> dict:
    """``{kind: adapter}`` for every built-in channel kind."""
    return {"webhook": WebhookAdapter(clock=clock), "console": ConsoleAdapter(clock)}
