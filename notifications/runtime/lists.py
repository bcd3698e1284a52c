"""The console's lists as the runtime knows them: the dead-letter queue and the inbox, their
filters (``LIST_FILTERS``, one parser: ``parse_list_filter``) and orders. The read models
(``notifications.selectors``, ``console.selectors``) page through them; a bulk action
(``runtime.bulk``) acts on exactly what the list with the same filter shows."""
import json

from django.db.models import Q

from core.errors import InvalidRequest
from core.keys import is_notification_id
from core.times import parse_instant
from core.transitions import ACK_PENDING

from ..models import AcceptedAt, Notification
from ..pagination import bounded_total, check_known, single
from . import counts
from .dlq import dead_lettered

# --- The dead-letter queue (GET /api/v1/dlq and GET /ui/dlq) ------------------------------------

DLQ_KIND = "dlq"
# Oldest accepted first; ``ix_uns_dlq_accepted`` serves the order and the keyset. The failure
# time (``Notification.failed_at``, written by the settle that dead-lettered the row) has its own
# partial index, ``ix_uns_dlq_failed``, for the console's failure-time orders.
DLQ_ORDER = [("accepted_at", False), ("id", False)]


# --- Filters of the console's lists (/ui/dlq, /ui/inbox) and of bulk actions on them ----------

def _json_list_has(field: str, value: str) -> Q:
    """Rows whose JSON list ``field`` (a key path such as ``outcome__channels_failed``) holds the
    string ``value``: a match on the list's JSON text with the quotes, which PostgreSQL and SQLite
    both answer (JSON ``contains`` is PostgreSQL-only). Channel names are slugs, so a quoted name
    never matches inside another one."""
    return Q(**{f"{field}__icontains": f'"{value}"'})


# list name -> the filters it accepts (query parameters of /ui/<list>, members of a bulk action's
# ``filter``), and the JSON list its ``channel`` filter and group read (the inbox: the channels
# requested; the DLQ: the channels that failed).
LIST_FILTERS = {
    "inbox": ("q", "source", "severity", "channel", "dedup_key"),
    "dlq": ("q", "source", "severity", "channel", "reason", "dedup_key", "failed_since", "failed_until"),
}
# Filters holding a time (epoch seconds or ISO-8601, ``core.times.parse_instant``; kept as epoch seconds text): the DLQ's failure-time range
# [failed_since, failed_until) on ``Notification.failed_at`` (a chart's bucket links here).
TIME_FILTERS = frozenset({"failed_since", "failed_until"})
CHANNEL_FIELDS = {"inbox": "notification__channels", "dlq": "outcome__channels_failed"}
MAX_FILTER_LENGTH = 500
MAX_SELECTION = 5000  # ids in a JSON filter's selection (``schemas.MAX_BULK_ITEMS``)


def _filter_q(name: str, value, channel_field: str) -> Q:
    if name == "ids":  # a bulk action's selection
        return Q(id__in=value)
    if name == "q":
        return Q(notification__title__icontains=value) | Q(notification__source__icontains=value)
    if name == "source":
        return Q(notification__source=value)
    if name == "severity":
        return Q(notification__severity=value)
    if name == "dedup_key":  # the producer's key (the column holds its digest)
        return Q(notification__dedup_key=value)
    if name == "channel":
        return _json_list_has(channel_field, value)
    if name == "reason":
        return Q(outcome__error_message__icontains=value)
    if name == "failed_since":
        return Q(failed_at__gte=float(value))
    if name == "failed_until":
        return Q(failed_at__lt=float(value))
    raise KeyError(name)


def list_filter_q(list_name: str, filters: dict | None) -> Q:
    """The AND of the non-empty ``filters`` of list ``list_name`` (``LIST_FILTERS``, as
    ``parse_list_filter`` returns them): ``q`` (title or source contains, case-insensitive),
    ``source``/``severity``/``dedup_key`` exactly, ``channel`` (one of the row's channels, see
    ``CHANNEL_FIELDS``), ``reason`` (the error message contains, case-insensitive),
    ``failed_since``/``failed_until`` (the DLQ's ``failed_at`` in [since, until), epoch seconds)
    and ``ids`` (a selection) by id."""
    q = Q()
    for name in (*LIST_FILTERS[list_name], "ids"):
        value = (filters or {}).get(name)
        if value:
            q &= _filter_q(name, value, CHANNEL_FIELDS[list_name])
    return q


def dead_letter_rows(filters: dict | None = None):
    """Queryset of the dead-lettered notifications (status FAILED, dead_letter true) matching
    ``filters`` (``list_filter_q``), not annotated (for counts and groups)."""
    return dead_lettered().filter(list_filter_q("dlq", filters))


# DLQ filters that a maintained count (``counts.DLQ_KINDS``) answers when given alone: filter name
# -> (group, match): "exact" for the filters that compare the whole value, "contains" for those
# matching part of it (``reason``; ``channel``, whose value is the JSON text of the failed
# channels, matched as ``_json_list_has`` matches it).
COUNTED_DLQ_FILTERS = {"source": ("source", "exact"), "severity": ("severity", "exact"),
                       "reason": ("reason", "contains"), "channel": ("channel", "channel")}


