"""``/healthz`` (liveness) and ``/readyz`` (readiness, ``notifications.health``)."""
import socket
from contextlib import contextmanager
from unittest import mock

import pytest
from local_redis import answering_redis_url
from django.apps import apps
from django.db import connection
from django.db.migrations.recorder import MigrationRecorder
from django.test import override_settings

from notifications import health
from notifications.runtime import Runtime
from notifications.runtime.worker import Worker

pytestmark = pytest.mark.django_db


@contextmanager
def embedded(worker):
    config = apps.get_app_config("notifications")
    config.embedded_worker = worker
    try:
        yield worker
    finally:
        config.embedded_worker = None


def closed_port() -> int:
    """A port nothing listens on: bound, then released."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def redis_layer(url: str) -> dict:
    return {"default": {"BACKEND": "channels_redis.core.RedisChannelLayer",
                        "CONFIG": {"hosts": [{"address": url}]}}}


@pytest.fixture
def redis_url_or_skip():
    """A Redis that answers (``local_redis.answering_redis_url``), or the test is skipped."""
    url = answering_redis_url()
    if url is None:
        pytest.skip("no Redis: set UNS_TEST_REDIS_URL or run scripts/services.sh redis")
    return url


def test_healthz_body_is_unchanged(client):
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


def test_ready_when_everything_answers(client):
    response = client.get("/readyz")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["status"] == "ok"
    assert body["checks"]["database"] == {"ok": True}
    assert body["checks"]["migrations"] == {"ok": True}
    assert body["checks"]["worker"] == {"ok": True, "embedded": False}
    assert response["Cache-Control"] == "no-store"


def test_database_unreachable_is_503_naming_it(client):
    def broken():
        return {"ok": False, "error": "OperationalError: connection refused"}

    with mock.patch.object(health, "check_database", broken):
        response = client.get("/readyz")
    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "unavailable"
    assert body["failed"] == ["database"]
    assert body["checks"]["database"]["error"].startswith("OperationalError")
    assert body["checks"]["migrations"]["ok"] is None  # not checked without a database


def test_a_failing_cursor_is_reported_with_its_error():
    from django.db import connections

    with mock.patch.object(connections["default"], "cursor", side_effect=RuntimeError("no route to db")):
        result = health.check_database()
    assert result == {"ok": False, "error": "RuntimeError: no route to db"}


def test_unapplied_migration_is_503_naming_it(client):
    MigrationRecorder(connection).record_unapplied(
        "notifications", "0006_channel_email_apprise")
    response = client.get("/readyz")
    assert response.status_code == 503
    body = response.json()
    assert body["failed"] == ["migrations"]
    assert body["checks"]["migrations"]["unapplied"] == ["notifications.0006_channel_email_apprise"]


def test_redis_layer_on_a_closed_port_is_503_without_the_url(client):
    url = f"redis://:hunter2-secret@127.0.0.1:{closed_port()}/0"
    with override_settings(CHANNEL_LAYERS=redis_layer(url)):
        response = client.get("/readyz")
    assert response.status_code == 503
    body = response.json()
    assert body["failed"] == ["channel_layer"]
    assert body["checks"]["channel_layer"]["backend"] == "redis"
    assert "hunter2-secret" not in response.content.decode()


def test_redis_layer_that_answers_is_ready(client, redis_url_or_skip):
    with override_settings(CHANNEL_LAYERS=redis_layer(redis_url_or_skip)):
        response = client.get("/readyz")
    assert response.status_code == 200, response.content
    assert response.json()["checks"]["channel_layer"] == {"ok": True, "backend": "redis"}


def test_embedded_loops_alive_then_stopped(client, clock):
    worker = Worker(Runtime(clock=clock), poll_interval=60, stop_grace=0)
    with embedded(worker):
        worker.start()
        try:
            response = client.get("/readyz")
            assert response.status_code == 200, response.content
            assert response.json()["checks"]["worker"] == {
                "ok": True, "embedded": True, "loops": {"dispatch": True, "timeout": True, "callback": True}}
        finally:
            worker.stop()
        response = client.get("/readyz")
    assert response.status_code == 503
    body = response.json()
    assert body["failed"] == ["worker"]
    assert body["checks"]["worker"]["stopping"] is True
    assert body["checks"]["worker"]["loops"] == {"dispatch": False, "timeout": False, "callback": False}


def test_a_dead_loop_is_named(client):
    class OneLoopDied:
        stopping = False

        def loop_states(self):
            return {"dispatch": True, "timeout": False, "callback": True}

    with embedded(OneLoopDied()):
        response = client.get("/readyz")
    assert response.status_code == 503
    assert response.json()["checks"]["worker"]["loops"]["timeout"] is False
