"""Fixtures for the runtime behaviour tests: a policy override and extra runtimes on the same
database. Plain helpers (timeline readers, row counts, a request builder) live in ``rthelpers``."""
import json
from copy import deepcopy

import pytest


def _clear_bootstrap_cache():
    from policies import bootstrap

    for name in ("bootstrap_content", "load_bootstrap_file"):
        clear = getattr(getattr(bootstrap, name, None), "cache_clear", None)
        if clear is not None:
            clear()


@pytest.fixture
def policy(settings, tmp_path):
    """``policy(rules=..., **defaults) -> content``: make the bootstrap policy the built-in one
    with ``defaults`` overridden (``rules`` replaces the rules when given). It is written to the
    file named by ``UNS_BOOTSTRAP_POLICY_FILE``, the documented seam, so the first intake
    initialises the policy authority from it and resolution runs the production code. Call it
    before the first ``accept`` of the test: afterwards the database is the authority."""
    from policies.content import BOOTSTRAP_CONTENT
    from policies.models import PolicyRevision

    written = []

    def set_policy(rules=None, **defaults):
        if PolicyRevision.objects.exists():  # the file would be ignored silently
            raise RuntimeError("policy() must run before the first accept: the policy authority is initialised")
        content = deepcopy(BOOTSTRAP_CONTENT)
        content["defaults"].update(deepcopy(defaults))
        if rules is not None:
            content["rules"] = rules
        path = tmp_path / f"policy-{len(written)}.json"
        path.write_text(json.dumps(content))
        written.append(path)
        settings.UNS_BOOTSTRAP_POLICY_FILE = str(path)
        _clear_bootstrap_cache()
        return content

    yield set_policy
    _clear_bootstrap_cache()


@pytest.fixture
def make_runtime(clock, webhook):
    """``make_runtime(**overrides) -> Runtime`` wired like ``rt`` (same clock, same fake webhook
    adapter unless ``adapters`` is given): a second worker on the same database, or one with a
    callback."""
    from notifications.adapters.console import ConsoleAdapter
    from notifications.runtime import Runtime

    def make(**overrides):
        kwargs = dict(clock=clock, adapters={"webhook": webhook, "console": ConsoleAdapter(clock)}, callback=None,
                      concurrency=1, rng=lambda: 0.5)
        kwargs.update(overrides)
        return Runtime(**kwargs)

    return make

