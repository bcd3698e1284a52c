"""Keyset (cursor) pagination for the ``/ui`` read models.

A cursor is the opaque, URL-safe base64 of the JSON list of the last row's ordering values.
Pages never skip or repeat rows while others are written, and each costs one query however deep
it is (no OFFSET).
"""
import base64
import binascii
import json
from dataclasses import dataclass

from django.db.models import Q

from notifications.runtime.errors import InvalidRequest

DEFAULT_LIMIT = 50
MAX_LIMIT = 200


@dataclass(frozen=True)
class PageRequest:
    limit: int
    after: list | None


def encode_cursor(values: list) -> str:
    return base64.urlsafe_b64encode(json.dumps(values, separators=(",", ":")).encode()).decode().rstrip("=")


def decode_cursor(cursor: str, size: int) -> list:
    """The ordering values in ``cursor``; ``InvalidRequest`` (400) when it is not one of ours."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        values = json.loads(raw)
    except (binascii.Error, ValueError, UnicodeDecodeError):
        values = None
    if not isinstance(values, list) or len(values) != size or not all(
            isinstance(v, (str, int, float)) and not isinstance(v, bool) for v in values):
        raise InvalidRequest("the cursor is not valid for this list; start again without one",
                             code="invalid_cursor", errors=[{"field": "cursor", "message": "malformed"}])
    return values


def page_request(params, size: int) -> PageRequest:
    """``limit`` (1..MAX_LIMIT, default DEFAULT_LIMIT) and ``cursor`` from query parameters."""
    raw = params.get("limit", DEFAULT_LIMIT)
    try:
        limit = int(raw)
    except (TypeError, ValueError):
        limit = 0
    if not 1 <= limit <= MAX_LIMIT:
        raise InvalidRequest(f"limit must be an integer from 1 to {MAX_LIMIT}",
                             errors=[{"field": "limit", "message": f"must be 1..{MAX_LIMIT}"}])
    cursor = params.get("cursor")
    return PageRequest(limit, decode_cursor(cursor, size) if cursor else None)


def after_q(order: list[tuple[str, bool]], values: list) -> Q:
    """Rows strictly after ``values`` in ``order`` (``[(field, descending), ...]``, non-null fields)."""
    q = Q()
    for i, (field, desc) in enumerate(order):
        step = Q(**{f"{field}__{'lt' if desc else 'gt'}": values[i]})
        for j in range(i):
            step &= Q(**{order[j][0]: values[j]})
        q |= step
    return q


def keyset(qs, order: list[tuple[str, bool]], page: PageRequest) -> tuple[list, str | None]:
    """One page of ``qs`` in ``order`` after ``page.after``: ``(rows, next_cursor or None)``.
    One query: it fetches ``limit + 1`` rows to learn whether another page exists."""
    if page.after is not None:
        qs = qs.filter(after_q(order, page.after))
    qs = qs.order_by(*[f"-{f}" if desc else f for f, desc in order])
    rows = list(qs[: page.limit + 1])
    more = len(rows) > page.limit
    rows = rows[: page.limit]
    cursor = encode_cursor([getattr(rows[-1], f) for f, _ in order]) if more else None
    return rows, cursor
