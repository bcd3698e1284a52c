"""The channel service: the one writer of ``uns_channels``.

Verbs: ``create``, ``update``, ``rotate_secret``, ``enable``, ``disable``, ``delete``, and
``send_test`` (no state change). ``uns_channel``, the Django admin and ``/api/v1/channels`` call
these and nothing else writes a channel. Each write is one transaction that locks the channel
row, changes it and appends its ``channel_audit_records`` row (actor and time; the action names
are ``CREATE``, ``UPDATE``, ``ROTATE_SECRET``, ``ENABLE``, ``DISABLE``, ``DELETE``, in the style
of the policy audit's). An audit row names which fields changed, never a value: a webhook URL
may carry credentials and the secret is the credential.

Rules, each checked once here:

- ``config`` per kind (``validate_config``): webhook ``url`` (``webhook.validate_url``) and
  ``timeout``; email ``to``, ``from``, ``host``, ``port``, ``security``, ``username``,
  ``timeout`` (``email.validate_config``); apprise ``timeout`` (its URLs are the secret,
  ``apprise.validate_urls``); console nothing. Every ``timeout`` is ``base.check_timeout``'s.
  Unknown members are refused, not dropped.
- Disabling or deleting a channel the ACTIVE policy set routes to (``policies.store.routes_to``:
  its ``channels`` or an ``escalation.target``) is refused with ``Conflict``
  ``channel_routed``: every intake resolving to it would fail. The check runs under the
  intake's revision lock (``policies.resolution.lock_current``, ``FOR SHARE`` on PostgreSQL),
  so an activation that would route to the channel is ordered against it: whichever commits
  second sees the other (activation refuses a disabled channel, ``store.channel_errors``).

Errors are the runtime's typed errors: ``InvalidRequest`` ``invalid_channel`` (with
``errors: [{"field", "message"}]``), ``NotFound`` ``channel_not_found``, ``Conflict``
``channel_exists`` / ``channel_routed``; the HTTP handler renders them as problem details.
"""
import time
import uuid
from dataclasses import dataclass

from django.core.exceptions import ValidationError
from django.core.validators import validate_slug
from django.db import IntegrityError, transaction

from core import channel_kinds, codes
from core.actors import check_actor
from core.errors import Conflict, InvalidRequest, NotFound
from core.keys import new_id
from policies import resolution, store

from ..adapters import apprise as apprise_channel
from ..adapters import email as email_channel
from ..adapters import webhook as webhook_channel
from ..adapters.base import AttemptContext, ChannelTarget, check_timeout
from .. import people_audit
from ..models import Channel, ChannelAuditRecord
from ..redaction import mask_string

# Audit actions (``channel_audit_records.action``).
CREATE, UPDATE, ROTATE_SECRET, ENABLE, DISABLE, DELETE = (
    "CREATE", "UPDATE", "ROTATE_SECRET", "ENABLE", "DISABLE", "DELETE")

KINDS = channel_kinds.KINDS
CONFIG_FIELDS = {
    Channel.KIND_WEBHOOK: ("url", "timeout"),
    Channel.KIND_EMAIL: ("to", "from", "host", "port", "security", "username", "timeout"),
    Channel.KIND_APPRISE: ("timeout",),
    Channel.KIND_CONSOLE: (),
}
MAX_NAME = 64
ANSWER_MAX = 200  # characters of a provider's answer ``send_test`` reports


def _invalid(field: str, message: str) -> InvalidRequest:
    return InvalidRequest(f"{field}: {message}", code=codes.INVALID_CHANNEL, errors=[{"field": field, "message": message}])


def check_name(name) -> str:
    """A channel name: a slug (letters, digits, ``-``, ``_``) of 1-64 characters. Raises
    ``InvalidRequest``."""
    if not isinstance(name, str) or not 0 < len(name) <= MAX_NAME:
        raise _invalid("name", f"must be 1-{MAX_NAME} characters")
    try:
        validate_slug(name)
    except ValidationError:
        raise _invalid("name", "must hold only letters, digits, '-' or '_'") from None
    return name


