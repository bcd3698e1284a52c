"""Email channel: one message per attempt over SMTP, with Django's email framework.

Channel ``config`` (``validate_config`` is the one check, used by ``uns_channel``):

- ``to``: list of recipient addresses (required);
- ``from``: sender address (default ``settings.DEFAULT_FROM_EMAIL``);
- ``host``, ``port``, ``security`` (``"starttls"``, ``"tls"`` for implicit TLS, or ``"none"``),
  ``username``, ``timeout`` (seconds): the SMTP server, each defaulting to Django's
  ``EMAIL_HOST``, ``EMAIL_PORT``, ``EMAIL_USE_TLS`` / ``EMAIL_USE_SSL``, ``EMAIL_HOST_USER``,
  ``EMAIL_TIMEOUT`` (then ``UNS_WEBHOOK_TIMEOUT``);
- the password is the channel ``secret`` (else ``EMAIL_HOST_PASSWORD``); it is only handed to
  ``smtplib``'s login, never logged or put in a result.

The message: subject ``[SEVERITY] title``; a text/plain body and a text/html alternative rendered
from the one template ``uns/email/notification.html``; UTF-8 throughout; ``Message-ID``
``<uns.{notification_id}.{cycle}@{domain of the sender}>``, the same on every attempt of a
delivery cycle (as the webhook's ``webhook-id``), so a receiver drops the copy a retry sends
after an answer was lost; ``X-UNS-Attempt`` says which attempt sent it; ``Auto-Submitted:
auto-generated`` keeps vacation responders quiet.

Classification: every recipient accepted -> success. An SMTP reply code 4xx, a timeout, a
refused or dropped connection, a TLS failure -> retryable; 5xx -> permanent. Some recipients
refused: failure (the next attempt sends to all of them again, under the same Message-ID),
retryable unless every refusal is 5xx.
"""
import ipaddress
import re
import smtplib
import ssl
from datetime import datetime, timezone
from email.header import Header

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.mail import EmailMultiAlternatives, get_connection
from django.core.mail.backends.smtp import EmailBackend
from django.core.mail.message import sanitize_address
from django.core.validators import validate_email
from django.template.loader import render_to_string

from .base import AttemptContext, ChannelTarget, DeliveryResult, check_timeout

TEMPLATE = "uns/email/notification.html"
SECURITY = ("starttls", "tls", "none")
SUBJECT_MAX = 250  # characters; RFC 5322 allows longer folded headers, readers do not


_HOST_LABEL = re.compile(r"(?!-)[A-Za-z0-9_-]{1,63}(?<!-)")


def check_host(host) -> str:
    """An SMTP server's ``host``: an IP address or a DNS name of letters, digits, ``-`` and ``_``
    labels (RFC 1123; at most 253 characters). Raises ``ValueError`` otherwise: white space, a
    CR/LF (which could smuggle SMTP commands into logs or the EHLO) or a URL is not a host."""
    if not isinstance(host, str):
        raise ValueError(f"host must be a string, got {type(host).__name__}")
    try:
        return str(ipaddress.ip_address(host.strip("[]")))
    except ValueError:
        pass
    name = host[:-1] if host.endswith(".") else host
    if not 0 < len(name) <= 253 or not all(_HOST_LABEL.fullmatch(label) for label in name.split(".")):
        raise ValueError(f"host must be a DNS name or an IP address, got {host!r}")
    return host


def validate_config(config: dict) -> dict:
    """The normalised email ``config`` (``to`` a list of addresses; ``port`` an int; ``timeout``
    float seconds; unknown keys dropped). Raises ``ValueError`` naming the first bad field."""
    to = config.get("to")
    if isinstance(to, str):
        to = [a.strip() for a in to.split(",") if a.strip()]
    if not to or not isinstance(to, list):
        raise ValueError("an email channel needs at least one recipient ('to')")
    out = {"to": []}
    for address in to:
        try:
            validate_email(_bare_address(address))
        except (ValidationError, TypeError, AttributeError):
            raise ValueError(f"not an email address: {address!r}")
        out["to"].append(address)
    if config.get("from"):
        try:
            validate_email(_bare_address(config["from"]))
        except ValidationError:
            raise ValueError(f"not an email address: {config['from']!r}")
        out["from"] = config["from"]
    if config.get("host"):
        out["host"] = check_host(config["host"])
    if config.get("port") not in (None, ""):
        try:
            port = int(config["port"])
        except (TypeError, ValueError):
            raise ValueError(f"port must be an integer, got {config['port']!r}")
        if not 0 < port < 65536:
            raise ValueError(f"port out of range: {port}")
        out["port"] = port
    if config.get("security") not in (None, ""):
        if config["security"] not in SECURITY:
            raise ValueError(f"security must be one of {', '.join(SECURITY)}, got {config['security']!r}")
        out["security"] = config["security"]
    if config.get("username"):
        if not isinstance(config["username"], str) or not config["username"].isprintable():
            raise ValueError("username must be one line of printable characters")
        out["username"] = config["username"]
    if config.get("timeout") not in (None, ""):
        out["timeout"] = check_timeout(config["timeout"])
    return out


