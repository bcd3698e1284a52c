"""The channel-kind registry: every kind of delivery channel UNS has, named once.

``Channel.kind`` (its choices), the channel request schema, the channel service's checks, the
adapters' registry and the ``uns_channel`` command all take their kinds from here.
"""

WEBHOOK = "webhook"
CONSOLE = "console"
EMAIL = "email"
APPRISE = "apprise"

#: ``{kind: label}`` in the order UNS lists them.
LABELS: dict[str, str] = {
    WEBHOOK: "Webhook (HTTP POST)",
    CONSOLE: "In-app console inbox",
    EMAIL: "Email (SMTP)",
    APPRISE: "Chat and push through Apprise URLs",
}

KINDS: tuple[str, ...] = tuple(LABELS)
#: Django ``choices`` of ``Channel.kind``.
CHOICES: list[tuple[str, str]] = list(LABELS.items())
