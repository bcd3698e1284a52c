"""Fixtures for the WebSocket consumer tests: the real ASGI application (origin check, session
middleware, router) driven by ``WebsocketCommunicator`` under anyio, the process runtime swapped
for the fake-clock ``rt``, and the in-memory channel layer flushed between tests.

The tests use ``transaction=True`` databases: consumers reach the ORM from
``database_sync_to_async`` threads, and live pushes happen only after a real commit.
"""
import pytest
from channels.layers import get_channel_layer


@pytest.fixture(scope="session", autouse=True)
def _ws_database_threads(django_db_setup, django_db_blocker):
    """Close the consumers' database threads' connections before the test database is dropped
    (channels' communicator makes channels' per-call close a no-op)."""
    yield
    from notifications import ws_auth

    with django_db_blocker.unblock():
        ws_auth.close_database_threads()


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.fixture
def ws_rt(rt, monkeypatch, settings):
    """``rt`` behind every transport, on the in-memory channel layer."""
    from django.apps import apps

    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    monkeypatch.setattr(apps.get_app_config("notifications"), "process_runtime", rt)
    return rt


@pytest.fixture
async def layer(ws_rt):
    channel_layer = get_channel_layer()
    await channel_layer.flush()
    yield channel_layer
    await channel_layer.flush()
