"""Policy content: schema version 1, validation and resolution of one request.

A policy's content is JSON::

    {
      "schema_version": 1,
      "description": "...",          (optional)
      "priority": 0,                 (optional integer; see "Several ACTIVE policies" below)
      "defaults": {<settings>},
      "rules": [{"name": "...", "match": {<matchers>}, "set": {<settings>}}, ...],
      "governance": {...}            (optional; action gating rules, policies/governance/schema.py)
    }

Settings (every key optional in ``rules[].set``, all present after merging with defaults):
``channels`` (list of channel names used when a request names none), ``allowed_channels``
(list, or null for any configured channel), ``delivery_mode`` (GUARANTEED | BEST_EFFORT),
``max_attempts`` (int >= 1), ``backoff`` ({base_seconds, factor, cap_seconds, jitter}),
``dedup_window_seconds`` (number >= 0), ``require_ack`` (bool), ``ack_timeout_minutes``
(number > 0), ``escalation`` (null, ``{"target": channel name}`` or an escalation chain
``{"levels": [{"channels", "wait_seconds", "repeat"}, ...]}``: ``policies.escalation``).

Failover (optional, in ``defaults`` or a rule's ``set``; not part of the complete defaults, so
content written before it stays valid): ``fallback_channels``, ``{channel: [fallback, ...]}``
(shape checked by ``policies.schemas.fallback_channels_errors``). Resolution keeps the entries
of the effective channels and leaves the key out of ``effective`` when none applies, so the
``effective_hash`` of a policy without failover is unchanged. See ``notifications.runtime.dispatch``.

Pause (optional, the same way): ``pause_seconds`` (number, 0..3600): a new notification waits
this long before its first delivery, so a source that resolves it within the pause pages nobody
(PagerDuty's "pause incident notifications", Alertmanager's ``group_wait``;
``notifications.runtime.early``). In ``effective`` only when above 0.

Matchers (a rule matches when every matcher given matches; lists mean "any of"): ``source``,
``severity``, ``intent``, ``agent_id``, ``autonomy_mode``, ``channels`` (the request asked for
at least one of these). The first matching rule wins; ``defaults`` apply beneath it.

Several ACTIVE policies (one ACTIVE version per policy id) combine as one ordered list, fixed
when the snapshot is written (``order_policies``): every policy other than the default policy
(``uns-default``) by ``priority`` descending, then policy id ascending; the default policy last.
A request is resolved by the first policy in that order that has a matching rule: that rule's
``set`` over *that policy's own* ``defaults`` (every policy's defaults are complete, so a
policy means the same thing alone or in a set). When no rule of any policy matches, the
default policy's ``defaults`` apply. The default policy's ``priority`` is ignored: it is always
the floor, and it can be replaced by activating a new version but never retired.
"""
from copy import deepcopy

from core import codes
from core.errors import InvalidRequest
from core.keys import sha256_hex

from . import escalation
from .governance.schema import validate_block
from .schemas import fallback_channels_errors

SCHEMA_VERSION = 1
DEFAULT_POLICY_ID = "uns-default"
MATCHERS = ("source", "severity", "intent", "agent_id", "autonomy_mode", "channels")
DELIVERY_MODES = ("GUARANTEED", "BEST_EFFORT")

BUILTIN_DEFAULTS = {
    "channels": ["console"],
    "allowed_channels": None,
    "delivery_mode": "GUARANTEED",
    "max_attempts": 5,
    "backoff": {"base_seconds": 2.0, "factor": 2.0, "cap_seconds": 300.0, "jitter": 0.2},
    "dedup_window_seconds": 300.0,
    "require_ack": False,
    "ack_timeout_minutes": 15.0,
    "escalation": None,
}

# Optional settings: allowed in defaults and rules, never required (see the module doc).
OPTIONAL_SETTINGS = ("fallback_channels", "pause_seconds")
MAX_PAUSE_SECONDS = 3600.0

BOOTSTRAP_CONTENT = {
    "schema_version": SCHEMA_VERSION,
    "defaults": BUILTIN_DEFAULTS,
    "rules": [
        {"name": "critical-needs-ack", "match": {"severity": ["critical"]}, "set": {"require_ack": True}},
    ],
}


def _number(errors, path, value, *, minimum=None, exclusive=False, integer=False):
    ok_type = isinstance(value, int) if integer else isinstance(value, (int, float))
    if isinstance(value, bool) or not ok_type:
        errors.append({"field": path, "message": "must be an integer" if integer else "must be a number"})
        return
    if minimum is not None and (value <= minimum if exclusive else value < minimum):
        errors.append({"field": path, "message": f"must be {'>' if exclusive else '>='} {minimum}"})


def _names(errors, path, value, *, nullable=False):
    if value is None and nullable:
        return
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        errors.append({"field": path, "message": "must be a list of non-empty strings"})


