"""Who may do what, in one place: the capabilities, the principal a token names, and who may see
a notification. Every transport (DRF views, the WebSocket consumers, the MCP tools, the console,
the admin) asks here; none spells a permission string or a visibility rule of its own.

- Capabilities are Django permissions (``"app_label.codename"``), named once in
  ``core.capabilities`` and granted to the seeded groups by ``GROUP_CAPABILITIES``
  (``notifications.seed``). A check reads the
  user's permissions fresh per request or message (``load_capabilities``), never across them.
- A principal is the active Django user a django-rest-knox token names (``token_principal``): one
  indexed statement, the same for ``Authorization: Bearer`` over HTTP, the WebSocket token and
  the MCP token; on PostgreSQL and SQLite that statement also reads the user's capabilities, so a
  token costs one statement for both.
- Refusals (``NotAuthenticated``, ``TokenRefused``, ``CapabilityDenied``): the problems a transport
  that is not DRF (WebSocket, MCP) answers, with the codes DRF gives the same failures over HTTP.
- Visibility (``can_see``): a console reader sees every notification; a producer sees the ones it
  submitted. Anyone else is told the notification does not exist (the unknown-id 404, so no
  existence oracle): HTTP detail, timeline and list, WebSocket subscribe, MCP get.

Spec: DESIGN.md (capabilities, fail closed), support-reference.md (visibility of a notification).
"""
import binascii
import json

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.contrib.contenttypes.models import ContentType
from django.db import connection
from django.utils import timezone
from knox.auth import TokenAuthentication
from knox.crypto import hash_token
from knox.models import get_token_model
from knox.signals import token_expired
from rest_framework.exceptions import AuthenticationFailed

from core import codes
from core.capabilities import BULK_CAPABILITIES, VIEW_CONSOLE
from core.errors import NotFound, UNSError
from notifications.runtime import rows
from notifications.runtime.rows import get as get_notification


class NotAuthenticated(UNSError):
    """No credentials came with the call (or the session that carried them has ended): DRF's
    ``not_authenticated``."""

    code = codes.NOT_AUTHENTICATED


class TokenRefused(UNSError):
    """A presented token is unknown, expired or revoked, or its user is inactive: DRF's
    ``authentication_failed``."""

    code = codes.AUTHENTICATION_FAILED


class CapabilityDenied(UNSError):
    """The principal lacks the capability (Django permission) the action needs: DRF's
    ``permission_denied``."""

    code = codes.PERMISSION_DENIED


def _granted_ids_sql(user_id: str) -> str:
    """The subquery of the ids of the permissions granted to the user ``user_id`` (an SQL
    expression: ``%s`` or a column) directly or through one of its groups, table names from the
    models: the one rule behind ``load_capabilities`` and the token statement's capabilities."""
    user_model = get_user_model()
    own = user_model.user_permissions.through._meta
    groups = user_model.groups.through._meta
    group_perms = Group.permissions.through._meta
    q = connection.ops.quote_name
    return (f"SELECT {q('permission_id')} FROM {q(own.db_table)} WHERE {q('user_id')} = {user_id} "
            f"UNION SELECT gp.{q('permission_id')} FROM {q(group_perms.db_table)} gp "
            f"JOIN {q(groups.db_table)} ug ON ug.{q('group_id')} = gp.{q('group_id')} WHERE ug.{q('user_id')} = {user_id}")


def _permissions_from() -> str:
    """``FROM`` permissions ``p`` joined to their content types ``ct`` (for ``app_label``)."""
    q = connection.ops.quote_name
    return (f"FROM {q(Permission._meta.db_table)} p "
            f"JOIN {q(ContentType._meta.db_table)} ct ON ct.{q('id')} = p.{q('content_type_id')}")


