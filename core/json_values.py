"""The JSON refusal rules: which parsed JSON values UNS refuses and the problem they get.

``refusal``/``check_value`` refuse what UNS cannot store (NUL, lone surrogates, non-finite numbers,
nesting deeper than ``MAX_JSON_DEPTH``) with 400 ``parse_error`` (``errors`` naming the field); the
HTTP parser, the WebSocket consumers (``loads``), the MCP tools and ``core.schema.parse`` all
call them.

Python's ``json`` module recurses per nesting level, so a small body like ``[[[[...]]]]`` raises
``RecursionError`` (a 500) in the parser, and a body just under the interpreter's limit would
raise it later in canonical JSON or the JSONField; both are refused here instead.
"""
import json
import math
import sys

from .errors import InvalidJSON

# Containers (objects and arrays) nested inside one another, the outermost counting as 1.
MAX_JSON_DEPTH = 64


NON_FINITE_MESSAGE = "numbers must be finite (not NaN, Infinity or out of range like 1e400)"
DEPTH_MESSAGE = f"nested deeper than {MAX_JSON_DEPTH} levels"


def _text_problem(text: str) -> str | None:
    if "\x00" in text:
        return "strings must not contain U+0000 (NUL)"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "strings must not contain lone surrogates (\\ud800-\\udfff)"
    return None


def _join(path: str, key) -> str:
    return f"{path}.{key}" if path else str(key)


def refusal(value) -> tuple[str, str] | None:
    """The first ``(field path, message)`` of a parsed JSON value UNS cannot store, or None: a NUL
    or lone surrogate in a string or key (PostgreSQL and UTF-8 cannot hold them), a non-finite
    number (``1e400`` parses as infinity; jsonb cannot hold it) or nesting deeper than
    ``MAX_JSON_DEPTH``. Paths are dotted (``metadata.v``, ``metadata.k.1``). The one definition
    of these rules: the HTTP parser, the WebSocket consumers and the MCP tools call it."""
    stack = [(value, "", 1)]
    while stack:
        item, path, depth = stack.pop()
        if isinstance(item, str):
            message = _text_problem(item)
            if message:
                return path, message
        elif isinstance(item, float):
            if not math.isfinite(item):
                return path, NON_FINITE_MESSAGE
        elif isinstance(item, (dict, list)):
            if depth > MAX_JSON_DEPTH:
                return path, DEPTH_MESSAGE
            pairs = item.items() if isinstance(item, dict) else enumerate(item)
            for key, child in pairs:
                if isinstance(key, str):
                    message = _text_problem(key)
                    if message:
                        return _join(path, key.encode("utf-8", "backslashreplace").decode()), message
                stack.append((child, _join(path, key), depth + 1))
    return None


def check_value(value) -> None:
    """Raise ``InvalidJSON`` (400 ``parse_error``, ``errors: [{"field", "message"}]``) for a value
    ``refusal`` finds: the one refusal of every transport (the HTTP parser, the WebSocket
    frames through ``loads``, the MCP arguments, ``core.schema.parse`` for Python callers)."""
    found = refusal(value)
    if found:
        field, message = found
        raise InvalidJSON(f"JSON parse error - {field or 'body'}: {message}",
                          errors=[{"field": field, "message": message}])


def too_deep() -> InvalidJSON:
    """The refusal of text nested too deep for Python's parser to return a value at all."""
    return InvalidJSON(f"JSON parse error - {DEPTH_MESSAGE}", errors=[{"field": "", "message": DEPTH_MESSAGE}])


def too_many_digits(exc: ValueError) -> InvalidJSON | None:
    """The refusal of an integer longer than Python parses (``sys.get_int_max_str_digits()``,
    4300 by default) when ``exc`` is the ``ValueError`` its parser raised for one, else None.
    Its own message names an interpreter setting, which is no answer for a client."""
    if isinstance(exc, json.JSONDecodeError) or "integer string conversion" not in str(exc):
        return None
    message = f"integers may have at most {sys.get_int_max_str_digits()} digits"
    return InvalidJSON(f"JSON parse error - {message}", errors=[{"field": "", "message": message}])


def loads(text: str):
    """Parse JSON text and ``check_value`` it: ``NaN``/``Infinity`` literals parse to floats that
    ``check_value`` refuses naming their field, as it refuses ``1e400``. Raises ``InvalidJSON``
    for a refused value (its ``parsed`` attribute holds the value that was refused, so a caller
    can still read an envelope member such as ``request_id``; None when the text was too deep
    to parse), ``ValueError`` for text that is not JSON."""
    try:
        value = json.loads(text)
    except RecursionError:
        exc = too_deep()
        exc.parsed = None
        raise exc from None
    except ValueError as error:
        exc = too_many_digits(error)
        if exc is None:
            raise
        exc.parsed = None
        raise exc from None
    try:
        check_value(value)
    except InvalidJSON as exc:
        exc.parsed = value
        raise
    return value
