"""Fixtures for the console's /ui read models: clients per group, ``now`` pinned to the fake
clock. Helpers tests import live in ``uihelpers``.

No ``__init__.py`` here on purpose: a ``tests/console`` package would shadow the ``console`` app.
"""
import pytest


@pytest.fixture
def ui(api, clock, monkeypatch):
    """``ui(groups=("console",), name=None) -> APIClient`` with a Bearer token; /ui's ``now`` is
    the fake clock."""
    from console import views

    monkeypatch.setattr(views, "clock", clock)

    def make(groups=("console",), name=None):
        return api(groups=groups, name=name)

    return make