def _capabilities_sql() -> str:
    """The one statement behind ``load_capabilities``: ``(app_label, codename)`` of the
    permissions granted to user ``%s`` directly or through one of its groups (``%s`` again),
    built once per backend."""
    sql = _CAPABILITIES_SQL.get(connection.vendor)
    if sql is None:
        q = connection.ops.quote_name
        sql = _CAPABILITIES_SQL[connection.vendor] = (
            f"SELECT ct.{q('app_label')}, p.{q('codename')} {_permissions_from()} "
            f"WHERE p.{q('id')} IN ({_granted_ids_sql('%s')})")
    return sql


# The capabilities as one column of the token statement: the "app_label.codename" strings of the
# user's permissions, as an array (PostgreSQL) or a JSON array (SQLite), so a token-authenticated
# request or message reads its principal and its capabilities in one statement. Other backends:
# no column, and ``load_capabilities`` reads them with a statement of its own.
_CAPABILITY_AGGREGATES = {
    "postgresql": ("ARRAY(SELECT {label} {source})", lambda value: value),
    "sqlite": ("(SELECT json_group_array({label}) {source})", json.loads),
}


def _capabilities_column(user_id: str) -> tuple[str, object] | None:
    """``(scalar subquery, decoder)`` of the capabilities of the user ``user_id`` (an SQL
    expression) for the current backend, or None where it has no aggregate here. The decoder
    turns the column's value into a list of ``"app_label.codename"``."""
    found = _CAPABILITY_AGGREGATES.get(connection.vendor)
    if found is None:
        return None
    template, decode = found
    q = connection.ops.quote_name
    label = f"ct.{q('app_label')} || '.' || p.{q('codename')}"
    source = f"{_permissions_from()} WHERE p.{q('id')} IN ({_granted_ids_sql(user_id)})"
    return template.format(label=label, source=source), decode


_CAPABILITIES_SQL: dict[str, str] = {}


def load_capabilities(user) -> None:
    """Resolve ``user``'s permissions (its own and its groups') in one statement and keep them on
    the user object, where Django's ``ModelBackend.has_perm`` looks first (``_perm_cache``), so
    every ``has_perm`` of this request or message costs nothing more. ``ModelBackend`` alone would
    read user and group permissions in two queries; the statement is written once
    (``_capabilities_sql``), as the ORM's query compilation cost more CPU than the accept itself
    (profiled, bench/). Superusers and inactive users need no query (``User.has_perm`` answers
    for them before any backend). Read per request, never across requests: a capability removed
    takes effect on the next request or message. A user from ``token_principal`` arrives with
    them already read, by the token's statement."""
    if not user.is_active or user.is_superuser or hasattr(user, "_perm_cache"):
        return
    with connection.cursor() as cursor:
        cursor.execute(_capabilities_sql(), [user.pk, user.pk])
        user._perm_cache = {f"{app}.{codename}" for app, codename in cursor.fetchall()}


def has_capability(user, capabilities: str | tuple[str, ...]) -> bool:
    """Whether ``user`` (authenticated, active) holds ``capabilities`` (one, or any one of a
    tuple). Loads the permissions once (``load_capabilities``). Sync (ORM)."""
    if isinstance(capabilities, str):
        capabilities = (capabilities,)
    if user is None or not user.is_authenticated:
        return False
    load_capabilities(user)
    return any(user.has_perm(c) for c in capabilities)