def _bare_address(value: str) -> str:
    """``ops@example.com`` out of ``UNS <ops@example.com>``."""
    value = value.strip()
    if value.endswith(">") and "<" in value:
        return value[value.rindex("<") + 1:-1]
    return value


def message_id(context: AttemptContext, sender: str) -> str:
    """``<uns.{notification_id}.{cycle}@{domain}>``: stable across the attempts of one delivery
    cycle (``domain``: the sender's, else ``uns.invalid``)."""
    domain = _bare_address(sender).rpartition("@")[2] or "uns.invalid"
    return f"<uns.{context.notification_id}.{context.cycle}@{domain}>"


def render(notification: dict, context: AttemptContext) -> tuple[str, str, str]:
    """``(subject, text, html)`` of a notification, both bodies from the one template (its
    ``created_at``, epoch seconds, shown as ISO-8601 UTC)."""
    metadata = {k: v for k, v in notification.get("metadata", {}).items() if k != "uns_resolution"}
    facts = [("Severity", notification["severity"]), ("Source", notification["source"])]
    if notification.get("intent"):
        facts.append(("Intent", notification["intent"]))
    if notification.get("agent_id"):
        facts.append(("Agent", notification["agent_id"]))
    if notification.get("dedup_key"):
        facts.append(("Dedup key", notification["dedup_key"]))
    created = notification.get("created_at")
    if isinstance(created, (int, float)) and not isinstance(created, bool):
        created = datetime.fromtimestamp(created, timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")
    if created:
        facts.append(("Created", created))
    facts += [(str(k), v if isinstance(v, str) else repr(v)) for k, v in sorted(metadata.items())]
    ctx = {
        "title": notification["title"], "body": notification.get("body", ""),
        "severity": str(notification["severity"]).upper(), "source": notification["source"],
        "intent": notification.get("intent"), "require_ack": notification.get("require_ack", False),
        "notification_id": context.notification_id, "attempt": context.attempt, "cycle": context.cycle,
        "facts": facts,
    }
    subject = " ".join(f"[{ctx['severity']}] {notification['title']}".split())  # no CR/LF in a header
    if len(subject) > SUBJECT_MAX:
        subject = subject[:SUBJECT_MAX - 1] + "\u2026"
    return (subject, render_to_string(TEMPLATE, {**ctx, "html": False}).strip() + "\n",
            render_to_string(TEMPLATE, {**ctx, "html": True}))


def subject_header(subject: str) -> str:
    """``subject`` as Django should set it: ASCII as is; otherwise RFC 2047 encoded words sized
    for the ``Subject: `` prefix. (Django's own encoding sizes the first word without it, so the
    generator folds before it and parsers read the subject with a leading space.)"""
    try:
        subject.encode("ascii")
        return subject
    except UnicodeEncodeError:
        return Header(subject, "utf-8", header_name="Subject").encode(linesep=" ")


class SMTPBackend(EmailBackend):
    """Django's SMTP backend, keeping what ``smtplib.sendmail`` says about refused recipients
    (Django's own ``_send`` drops it: a message some recipients refused counts as sent)."""

    def send_one(self, message: EmailMultiAlternatives) -> dict:
        """Open, send ``message``, close. Returns ``{recipient: (code, reply bytes)}`` of the
        recipients refused while others were accepted. Raises ``smtplib.SMTPException`` /
        ``OSError`` (from connect, TLS, login, MAIL, RCPT when all are refused, DATA); an error
        closing the connection after the server accepted the message is ignored."""
        encoding = message.encoding or settings.DEFAULT_CHARSET
        try:
            self.open()
            refused = self.connection.sendmail(
                sanitize_address(message.from_email, encoding),
                [sanitize_address(a, encoding) for a in message.recipients()],
                message.message().as_bytes(linesep="\r\n"),
            )
        except BaseException:
            self._quiet_close()
            raise
        self._quiet_close()
        return refused

    def _quiet_close(self):
        try:
            self.close()
        except (smtplib.SMTPException, OSError):
            pass


def classify(exc: BaseException) -> DeliveryResult:
    """A failed ``DeliveryResult`` for an exception of ``SMTPBackend.send_one``: reply code
    4xx retryable, 5xx permanent; connection, timeout and TLS errors retryable."""
    if isinstance(exc, smtplib.SMTPRecipientsRefused):
        codes = {rcpt: code for rcpt, (code, _msg) in exc.recipients.items()}
        permanent = all(500 <= code < 600 for code in codes.values())
        detail = ", ".join(f"{rcpt}: {code}" for rcpt, code in codes.items())
        return DeliveryResult(False, retryable=not permanent, error=f"SMTP recipients refused ({detail})",
                              metadata={"smtp_code": max(codes.values(), default=None)})
    if isinstance(exc, smtplib.SMTPResponseException):  # sender refused, DATA, HELO, AUTH, connect
        code = exc.smtp_code
        reply = exc.smtp_error.decode("utf-8", "replace") if isinstance(exc.smtp_error, bytes) else str(exc.smtp_error)
        permanent = 500 <= code < 600
        return DeliveryResult(False, retryable=not permanent,
                              error=f"SMTP {code} {' '.join(reply.split())[:300]} ({type(exc).__name__})",
                              metadata={"smtp_code": code})
    if isinstance(exc, smtplib.SMTPNotSupportedError):  # e.g. STARTTLS asked of a server without it
        return DeliveryResult(False, retryable=False, error=f"SMTP: {exc}")
    if isinstance(exc, (TimeoutError, ssl.SSLError, OSError, smtplib.SMTPException)):
        return DeliveryResult(False, retryable=True, error=f"SMTP transport error: {type(exc).__name__}: {exc}")
    raise exc


class EmailAdapter:
    """Sends one email per attempt through ``SMTPBackend`` (see the module doc). ``backend``:
    the dotted path handed to ``get_connection`` (tests may swap it)."""

    def __init__(self, backend: str = "notifications.adapters.email.SMTPBackend"):
        self._backend = backend

    def connection(self, target: ChannelTarget) -> SMTPBackend:
        """An unopened SMTP connection for ``target``: channel config over Django's settings."""
        cfg = target.config
        security = cfg.get("security") or (
            "tls" if settings.EMAIL_USE_SSL else "starttls" if settings.EMAIL_USE_TLS else "none")
        timeout = cfg.get("timeout") or settings.EMAIL_TIMEOUT or settings.UNS_WEBHOOK_TIMEOUT
        return get_connection(
            self._backend, fail_silently=False,
            host=cfg.get("host") or settings.EMAIL_HOST, port=int(cfg.get("port") or settings.EMAIL_PORT),
            username=cfg.get("username") or settings.EMAIL_HOST_USER,
            password=target.secret or settings.EMAIL_HOST_PASSWORD,
            use_tls=security == "starttls", use_ssl=security == "tls", timeout=float(timeout),
        )

    def send(self, notification: dict, target: ChannelTarget, context: AttemptContext) -> DeliveryResult:
        """Send one message to ``config["to"]``. Success carries the Message-ID as
        ``message_id`` and ``metadata["recipients"]``; a failure ``metadata["smtp_code"]`` when
        the server answered. Never raises for an SMTP or network failure."""
        to = list(target.config.get("to") or [])
        if not to:
            return DeliveryResult(False, retryable=False, error="email channel has no recipients ('to')")
        sender = target.config.get("from") or settings.DEFAULT_FROM_EMAIL
        subject, text, html = render(notification, context)
        mid = message_id(context, sender)
        message = EmailMultiAlternatives(
            subject=subject_header(subject), body=text, from_email=sender, to=to,
            headers={
                "Message-ID": mid,
                "Auto-Submitted": "auto-generated",
                "X-Auto-Response-Suppress": "All",
                "X-UNS-Notification-Id": context.notification_id,
                "X-UNS-Attempt": str(context.attempt),
                "X-UNS-Cycle": str(context.cycle),
                "X-UNS-Severity": str(notification["severity"]),
            },
        )
        message.encoding = "utf-8"
        message.attach_alternative(html, "text/html")
        try:
            refused = self.connection(target).send_one(message)
        except Exception as exc:
            return classify(exc)
        meta = {"recipients": len(to)}
        if refused:
            codes = {rcpt: code for rcpt, (code, _msg) in refused.items()}
            permanent = all(500 <= c < 600 for c in codes.values())
            detail = ", ".join(f"{rcpt}: {code}" for rcpt, code in codes.items())
            return DeliveryResult(False, retryable=not permanent, message_id=mid,
                                  error=f"SMTP refused {len(codes)} of {len(to)} recipient(s) ({detail})",
                                  metadata={**meta, "refused": len(codes), "smtp_code": max(codes.values())})
        return DeliveryResult(True, message_id=mid, metadata=meta,
                              answer=f"SMTP 250: message {mid} accepted for {len(to)} recipient(s)")
