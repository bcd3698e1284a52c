"""API fixtures: the views' runtime swapped for the deterministic ``rt`` fixture."""
import pytest


@pytest.fixture
def api_rt(rt, monkeypatch):
    """``rt`` installed as the runtime behind every API view (fake clock, scripted webhook)."""
    from notifications.api import views

    monkeypatch.setattr(views, "_runtime", rt)
    return rt