def _check_secret(kind: str, secret: str) -> None:
    """A webhook signing secret or an SMTP password: one line of printable characters (a trailing
    newline pasted from a file would otherwise become part of the key), and a Standard Webhooks
    ``whsec_`` secret must be base64 after its prefix (``webhook.whsec_key`` decodes it; a
    receiver's verifier would reject signatures made with anything else). Raises
    ``InvalidRequest`` naming ``secret``; the message never holds the secret."""
    if any(not ch.isprintable() for ch in secret):
        raise _invalid("secret", "must be one line of printable characters (no newline, tab or control character)")
    if kind == Channel.KIND_WEBHOOK and secret.startswith("whsec_") and not webhook_channel.whsec_key(secret):
        raise _invalid("secret", "a whsec_ secret must be base64 after the prefix (Standard Webhooks)")


def validate_config(kind: str, config, secret: str = "") -> dict:
    """The normalised ``config`` of a channel of ``kind`` with ``secret`` (see the module doc).
    Raises ``InvalidRequest`` ``invalid_channel`` naming the field; the message never holds a
    secret (URLs are masked)."""
    if kind not in KINDS:
        raise _invalid("kind", f"must be one of {', '.join(KINDS)}")
    if not isinstance(config, dict):
        raise _invalid("config", "must be an object")
    if not isinstance(secret, str):
        raise _invalid("secret", "must be a string")
    unknown = sorted(set(config) - set(CONFIG_FIELDS[kind]))
    if unknown:
        raise _invalid(f"config.{unknown[0]}", f"unknown field for a {kind} channel")
    if kind in (Channel.KIND_WEBHOOK, Channel.KIND_EMAIL) and secret:
        _check_secret(kind, secret)
    if kind == Channel.KIND_EMAIL:
        try:
            return email_channel.validate_config(config)
        except ValueError as exc:
            raise _invalid("config", mask_string(str(exc))) from None
    out = {}
    if kind == Channel.KIND_WEBHOOK:
        if not config.get("url"):
            raise _invalid("config.url", "a webhook channel needs a url")
        try:
            out["url"] = webhook_channel.validate_url(config["url"])
        except ValueError as exc:
            raise _invalid("config.url", str(exc)) from None
    if kind == Channel.KIND_APPRISE:
        try:
            apprise_channel.validate_urls(secret)
        except ValueError as exc:
            raise _invalid("secret", str(exc)) from None
    if kind == Channel.KIND_CONSOLE and secret:
        raise _invalid("secret", "an in-app console channel has no secret")
    if config.get("timeout") is not None:
        try:
            out["timeout"] = check_timeout(config["timeout"])
        except ValueError as exc:
            raise _invalid("config.timeout", str(exc)) from None
    return out


def _audit(channel: Channel, action: str, *, actor: str, at: float, detail: dict | None = None) -> ChannelAuditRecord:
    people_audit.record(actor, people_audit.CHANNEL_ACTIONS[action], channel.name, at=at,
                        title=f"{channel.name} ({channel.kind})", detail=detail)
    return ChannelAuditRecord.objects.create(id=new_id(), channel=channel.name, kind=channel.kind, action=action,
                                             actor=actor, at=at, detail=detail or {})


def _locked(name) -> Channel:
    if not isinstance(name, str) or not name or len(name) > MAX_NAME or "\x00" in name:
        raise NotFound(f"no channel {name!r}", code=codes.CHANNEL_NOT_FOUND)
    row = Channel.objects.select_for_update().filter(name=name).first()
    if row is None:
        raise NotFound(f"no channel {name!r}", code=codes.CHANNEL_NOT_FOUND, channel=name)
    return row


def routed_refusal(target: str, *, lock: bool, code: str, noun: str) -> Conflict | None:
    """The ``Conflict`` (``code``) to raise when the ACTIVE policy set routes to ``target`` (a
    channel name, or an on-call target such as ``schedule:db``), else None; its detail names the
    target as ``noun`` and lists the routes, its extras are ``{noun or "target"}``, ``revision``
    and ``routes``. ``lock``: read the set under the intake's revision lock (inside the caller's
    transaction), as a disable or delete does; without it, a plain read (for a form's early
    message). The one refusal of removing what the ACTIVE set still names."""
    current = resolution.lock_current()[0] if lock else resolution.current_or_bootstrap()
    routes = store.routes_to(current.policies, target)
    if not routes:
        return None
    where = ", ".join(f"{r['policy_id']} v{r['version']} ({r['field']})" for r in routes)
    named = f"{noun} {target!r}" if noun else repr(target)
    return Conflict(f"{named} is routed to by the ACTIVE policy set (revision {current.revision}): {where}; "
                    "activate policy versions that no longer name it first", code=code,
                    **{noun or "target": target}, revision=current.revision, routes=routes)


