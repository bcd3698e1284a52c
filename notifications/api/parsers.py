"""The one request parser of the API: DRF's strict JSON parser, bounded in nesting depth.

Python's ``json`` module recurses per nesting level, so a small body like ``[[[[...]]]]`` raises
``RecursionError`` (a 500) in the parser, and a body just under the interpreter's limit would
raise it later in canonical JSON or the JSONField. Bodies nested deeper than ``MAX_JSON_DEPTH``
are refused here with 400 ``parse_error`` instead.
"""
from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser

# Containers (objects and arrays) nested inside one another, the outermost counting as 1.
MAX_JSON_DEPTH = 64
# PostgreSQL cannot store U+0000 in text or jsonb; refusing it here keeps it a 400 on every backend.
NUL_MESSAGE = "JSON parse error - strings must not contain U+0000 (NUL)"
# "\ud800" is valid JSON but not text: UTF-8 (canonical JSON, hashing, the databases) cannot encode it.
SURROGATE_MESSAGE = "JSON parse error - strings must not contain lone surrogates (\\ud800-\\udfff)"


def _check_text(text: str) -> None:
    if "\x00" in text:
        raise ParseError(NUL_MESSAGE)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ParseError(SURROGATE_MESSAGE) from None


def _too_deep(value, limit: int) -> bool:
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            for key in item:
                _check_text(key)
            children = item.values()
        elif isinstance(item, list):
            children = item
        else:
            if isinstance(item, str):
                _check_text(item)
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


class BoundedJSONParser(JSONParser):
    """``application/json`` with at most ``MAX_JSON_DEPTH`` levels of nesting and no NUL or lone
    surrogate in any string or key (else 400 ``parse_error``)."""

    def parse(self, stream, media_type=None, parser_context=None):
        too_deep = ParseError(f"JSON parse error - nested deeper than {MAX_JSON_DEPTH} levels")
        try:
            data = super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise too_deep from None
        if _too_deep(data, MAX_JSON_DEPTH):
            raise too_deep
        return data
