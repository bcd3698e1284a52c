"""The bootstrap policy: what cold initialisation writes as ``uns-default`` v1 at revision 1
(``store.ensure_initialized``), and the policy file syntax (JSON, or YAML for ``.yaml``/``.yml``)."""
import json
from functools import lru_cache

from django.conf import settings

from core.errors import PolicyUnavailable

from .content import BOOTSTRAP_CONTENT, validate_content

# The one row of ``notification_policy_revisions``: the current revision.
REVISION_ROW_ID = 1


def parse_policy_text(text: str, *, yaml_syntax: bool):
    """Parse policy file text (JSON, or YAML when ``yaml_syntax``). Raises ``ValueError``."""
    if not yaml_syntax:
        return json.loads(text)
    import yaml  # here, not at the top: only a YAML policy file needs the YAML parser

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ValueError(str(exc)) from exc


def is_yaml_path(path: str) -> bool:
    return str(path).lower().endswith((".yaml", ".yml"))


@lru_cache(maxsize=8)
def load_bootstrap_file(path: str) -> dict:
    try:
        with open(path, encoding="utf-8") as fh:
            content = parse_policy_text(fh.read(), yaml_syntax=is_yaml_path(path))
    except (OSError, ValueError) as exc:
        raise PolicyUnavailable(f"bootstrap policy file {path!r} cannot be read: {exc}") from exc
    errors = validate_content(content)
    if errors:
        raise PolicyUnavailable(f"bootstrap policy file {path!r} is invalid", errors=errors)
    return content


def bootstrap_content() -> dict:
    """The content cold initialisation writes as ``uns-default`` v1 at revision 1.

    ``UNS_BOOTSTRAP_POLICY_FILE`` (JSON, or YAML for ``.yaml`` / ``.yml``) when set, else
    ``BOOTSTRAP_CONTENT``. A configured file that is unreadable or invalid raises
    ``PolicyUnavailable``: intake fails closed instead of bootstrapping something else. The file
    is read only while the database holds no revision; afterwards the database is the authority.
    """
    path = settings.UNS_BOOTSTRAP_POLICY_FILE
    if not path:
        return BOOTSTRAP_CONTENT
    return load_bootstrap_file(str(path))
