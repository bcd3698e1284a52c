"""``uns_serve --workers``: more than one process needs a channel layer the processes share."""
import pytest
from django.core.management import CommandError, call_command


def test_several_processes_with_the_in_memory_channel_layer_are_refused(settings, monkeypatch):
    import uvicorn

    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    monkeypatch.setattr(uvicorn, "run", lambda *a, **k: pytest.fail("must not start a server"))
    with pytest.raises(CommandError, match="REDIS_URL"):
        call_command("uns_serve", workers=2)


def test_workers_reach_uvicorn_when_the_channel_layer_is_shared(settings, monkeypatch):
    import signal

    import uvicorn

    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels_redis.core.RedisChannelLayer"}}
    seen = {}
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: seen.update(kw, app=app))
    monkeypatch.setattr(signal, "signal", lambda *a: None)  # keep the test process's own handlers
    call_command("uns_serve", workers=2, port=0)
    assert (seen["app"], seen["workers"], seen["lifespan"]) == ("uns_project.asgi:application", 2, "on")