def dead_letter_total(filters: dict | None = None) -> dict:
    """``{"total": n, "total_capped": bool}`` of the dead letters matching ``filters`` (as
    ``dead_letter_rows``), for the DLQ list's body. On PostgreSQL, with no filter or one filter of
    ``COUNTED_DLQ_FILTERS``, the exact count from the maintained per-group counts (one query over
    the groups, not over the dead letters; never capped); otherwise ``pagination.bounded_total``
    (a count of at most ``TOTAL_CAP`` rows)."""
    given = {name: value for name, value in (filters or {}).items() if value}
    if counts.maintained() and len(given) <= 1 and set(given) <= set(COUNTED_DLQ_FILTERS):
        if not given:
            n = counts.total(counts.DLQ_KINDS["source"])
        else:
            (name, value), = given.items()
            group, match = COUNTED_DLQ_FILTERS[name]
            kind = counts.DLQ_KINDS[group]
            if match == "exact":
                n = counts.total(kind, value)
            else:
                n = counts.total(kind, f'"{value}"' if match == "channel" else value, contains=True)
        return {"total": n, "total_capped": False}
    return bounded_total(dead_letter_rows(filters))


def dead_letter_groups(by: str, filters: dict | None, limit: int) -> list[dict] | None:
    """``[{"value", "count"}]``: the ``limit`` largest groups of the dead letters by ``by`` (a
    DLQ group), largest first, from the maintained counts: one query over the
    groups, whatever the DLQ's depth. None when they cannot answer (SQLite, or a filter is
    given, or ``by`` has no maintained count): the caller groups the rows. A channel group's
    value is the list of channels."""
    if not counts.maintained() or by not in counts.DLQ_KINDS or any((filters or {}).values()):
        return None
    return [{"value": json.loads(value) if by == "channel" and value is not None else value, "count": n}
            for value, n in counts.groups(counts.DLQ_KINDS[by], limit)]


def dead_letters(filters: dict | None = None):
    """Queryset of the dead-lettered notifications matching ``filters`` (``list_filter_q``),
    annotated with ``accepted_at``; each row's ``failed_at`` is when the settle that
    dead-lettered it happened (``Notification.failed_at``). Page it with
    ``pagination.keyset(qs, DLQ_ORDER, page)`` (or a failure-time order, ``ix_uns_dlq_failed``)."""
    return dead_letter_rows(filters).annotate(accepted_at=AcceptedAt())


INBOX_ORDER = [("deadline", False), ("id", False)]


def inbox(filters: dict | None = None):
    """Queryset of the notifications awaiting a response (ack_status PENDING, with a deadline)
    matching ``filters`` (``list_filter_q``); page it in ``INBOX_ORDER`` (oldest deadline first)."""
    return Notification.objects.filter(ack_status=ACK_PENDING, deadline__isnull=False).filter(
        list_filter_q("inbox", filters))


# list name -> (queryset builder taking the parsed filter, order). ``runtime.bulk`` acts on
# exactly what the list with the same filter shows, in the order it shows it.
LISTS = {"dlq": (dead_letters, DLQ_ORDER), "inbox": (inbox, INBOX_ORDER)}


def parse_list_filter(params, list_name: str, *extra: str) -> dict:
    """The filter of console list ``list_name`` (``LIST_FILTERS``) from query parameters (a
    ``QueryDict``: ``/ui/inbox?q=&source=&severity=...``; ``limit``, ``cursor`` and the names in
    ``extra`` are also allowed there) or a JSON object (a bulk action's ``filter``): ``{name: str |
    None}`` for each of the list's filters, an empty value meaning none, and for a JSON object
    only, ``"ids"``: a selection (a list of at most ``MAX_SELECTION`` notification ids) that
    narrows the list to those rows. The one parser of these filters: ``/ui/dlq``, ``/ui/inbox``,
    their ``/groups``, ``/ui/bulk-actions/preview`` and ``POST /api/v1/bulk-actions`` call it, so
    a bulk action accepts exactly the filters of the list it came from. Raises
    ``InvalidRequest`` (field named) for an unknown or repeated query parameter (a misspelt
    filter never widens a list), a value that is not a string or longer than
    ``MAX_FILTER_LENGTH``, a time filter (``TIME_FILTERS``) that is not epoch seconds, a bad selection and an unknown member of a JSON filter."""
    names = LIST_FILTERS[list_name]

    def bad(field, message):
        return InvalidRequest(f"filter {field!r} {message}", errors=[{"field": field, "message": message}])

    if hasattr(params, "getlist"):
        check_known(params, frozenset(names) | {"limit", "cursor", *extra})
        raw = {name: single(params, name) for name in names}
    elif isinstance(params, dict):
        unknown = sorted(set(params) - set(names) - {"ids"})
        if unknown:
            raise InvalidRequest("unknown filter members", errors=[
                {"field": f"filter.{k}", "message": "unknown filter"} for k in unknown])
        raw = {name: params.get(name) for name in names}
    else:
        raise bad("filter", "must be an object")
    parsed = {}
    for name, value in raw.items():
        if value is not None and not isinstance(value, str):
            raise bad(name, "must be a string")
        if value is not None and len(value) > MAX_FILTER_LENGTH:
            raise bad(name, f"must be at most {MAX_FILTER_LENGTH} characters")
        if value and name in TIME_FILTERS:  # kept as epoch seconds, whichever form was given
            try:
                value = repr(parse_instant(value))
            except ValueError as exc:
                raise bad(name, str(exc)) from None
        parsed[name] = value or None
    if isinstance(params, dict) and "ids" in params:
        ids = params["ids"]
        if (not isinstance(ids, list) or not 0 < len(ids) <= MAX_SELECTION
                or not all(isinstance(i, str) and 0 < len(i) <= 36 for i in ids)):
            raise bad("ids", f"must be a list of 1..{MAX_SELECTION} notification ids")
        wrong = next((i for i in ids if not is_notification_id(i)), None)
        if wrong is not None:
            raise bad("ids", f"must hold notification ids (UUIDs); not one: {wrong!r}")
        parsed["ids"] = list(ids)
    return parsed
