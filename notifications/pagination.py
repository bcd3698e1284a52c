"""Keyset (cursor) pagination: the one rule for every list on ``/api/v1`` and ``/ui``.

A list is a queryset, an ``order`` (``[(field, descending), ...]`` ending in a unique field)
and a ``kind`` naming the list and its order (``"notifications:desc"``, ``"dlq"``, ...). A page
is requested with ``?limit=1..500`` (default 100 unless the list documents another) and
``?cursor=<the previous page's next>``, and answered as ``{"items": [...], "next": <cursor or
null>}``; ``next`` is null on the last page. Each page costs one query however deep it is (no
OFFSET) and rows written meanwhile never shift a page.

A cursor is opaque to clients: the URL-safe base64 of a small JSON document ``{"k": kind,
"p": [ordering values of the page's last row], "m": mac}``, where ``mac`` is an HMAC (Django's
``salted_hmac`` over ``SECRET_KEY``) of kind and position. A cursor of another list or order, a
malformed one or one whose position was edited is ``400 invalid_cursor``.
"""
import base64
import binascii
import json
import math
from dataclasses import dataclass

from django.db.models import Q
from django.utils.crypto import constant_time_compare, salted_hmac

from core import codes
from core.errors import InvalidRequest
from core.times import parse_instant



MAX_LIMIT = 500
DEFAULT_LIMIT = 100
_SALT = "uns.pagination.cursor"

Order = list[tuple[str, bool]]


@dataclass(frozen=True)
class PageRequest:
    """What a client asked for: ``limit`` rows strictly after ``after`` (the ordering values of
    the last row already seen, or None for the first page) in the list ``kind``."""

    kind: str
    limit: int
    after: list | None


def single(params, name: str) -> str | None:
    """The one value of query parameter ``name`` (None when absent); ``InvalidRequest`` (400
    ``invalid_request`` naming the field) when it is given more than once."""
    values = params.getlist(name)
    if len(values) > 1:
        raise InvalidRequest(f"query parameter {name!r} must be given at most once",
                             errors=[{"field": name, "message": "must be given at most once"}])
    return values[0] if values else None


def check_known(params, allowed: frozenset) -> None:
    """``InvalidRequest`` (400 ``invalid_request``, one error per name) when ``params`` holds a
    query parameter outside ``allowed``: a misspelt filter or cursor never silently widens a list."""
    unknown = sorted(set(params) - allowed)
    if unknown:
        raise InvalidRequest("unknown query parameters", errors=[{"field": k, "message": "unknown parameter"}
                                                                   for k in unknown])


class KnownParams:
    """A DRF view mixin: ``known_params``, the query parameters a GET takes; any other is 400
    ``invalid_request`` naming it (``check_known``), after authentication. None (the default):
    the view checks its own (a list whose filters ``runtime.lists.parse_list_filter`` reads)."""

    known_params: frozenset | None = None

    def initial(self, request, *args, **kwargs):
        super().initial(request, *args, **kwargs)
        if self.known_params is not None and request.method in ("GET", "HEAD"):
            check_known(request.query_params, self.known_params)


def parse_time(params, name: str) -> float | None:
    """Epoch seconds (``1800000000`` or ``1800000000.5``) or ISO-8601 (``2027-01-15T08:00:00Z``;
    without an offset the time is taken as UTC) from query parameter ``name``, None when absent;
    ``InvalidRequest`` (400 ``invalid_request`` naming the field) otherwise. Every list's time
    filters; the parsing itself is ``core.times.parse_instant``."""
    raw = single(params, name)
    if raw is None:
        return None
    try:
        return parse_instant(raw)
    except ValueError as exc:
        raise InvalidRequest(f"query parameter {name!r} {exc}", errors=[{"field": name, "message": str(exc)}]) from None


def _mac(kind: str, values: list) -> str:
    return salted_hmac(_SALT, json.dumps([kind, values], separators=(",", ":"))).hexdigest()[:32]


def encode_cursor(kind: str, values: list) -> str:
    """The opaque cursor of position ``values`` (JSON scalars) in list ``kind``."""
    doc = {"k": kind, "p": values, "m": _mac(kind, values)}
    return base64.urlsafe_b64encode(json.dumps(doc, separators=(",", ":")).encode()).decode().rstrip("=")


def _scalar(v) -> bool:
    return isinstance(v, str) or (isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v))


