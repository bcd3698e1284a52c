"""Fixtures for the governance tests: a bootstrap policy carrying a governance block."""
import json
from copy import deepcopy

import pytest

GOVERNANCE = {
    "approval": {"channels": ["console"], "timeout_seconds": 600},
    "rules": [
        {"name": "prod-deploys-need-a-human", "match": {"action": "deploy.*", "resource": "prod/*"},
         "decision": "REQUIRE_APPROVAL"},
        {"name": "two-person-drop", "match": {"action": "db.drop"}, "decision": "REQUIRE_APPROVAL",
         "approval": {"approvals_required": 2}},
        {"name": "no-autonomous-deletes", "match": {"action": "db.delete*", "autonomy_mode": "autonomous"},
         "decision": "DENY"},
        {"name": "reads-are-fine", "match": {"action": "read.*"}, "decision": "ALLOW"},
    ],
}


@pytest.fixture
def governed(settings, tmp_path):
    """Make the bootstrap policy the built-in one plus ``GOVERNANCE`` (or ``governed(block)``),
    through ``UNS_BOOTSTRAP_POLICY_FILE`` as ``tests/runtime``'s ``policy`` fixture does. Returns
    a setter; called with no argument it installs ``GOVERNANCE``."""
    from policies import bootstrap
    from policies.content import BOOTSTRAP_CONTENT

    def install(block=GOVERNANCE):
        content = deepcopy(BOOTSTRAP_CONTENT)
        content["governance"] = deepcopy(block)
        path = tmp_path / "governed-policy.json"
        path.write_text(json.dumps(content))
        settings.UNS_BOOTSTRAP_POLICY_FILE = str(path)
        bootstrap.load_bootstrap_file.cache_clear()
        return content

    yield install
    bootstrap.load_bootstrap_file.cache_clear()