def routing_refusal(name: str, *, lock: bool = False) -> Conflict | None:
    """The ``Conflict`` ``channel_routed`` to raise when the ACTIVE policy set routes to channel
    ``name``, else None (``routed_refusal``)."""
    return routed_refusal(name, lock=lock, code=codes.CHANNEL_ROUTED, noun="channel")


def create(name: str, kind: str, config: dict | None = None, secret: str = "", *, actor: str, enabled: bool = True,
           clock=time.time) -> Channel:
    """A new channel (audit ``CREATE``). Raises ``InvalidRequest`` or ``Conflict``
    ``channel_exists``."""
    check_actor(actor)
    check_name(name)
    clean = validate_config(kind, config if config is not None else {}, secret)
    if not isinstance(enabled, bool):
        raise _invalid("enabled", "must be a boolean")
    try:
        with transaction.atomic():
            row = Channel.objects.create(name=name, kind=kind, config=clean, secret=secret, enabled=enabled)
            _audit(row, CREATE, actor=actor, at=clock(),
                   detail={"config": sorted(clean), "secret": bool(secret), "enabled": enabled})
    except IntegrityError:
        raise Conflict(f"a channel named {name!r} exists", code=codes.CHANNEL_EXISTS, channel=name) from None
    return row


def update(name: str, changes: dict, *, actor: str, clock=time.time) -> Channel:
    """Change config members of channel ``name``: ``changes`` maps a member to its new value,
    ``None`` removes it (the kind's default applies). The result is validated whole. Audit
    ``UPDATE`` with the changed members (none changed: no row, the channel as it is). The kind
    cannot change (create another channel). Raises ``NotFound`` or ``InvalidRequest``."""
    check_actor(actor)
    if not isinstance(changes, dict):
        raise _invalid("config", "must be an object")
    with transaction.atomic():
        row = _locked(name)
        merged = {k: v for k, v in {**row.config, **changes}.items() if v is not None}
        clean = validate_config(row.kind, merged, row.secret)
        changed = sorted(k for k in set(clean) | set(row.config) if clean.get(k) != row.config.get(k))
        if changed:
            Channel.objects.filter(pk=row.pk).update(config=clean)
            row.config = clean
            _audit(row, UPDATE, actor=actor, at=clock(), detail={"changed": changed})
    return row


def rotate_secret(name: str, secret: str, *, actor: str, clock=time.time) -> Channel:
    """Replace the secret of channel ``name`` (webhook signing key, SMTP password, Apprise URLs)
    with ``secret``; ``""`` clears it where the kind allows none (webhook: unsigned; email:
    Django's ``EMAIL_HOST_PASSWORD``). Audit ``ROTATE_SECRET``. Raises ``NotFound`` or
    ``InvalidRequest``."""
    check_actor(actor)
    with transaction.atomic():
        row = _locked(name)
        if row.kind == Channel.KIND_CONSOLE:
            raise _invalid("secret", "an in-app console channel has no secret")
        validate_config(row.kind, row.config, secret)
        Channel.objects.filter(pk=row.pk).update(secret=secret)
        row.secret = secret
        _audit(row, ROTATE_SECRET, actor=actor, at=clock(), detail={"secret": bool(secret)})
    return row


def enable(name: str, *, actor: str, clock=time.time) -> Channel:
    """Enable channel ``name`` (audit ``ENABLE``; already enabled: no change, no row). Raises
    ``NotFound``."""
    return _set_enabled(name, True, actor=actor, clock=clock)


def disable(name: str, *, actor: str, clock=time.time) -> Channel:
    """Disable channel ``name`` (audit ``DISABLE``; already disabled: no change, no row).
    Raises ``NotFound`` or ``Conflict`` ``channel_routed`` (the ACTIVE policy set routes to it;
    nothing changes)."""
    return _set_enabled(name, False, actor=actor, clock=clock)