def decode_cursor(raw: str, kind: str, size: int) -> list:
    """The ``size`` ordering values in ``raw``, a cursor ``encode_cursor`` made for ``kind``.
    ``InvalidRequest`` (400 ``invalid_cursor``, field ``cursor``) for anything else: malformed,
    another list's or order's, or edited (the MAC no longer matches)."""
    try:
        doc = json.loads(base64.urlsafe_b64decode(raw + "=" * (-len(raw) % 4)))
        values, mac = doc["p"], doc["m"]
        valid = (doc["k"] == kind and isinstance(values, list) and len(values) == size
                 and all(_scalar(v) for v in values) and isinstance(mac, str)
                 and constant_time_compare(mac, _mac(kind, values)))
    except (ValueError, TypeError, KeyError, binascii.Error, UnicodeDecodeError):
        valid = False
    if not valid:
        raise InvalidRequest("query parameter 'cursor' is not a cursor this listing produced; start again without one",
                             code=codes.INVALID_CURSOR,
                             errors=[{"field": "cursor", "message": "is not a cursor this listing produced"}])
    return values


def check_limit(limit) -> int:
    """``limit`` itself when it is an integer 1..MAX_LIMIT (a bool is not); else
    ``InvalidRequest`` (400 ``invalid_request``, field ``limit``). The rule every list's page
    size follows, whatever the transport."""
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise InvalidRequest(f"limit must be an integer from 1 to {MAX_LIMIT}",
                             errors=[{"field": "limit", "message": f"must be 1..{MAX_LIMIT}"}])
    return limit


def parse_limit(params, default: int = DEFAULT_LIMIT) -> int:
    """``limit`` from query parameters (``check_limit``), ``default`` when absent."""
    raw = single(params, "limit")
    if raw is None:
        return default
    try:
        return check_limit(int(raw))
    except ValueError:
        return check_limit(0)


def page_request(params, kind: str, size: int, *, default: int = DEFAULT_LIMIT) -> PageRequest:
    """``limit`` and ``cursor`` from query parameters for list ``kind`` whose order has ``size``
    fields. Raises ``InvalidRequest`` as ``parse_limit`` and ``decode_cursor`` do."""
    limit = parse_limit(params, default)
    raw = single(params, "cursor")
    return PageRequest(kind, limit, decode_cursor(raw, kind, size) if raw else None)


TOTAL_CAP = 10_000


def bounded_total(qs, cap: int = TOTAL_CAP) -> dict:
    """``{"total": n, "total_capped": bool}`` for a list's body: how many rows ``qs`` has, counted
    up to ``cap`` (one ``COUNT`` over a ``LIMIT cap + 1`` subquery, so a deep list costs at most
    ``cap`` index entries, never a full scan); past ``cap`` it answers ``cap`` with
    ``total_capped`` true ("10000 or more"). The subquery selects the primary key only, so an
    annotation the list shows (``accepted``, read from each row's JSON) is not computed for
    every row counted."""
    n = qs.order_by().values("pk")[: cap + 1].count()
    return {"total": min(n, cap), "total_capped": n > cap}


def after_q(order: Order, values: list) -> Q:
    """Rows strictly after ``values`` in ``order`` (non-null fields; the last one unique).

    The expanded form ``a > x OR (a = x AND b > y) ...`` is ANDed with ``a >= x`` so the index
    on the leading field bounds the scan (PostgreSQL does not derive that bound from the OR:
    without it a deep page reads every row before it)."""
    q = Q()
    for i, (field, desc) in enumerate(order):
        step = Q(**{f"{field}__{'lt' if desc else 'gt'}": values[i]})
        for j in range(i):
            step &= Q(**{order[j][0]: values[j]})
        q |= step
    lead, desc = order[0]
    return Q(**{f"{lead}__{'lte' if desc else 'gte'}": values[0]}) & q


def keyset(qs, order: Order, page: PageRequest) -> tuple[list, str | None]:
    """One page of ``qs`` in ``order`` after ``page.after``: ``(rows, next cursor or None)``.
    One query: it fetches ``limit + 1`` rows to learn whether another page exists."""
    if page.after is not None:
        qs = qs.filter(after_q(order, page.after))
    qs = qs.order_by(*[f"-{f}" if desc else f for f, desc in order])
    rows = list(qs[: page.limit + 1])
    more = len(rows) > page.limit
    rows = rows[: page.limit]
    return rows, (encode_cursor(page.kind, [getattr(rows[-1], f) for f, _ in order]) if more else None)


def page_body(items: list, next_cursor: str | None, **extra) -> dict:
    """The response body of every list: ``{"items": [...], "next": <cursor or null>, **extra}``."""
    return {"items": items, "next": next_cursor, **extra}