def _validate_settings(errors, prefix, settings, *, complete):
    if not isinstance(settings, dict):
        errors.append({"field": prefix, "message": "must be an object"})
        return
    for key in settings:
        if key not in BUILTIN_DEFAULTS and key not in OPTIONAL_SETTINGS:
            errors.append({"field": f"{prefix}.{key}", "message": "unknown setting"})
    if complete:
        for key in BUILTIN_DEFAULTS:
            if key not in settings:
                errors.append({"field": f"{prefix}.{key}", "message": "is required"})
    if "channels" in settings:
        _names(errors, f"{prefix}.channels", settings["channels"])
    if "allowed_channels" in settings:
        _names(errors, f"{prefix}.allowed_channels", settings["allowed_channels"], nullable=True)
    if "delivery_mode" in settings and settings["delivery_mode"] not in DELIVERY_MODES:
        errors.append({"field": f"{prefix}.delivery_mode", "message": f"must be one of {list(DELIVERY_MODES)}"})
    if "max_attempts" in settings:
        _number(errors, f"{prefix}.max_attempts", settings["max_attempts"], minimum=1, integer=True)
    if "backoff" in settings:
        backoff = settings["backoff"]
        if not isinstance(backoff, dict):
            errors.append({"field": f"{prefix}.backoff", "message": "must be an object"})
        else:
            for key in ("base_seconds", "factor", "cap_seconds", "jitter"):
                if key not in backoff:
                    errors.append({"field": f"{prefix}.backoff.{key}", "message": "is required"})
                else:
                    _number(errors, f"{prefix}.backoff.{key}", backoff[key], minimum=0)
            if isinstance(backoff.get("jitter"), (int, float)) and backoff["jitter"] > 1:
                errors.append({"field": f"{prefix}.backoff.jitter", "message": "must be <= 1"})
    if "dedup_window_seconds" in settings:
        _number(errors, f"{prefix}.dedup_window_seconds", settings["dedup_window_seconds"], minimum=0)
    if "require_ack" in settings and not isinstance(settings["require_ack"], bool):
        errors.append({"field": f"{prefix}.require_ack", "message": "must be a boolean"})
    if "ack_timeout_minutes" in settings:
        _number(errors, f"{prefix}.ack_timeout_minutes", settings["ack_timeout_minutes"], minimum=0, exclusive=True)
    if "pause_seconds" in settings:
        _number(errors, f"{prefix}.pause_seconds", settings["pause_seconds"], minimum=0)
        if isinstance(settings["pause_seconds"], (int, float)) and settings["pause_seconds"] > MAX_PAUSE_SECONDS:
            errors.append({"field": f"{prefix}.pause_seconds", "message": f"must be <= {MAX_PAUSE_SECONDS:g}"})
    if "fallback_channels" in settings:
        errors.extend(fallback_channels_errors(settings["fallback_channels"], f"{prefix}.fallback_channels"))
    if "escalation" in settings:
        errors.extend(escalation.check(settings["escalation"], f"{prefix}.escalation"))


def _nul_paths(value, path: str):
    """Paths of strings (keys included) holding a NUL character, which PostgreSQL's text and
    jsonb cannot store."""
    if isinstance(value, str):
        if "\x00" in value:
            yield path
    elif isinstance(value, dict):
        for key, item in value.items():
            sub = f"{path}.{key}" if path else str(key)
            if "\x00" in str(key):
                yield sub
            else:
                yield from _nul_paths(item, sub)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _nul_paths(item, f"{path}[{i}]")


def validate_content(content) -> list[dict]:
    """Return the list of ``{"field", "message"}`` errors in ``content`` (empty when valid)."""
    errors: list[dict] = []
    if not isinstance(content, dict):
        return [{"field": "", "message": "policy content must be an object"}]
    nul = [{"field": p, "message": "must not contain NUL characters"} for p in _nul_paths(content, "")]
    if nul:
        return nul
    if content.get("schema_version") != SCHEMA_VERSION:
        errors.append({"field": "schema_version", "message": f"must be {SCHEMA_VERSION}"})
    for key in content:
        if key not in ("schema_version", "defaults", "rules", "description", "priority", "governance"):
            errors.append({"field": key, "message": "unknown key"})
    if "description" in content and not isinstance(content["description"], str):
        errors.append({"field": "description", "message": "must be a string"})
    if "priority" in content:
        _number(errors, "priority", content["priority"], integer=True)
    _validate_settings(errors, "defaults", content.get("defaults"), complete=True)
    if "governance" in content:  # the governance block (policies/governance/schema.py) checks itself
        errors.extend(validate_block(content["governance"]))
    rules = content.get("rules", [])
    if not isinstance(rules, list):
        errors.append({"field": "rules", "message": "must be a list"})
        rules = []
    for i, rule in enumerate(rules):
        prefix = f"rules[{i}]"
        if not isinstance(rule, dict):
            errors.append({"field": prefix, "message": "must be an object"})
            continue
        if not isinstance(rule.get("name"), str) or not rule.get("name"):
            errors.append({"field": f"{prefix}.name", "message": "is required"})
        match = rule.get("match", {})
        if not isinstance(match, dict):
            errors.append({"field": f"{prefix}.match", "message": "must be an object"})
        else:
            for key, value in match.items():
                if key not in MATCHERS:
                    errors.append({"field": f"{prefix}.match.{key}", "message": f"unknown matcher; use {list(MATCHERS)}"})
                elif not (isinstance(value, str) or (isinstance(value, list) and all(isinstance(v, str) for v in value))):
                    errors.append({"field": f"{prefix}.match.{key}", "message": "must be a string or a list of strings"})
        _validate_settings(errors, f"{prefix}.set", rule.get("set", {}), complete=False)
    return errors


