"""The one request parser of the API: ``application/json`` bodies refused by the JSON rules of
``core.json_values`` (400 ``parse_error``), and the ``Idempotency-Key`` header rule."""
import re

from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser

from core.errors import InvalidJSON, InvalidRequest
from core.json_values import check_value, too_deep, too_many_digits

# An sf-string's characters (RFC 8941 section 3.3.3): printable ASCII, space to tilde.
_VISIBLE_ASCII = re.compile(r"[\x20-\x7e]+")




class BoundedJSONParser(JSONParser):
    """``application/json`` whose value ``check_value`` accepts. A refusal is DRF's
    ``ParseError`` (what DRF and the integrations' handlers expect of a parser) raised from the
    ``InvalidJSON`` every transport gives; ``problem_handler.problem_exception_handler`` renders that
    cause, so the HTTP problem body (``parse_error``, ``errors`` naming the field) is the one
    WebSocket and MCP answer. ``NaN``/``Infinity`` literals parse (``strict = False``) only to be
    refused by ``check_value`` with their field, like ``1e400``."""

    strict = False

    def parse(self, stream, media_type=None, parser_context=None):
        try:
            data = super().parse(stream, media_type, parser_context)
        except RecursionError:
            refused = too_deep()
            raise ParseError(refused.detail) from refused
        except ParseError as exc:  # DRF's, raised while handling the parser's ValueError
            refused = too_many_digits(exc.__context__) if isinstance(exc.__context__, ValueError) else None
            if refused is None:
                raise
            raise ParseError(refused.detail) from refused
        try:
            check_value(data)
        except InvalidJSON as refused:
            raise ParseError(refused.detail) from refused
        return data


def idempotency_header(request) -> str | None:
    """The request's ``Idempotency-Key`` header (None when absent) where it stands for a body's
    ``idempotency_key`` (accept, governance decisions; the responses' header is their
    ``request_id``, ``runtime.requests.check_request_id``, one rule with the WebSocket). Raises
    ``InvalidRequest`` (400, ``errors`` naming ``idempotency_key``) when it is empty, when it holds
    a comma (a header sent twice arrives joined by one: which key was meant cannot be known), and
    when it holds anything but printable ASCII (the header is an RFC 8941 sf-string,
    draft-ietf-httpapi-idempotency-key-header; a raw byte 0xff arrives as "ÿ", a tab as a tab)."""
    key = request.headers.get("Idempotency-Key")
    if key is None:
        return None
    if not key.strip():
        message = "empty"
    elif "," in key:
        message = "sent more than once, or holds a comma"
    elif not _VISIBLE_ASCII.fullmatch(key):
        message = "holds a character outside printable ASCII (RFC 8941 sf-string)"
    else:
        return key
    raise InvalidRequest("Idempotency-Key header must be one non-empty key",
                         errors=[{"field": "idempotency_key", "message": message}])


def with_idempotency_header(body, header_key: str | None):
    """``body`` with the ``Idempotency-Key`` header's value (``idempotency_header``) as its
    ``idempotency_key`` (the header stands in for the field; both given must agree). A non-object
    ``body`` is returned as it is, for the schema to refuse. Raises ``InvalidRequest`` (400,
    ``errors`` naming ``idempotency_key``) when they disagree. Used by intake and governance
    decisions."""
    if header_key is None or not isinstance(body, dict):
        return body
    if body.get("idempotency_key") not in (None, header_key):
        raise InvalidRequest("Idempotency-Key header and idempotency_key field disagree",
                             errors=[{"field": "idempotency_key", "message": "differs from the header"}])
    return {**body, "idempotency_key": header_key}
