"""Adapter lookup by channel kind."""
from .apprise import AppriseAdapter
from .console import ConsoleAdapter
from .email import EmailAdapter
from .webhook import WebhookAdapter


def default_adapters(clock) -> dict:
    """``{kind: adapter}`` for every built-in channel kind (``Channel.KINDS``)."""
    return {"webhook": WebhookAdapter(clock=clock), "console": ConsoleAdapter(clock), "email": EmailAdapter(),
            "apprise": AppriseAdapter()}
