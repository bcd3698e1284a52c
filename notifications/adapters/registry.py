"""Adapter lookup by channel kind."""

from core import channel_kinds

from .apprise import AppriseAdapter
from .console import ConsoleAdapter
from .email import EmailAdapter
from .webhook import WebhookAdapter


def default_adapters(clock) -> dict:
    """``{kind: adapter}`` for every channel kind (``core.channel_kinds``)."""
    return {channel_kinds.WEBHOOK: WebhookAdapter(clock=clock), channel_kinds.CONSOLE: ConsoleAdapter(clock),
            channel_kinds.EMAIL: EmailAdapter(), channel_kinds.APPRISE: AppriseAdapter()}