def _set_enabled(name: str, enabled: bool, *, actor: str, clock) -> Channel:
    check_actor(actor)
    refusal = None
    with transaction.atomic():
        if not enabled:
            refusal = routing_refusal(name, lock=True)  # the revision lock first, as intake and activation
        row = _locked(name)
        if row.enabled == enabled:
            return row
        if not enabled and refusal is not None:
            raise refusal
        Channel.objects.filter(pk=row.pk, enabled=row.enabled).update(enabled=enabled)
        row.enabled = enabled
        _audit(row, ENABLE if enabled else DISABLE, actor=actor, at=clock())
    return row


def delete(name: str, *, actor: str, clock=time.time) -> None:
    """Delete channel ``name`` (audit ``DELETE``). Refused like ``disable`` when the ACTIVE
    policy set routes to it. Raises ``NotFound`` or ``Conflict`` ``channel_routed``."""
    check_actor(actor)
    with transaction.atomic():
        refusal = routing_refusal(name, lock=True)
        row = _locked(name)
        if refusal is not None:
            raise refusal
        _audit(row, DELETE, actor=actor, at=clock())
        row.delete()


@dataclass(frozen=True)
class TestResult:
    """What ``send_test`` observed: ``success``; ``answer``, the provider's answer (HTTP status
    and the first bytes of the body, the SMTP reply, the Apprise result), masked; ``error``."""

    success: bool
    answer: str
    error: str | None


def send_test(name: str, *, adapters: dict, actor: str, clock=time.time) -> TestResult:
    """Send one test message through channel ``name``'s real adapter (``adapters``: the
    runtime's ``{kind: adapter}``), outside any transaction, enabled or not. Nothing is
    recorded but a CHANNEL_TESTED people-audit row (``actor``; ``success``; after the send, in a
    transaction of its own) and, for the in-app console channel, its inbox entry. The
    answer and error are masked with the channel's secret (``mask_string``). Raises
    ``NotFound`` (or ``Conflict`` ``no_adapter`` when ``adapters`` lacks the kind), ``InvalidRequest``
    ``actor_required``."""
    check_actor(actor)
    row = Channel.objects.filter(name=name).first() if isinstance(name, str) and "\x00" not in name else None
    if row is None:
        raise NotFound(f"no channel {name!r}", code=codes.CHANNEL_NOT_FOUND)
    result = test_target(row.name, row.kind, row.config, row.secret, adapters=adapters, clock=clock)
    with transaction.atomic():
        people_audit.record(actor, "CHANNEL_TESTED", row.name, at=clock(), title=f"{row.name} ({row.kind})",
                            detail={"success": bool(result.success)})
    return result


def test_target(name: str, kind: str, config: dict, secret: str, *, adapters: dict, clock=time.time) -> TestResult:
    """Send one test message to the target ``name`` of ``kind`` (``config``, ``secret``) through
    its real adapter: ``send_test``'s path, and the verification of a person's contact method
    (``runtime.oncall.verify_contact_method``). Outside any transaction; the answer and error
    are masked with the secret. Raises ``Conflict`` ``no_adapter``."""
    now = clock()
    test_id = str(uuid.uuid4())
    notification = {
        "id": test_id, "source": "uns-channel-test", "title": f"UNS test message for channel {name}",
        "body": "A test sent by an operator to check this channel. Nothing to do.", "severity": "info",
        "intent": None, "require_ack": False, "dedup_key": None, "metadata": {"uns_test": True}, "created_at": now,
    }
    context = AttemptContext(notification_id=test_id, attempt=1, cycle=1, cycle_attempt=1, lease_token="test")
    target = ChannelTarget(name=name, kind=kind, config=config, secret=secret)
    adapter = adapters.get(kind)
    if adapter is None:
        raise Conflict(f"this process has no adapter for {kind!r} channels", code=codes.NO_ADAPTER, kind=kind)
    result = adapter.send(notification, target, context)
    secrets = frozenset(s for s in [secret, *apprise_channel.parse_urls(secret)] if len(s) >= 4)
    answer = result.answer or (f"ok (message id {result.message_id})" if result.success else "")
    return TestResult(result.success, mask_string(answer, secrets)[:ANSWER_MAX * 2],
                      None if result.error is None else mask_string(result.error, secrets))
