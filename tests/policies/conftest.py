"""Fixtures for the policy authority tests."""
import pytest


@pytest.fixture
def policy_admin(api):
    """An API client in the ``policy_admin`` group."""
    return api(groups=("policy_admin",), name="pat")