def content_hash(content) -> str:
    """SHA-256 of the canonical content JSON (``policy_hash``)."""
    return sha256_hex(content)


def _matches(match: dict, request: dict) -> bool:
    for key, expected in match.items():
        wanted = [expected] if isinstance(expected, str) else expected
        if key == "channels":
            if not set(request.get("channels") or ()) & set(wanted):
                return False
        elif request.get(key) not in wanted:
            return False
    return True


def match_rule(content: dict, request: dict) -> dict | None:
    """The first rule of ``content`` whose matchers all match ``request``, or None."""
    for rule in content.get("rules", []):
        if _matches(rule.get("match", {}), request):
            return rule
    return None


def order_policies(entries: list[dict]) -> list[dict]:
    """Evaluation order of ACTIVE policies (``{"policy_id", "content", ...}`` items): by
    ``priority`` descending, then policy id; the default policy always last."""
    def key(entry):
        is_default = entry["policy_id"] == DEFAULT_POLICY_ID
        return (is_default, -int(entry["content"].get("priority", 0)) if not is_default else 0, entry["policy_id"])

    return sorted(entries, key=key)


def snapshot_body(entries: list[dict]) -> dict:
    """The JSON a snapshot stores for an ACTIVE set: ``{"schema_version", "policies"}`` with the
    policies in evaluation order."""
    return {"schema_version": SCHEMA_VERSION, "policies": order_policies(entries)}


def resolve_in_set(entries: list[dict], request: dict) -> tuple[dict, dict, str | None]:
    """Resolve ``request`` against ACTIVE policies already in evaluation order.

    Returns ``(entry, effective, rule_name)``: the policy that resolved the request (the first
    with a matching rule, else the default policy), its effective settings and the rule name
    (None when defaults applied). Raises ``LookupError`` when no rule matches and the set holds
    no default policy, and ``InvalidRequest`` as ``resolve_settings`` does.
    """
    chosen = next((e for e in entries if match_rule(e["content"], request) is not None), None)
    if chosen is None:
        chosen = next((e for e in entries if e["policy_id"] == DEFAULT_POLICY_ID), None)
    if chosen is None:
        raise LookupError("no ACTIVE policy matched the request and no default policy is ACTIVE")
    effective, rule = resolve_settings(chosen["content"], request)
    return chosen, effective, rule


def resolve_settings(content: dict, request: dict) -> tuple[dict, str | None]:
    """Resolve ``request`` (a validated SendNotificationRequest dict) against ``content``.

    Returns ``(effective, rule_name)``: the effective settings with ``channels`` made concrete
    (the request's channels when it names any, else the policy's), ``require_ack`` true when
    either the policy or the request asks for it, ``fallback_channels`` only for those
    channels (absent when none has a fallback) and ``pause_seconds`` only when above 0. Raises ``InvalidRequest`` when the request
    names a channel that ``allowed_channels`` excludes.
    """
    effective = deepcopy(content["defaults"])
    rule_name = None
    rule = match_rule(content, request)
    if rule is not None:
        effective.update(deepcopy(rule.get("set", {})))
        rule_name = rule["name"]
    asked = request.get("channels") or []
    allowed = effective.pop("allowed_channels")
    if asked:
        if allowed is not None:
            refused = [c for c in asked if c not in allowed]
            if refused:
                raise InvalidRequest(
                    f"policy does not allow channel(s) {refused}",
                    code=codes.CHANNEL_NOT_ALLOWED,
                    errors=[{"field": "channels", "message": f"not allowed by policy: {refused}"}],
                )
        effective["channels"] = list(dict.fromkeys(asked))
    effective["require_ack"] = bool(effective["require_ack"] or request.get("require_ack"))
    fallbacks = {ch: list(fb) for ch, fb in (effective.pop("fallback_channels", None) or {}).items()
                 if ch in effective["channels"]}
    if fallbacks:
        effective["fallback_channels"] = fallbacks
    if not effective.get("pause_seconds"):
        effective.pop("pause_seconds", None)
    return effective, rule_name
