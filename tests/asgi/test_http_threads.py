"""HTTP requests on the database threads (``notifications.http_threads``): the same
responses as Django's own ASGI handler gives, and, on PostgreSQL, a request waiting on a row lock
does not hold up the requests behind it (Django's handler runs every synchronous view of a
process on one thread: they queued)."""
import asyncio
import json
import threading

import pytest
from channels.testing import HttpCommunicator

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.fixture
def threaded(rt, monkeypatch):
    """``ThreadedASGIHandler`` with ``rt`` as the process runtime; the database threads'
    connections are closed afterwards (before the test database goes)."""
    from django.apps import apps

    from notifications import ws_auth
    from notifications.http_threads import ThreadedASGIHandler

    monkeypatch.setattr(apps.get_app_config("notifications"), "process_runtime", rt)
    yield ThreadedASGIHandler()
    ws_auth.close_database_threads()


@pytest.fixture
def producer_token(make_principal):
    return make_principal("threaded-producer", ("producer",))[1]


@pytest.fixture
def responder_token(make_principal):
    return make_principal("threaded-responder", ("responder",))[1]


async def request(app, method, path, token=None, body=None, timeout=30):
    data = json.dumps(body).encode() if body is not None else b""
    headers = [(b"content-type", b"application/json"), (b"host", b"testserver"),
               (b"content-length", str(len(data)).encode())]
    if token:
        headers.append((b"authorization", f"Bearer {token}".encode()))
    comm = HttpCommunicator(app, method, path, body=data, headers=headers)
    response = await comm.get_response(timeout=timeout)
    return response["status"], {k.lower(): v for k, v in response["headers"]}, json.loads(response["body"] or b"null")


def delivered(rt, clock):
    nid = rt.accept("alice", {"source": "s", "title": "t", "channels": ["ops-hook"],
                              "require_ack": True}).notification.id
    clock.advance(5)
    rt.dispatch()
    return nid


@pytest.fixture
def two_delivered(rt, clock, channel):
    """Two delivered notifications awaiting ACK, made (and committed) before the test's loop runs."""
    return delivered(rt, clock), delivered(rt, clock)


async def test_answers_as_djangos_handler_does(threaded, producer_token, channel):
    token = producer_token
    status, headers, body = await request(threaded, "POST", "/api/v1/notifications", token,
                                          {"source": "s", "title": "t", "idempotency_key": "k1"})
    assert status == 202 and body["status"] == "PENDING", body.get("errors")
    assert headers[b"location"] == f"/api/v1/notifications/{body['id']}".encode()
    again = await request(threaded, "POST", "/api/v1/notifications", token,
                          {"source": "s", "title": "t", "idempotency_key": "k1"})
    assert again[0] == 200 and again[2]["id"] == body["id"]
    status, headers, problem = await request(threaded, "POST", "/api/v1/notifications", token + "x", {})
    assert status == 401 and problem["code"] == "authentication_failed"
    assert headers[b"content-type"] == b"application/problem+json"
    status, _, problem = await request(threaded, "POST", "/api/v1/notifications", token, {"title": "t"})
    assert status == 400 and problem["code"] == "invalid_request"


def test_the_setting_picks_the_handler(settings):
    from django.core.handlers.asgi import ASGIHandler

    from notifications.http_threads import ThreadedASGIHandler, asgi_application

    settings.UNS_HTTP_THREADS = True
    assert isinstance(asgi_application(), ThreadedASGIHandler)
    settings.UNS_HTTP_THREADS = False
    app = asgi_application()
    assert type(app) is ASGIHandler


@pytest.mark.postgres
async def test_a_request_waiting_on_a_row_lock_does_not_hold_up_another(threaded, responder_token, two_delivered):
    from django.db import connection, transaction

    from notifications.models import Notification

    token = responder_token
    blocked, free = two_delivered
    locked, release = threading.Event(), threading.Event()

    def hold_lock():
        try:
            with transaction.atomic():
                Notification.objects.select_for_update().get(id=blocked)
                locked.set()
                release.wait(60)
        finally:
            connection.close()

    holder = threading.Thread(target=hold_lock, daemon=True)
    holder.start()
    try:
        assert locked.wait(30)
        waiting = asyncio.ensure_future(request(threaded, "POST", f"/api/v1/notifications/{blocked}/ack", token, {}))
        status, _, body = await request(threaded, "POST", f"/api/v1/notifications/{free}/ack", token, {})
        assert status == 200 and body["ack_status"] == "ACKED", body
        assert not waiting.done()  # still waiting on the lock
        release.set()
        status, _, body = await waiting
        assert status == 200 and body["ack_status"] == "ACKED", body
    finally:
        release.set()
        holder.join(30)
