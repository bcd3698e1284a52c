"""Fixtures for the policy authority tests."""
import pytest


@pytest.fixture
def policy_admin(api):
    """An API client in the ``policy_admin`` group."""
    return api(groups=("policy_admin",), name="pat")


@pytest.fixture
def api_rt(rt, monkeypatch):
    """``rt`` installed as the runtime behind every API view (fake clock)."""
    from django.apps import apps

    monkeypatch.setattr(apps.get_app_config("notifications"), "process_runtime", rt)
    return rt
