"""API fixtures: the process runtime swapped for the deterministic ``rt`` fixture."""
import pytest


@pytest.fixture
def api_rt(rt, monkeypatch):
    """``rt`` installed as the runtime behind every API view (fake clock, scripted webhook)."""
    from django.apps import apps

    monkeypatch.setattr(apps.get_app_config("notifications"), "process_runtime", rt)
    return rt