def _token_with_user(digest: str):
    """The knox token whose digest (primary key) is ``digest``, its ``user`` attached, or None:
    one statement written once per backend (``rows.quoted_columns`` / ``rows.from_values``), the
    join ``select_related("user")`` would make without compiling a query per request. Where the
    backend has the aggregate (``_capabilities_column``), the same statement reads the user's
    capabilities and leaves them where ``load_capabilities`` looks (``_perm_cache``): the
    principal and its capabilities in one round trip, both as of this statement."""
    token_model, user_model = get_token_model(), get_user_model()
    built = _TOKEN_SQL.get(connection.vendor)
    if built is None:
        q = connection.ops.quote_name
        columns = rows.quoted_columns(token_model, "t") + rows.quoted_columns(user_model, "u")
        capabilities = _capabilities_column(f"u.{q(user_model._meta.pk.column)}")
        if capabilities is not None:
            columns.append(capabilities[0])
        built = _TOKEN_SQL[connection.vendor] = (
            f"SELECT {', '.join(columns)} "
            f"FROM {q(token_model._meta.db_table)} t JOIN {q(user_model._meta.db_table)} u "
            f"ON u.{q(user_model._meta.pk.column)} = t.{q(token_model._meta.get_field('user').column)} "
            f"WHERE t.{q(token_model._meta.pk.column)} = %s", capabilities and capabilities[1])
    sql, decode = built
    with connection.cursor() as cursor:
        cursor.execute(sql, [digest])
        found = cursor.fetchone()
    if found is None:
        return None
    split = len(token_model._meta.concrete_fields)
    end = split + len(user_model._meta.concrete_fields)
    auth_token = rows.from_values(token_model, found[:split])
    auth_token.user = rows.from_values(user_model, found[split:end])
    if decode is not None:
        auth_token.user._perm_cache = set(decode(found[end]))
    return auth_token


_TOKEN_SQL: dict[str, tuple[str, object]] = {}


def token_principal(token: bytes | str):
    """``(user, AuthToken)`` for a raw knox token (the text after ``Bearer``, the WebSocket
    ``token``, the MCP token), in one indexed statement: the token's digest (knox's primary key)
    with the user joined, read fresh every time, so a revoked token, an expiry or a deactivated
    account takes effect on the next use. An expired token is deleted when presented (knox's
    ``token_expired`` signal is sent). Sync (ORM). Raises ``rest_framework.exceptions.
    AuthenticationFailed`` for a token that is not UTF-8, unknown, revoked, expired, or whose
    user is inactive; the message never echoes the token."""
    if isinstance(token, bytes):
        # knox decodes the token as UTF-8; bytes that are not UTF-8 must be a 401, not a 500.
        try:
            token = token.decode("utf-8")
        except UnicodeDecodeError:
            raise AuthenticationFailed("Invalid token.") from None
    try:
        digest = hash_token(token)
    except (TypeError, ValueError, UnicodeError, binascii.Error):
        raise AuthenticationFailed("Invalid token.") from None
    # The digest is hex whatever the token held (a NUL byte in a filter is a PostgreSQL error).
    auth_token = _token_with_user(digest)
    if auth_token is None:
        raise AuthenticationFailed("Invalid token.")
    if auth_token.expiry is not None and auth_token.expiry < timezone.now():
        username = auth_token.user.get_username()
        auth_token.delete()
        token_expired.send(sender=TokenAuthentication, username=username, source="auth_token")
        raise AuthenticationFailed("Invalid token.")
    return TokenAuthentication().validate_user(auth_token)


def check_bulk_capability(user, action: str) -> None:
    """``CapabilityDenied`` unless ``user`` holds what bulk ``action`` needs
    (``BULK_CAPABILITIES``; an unknown action needs what no one has)."""
    needed = BULK_CAPABILITIES.get(action)
    if needed is None or not has_capability(user, needed):
        raise CapabilityDenied(f"a bulk {action} needs the {needed or 'unknown'} capability")


def can_see(user, row) -> bool:
    """Whether ``user`` may see the notification ``row``: a console reader (``VIEW_CONSOLE``)
    sees every one, a producer the ones it submitted (``row.principal`` is its username)."""
    return has_capability(user, VIEW_CONSOLE) or row.principal == user.get_username()


def visible_principal(user) -> str | None:
    """The principal whose notifications ``user`` may list: None for a console reader (all of
    them), else ``user``'s own username (``can_see`` for a listing)."""
    return None if has_capability(user, VIEW_CONSOLE) else user.get_username()


def visible_notification(user, notification_id: str):
    """The notification row ``notification_id`` when ``user`` ``can_see`` it. Sync (ORM).
    Raises ``NotFound`` for an unknown id and, with the very same error, for one ``user`` may
    not see (no existence oracle)."""
    row = get_notification(notification_id)
    if not can_see(user, row):
        raise NotFound(f"notification {notification_id} does not exist", notification_id=notification_id)
    return row
