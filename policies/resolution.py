"""Policy resolution for intake: which policy, revision and effective settings apply.

This is the seam the runtime calls inside the intake transaction. Until the durable policy
authority holds an ACTIVE snapshot, the bootstrap default policy (``content.BOOTSTRAP_CONTENT``,
or the JSON file named by ``UNS_BOOTSTRAP_POLICY_FILE``) resolves at revision 1.
"""
import json
from dataclasses import dataclass
from functools import lru_cache

from django.conf import settings

from notifications.runtime.errors import PolicyUnavailable
from notifications.runtime.identity import sha256_hex

from .content import BOOTSTRAP_CONTENT, content_hash, resolve_settings, validate_content

BOOTSTRAP_POLICY_ID = "uns-default"


@dataclass(frozen=True)
class Resolution:
    """What acceptance freezes on a notification (ACCEPTED payload, ``metadata.uns_resolution``)."""

    policy_id: str
    policy_hash: str
    revision: int
    effective: dict
    effective_hash: str
    rule: str | None

    def as_dict(self) -> dict:
        return {
            "policy_id": self.policy_id,
            "policy_hash": self.policy_hash,
            "revision": self.revision,
            "effective": self.effective,
            "effective_hash": self.effective_hash,
            "rule": self.rule,
        }


@lru_cache(maxsize=1)
def bootstrap_content() -> dict:
    """The bootstrap policy content; a configured file that is unreadable or invalid fails closed."""
    path = settings.UNS_BOOTSTRAP_POLICY_FILE
    if not path:
        return BOOTSTRAP_CONTENT
    try:
        with open(path, encoding="utf-8") as fh:
            content = json.load(fh)
    except (OSError, ValueError) as exc:
        raise PolicyUnavailable(f"bootstrap policy file {path!r} cannot be read: {exc}") from exc
    errors = validate_content(content)
    if errors:
        raise PolicyUnavailable(f"bootstrap policy file {path!r} is invalid", errors=errors)
    return content


def resolve(request: dict) -> Resolution:
    """Resolve a validated request. Raises ``InvalidRequest`` (channel not allowed) or
    ``PolicyUnavailable`` (no usable policy)."""
    content = bootstrap_content()
    effective, rule = resolve_settings(content, request)
    return Resolution(
        policy_id=BOOTSTRAP_POLICY_ID,
        policy_hash=content_hash(content),
        revision=1,
        effective=effective,
        effective_hash=sha256_hex(effective),
        rule=rule,
    )
