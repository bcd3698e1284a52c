"""WebSocket authentication and capabilities: every socket authenticates in ``connect()`` with a
token header, a ``token`` query parameter or the session, and needs its capability; refusals
close with 4401 / 4403 before any message is read or sent."""
from datetime import timedelta

import pytest
from django.contrib.auth.models import Permission
from django.test import Client
from django.utils import timezone

from .helpers import close_code, receive, socket, sync

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True)]

PATHS = ["/ws/timeline/", "/ws/respond/"]
SUBSCRIBE_ALL = {"action": "subscribe", "stream": "all", "limit": 0}


async def assert_open(comm, path):
    """The socket works: a valid message gets a non-error answer."""
    assert comm.accepted
    if path == "/ws/timeline/":
        await comm.send_json_to(SUBSCRIBE_ALL)
        assert (await receive(comm))["type"] == "subscribed"
    else:
        await comm.send_json_to({"action": "ack", "request_id": "r", "notification_id": "00000000-0000-4000-8000-000000000000"})
        reply = await receive(comm)
        assert reply["ok"] is False and reply["problem"]["code"] == "not_found"


@pytest.fixture
def principals(make_principal):
    return {
        "responder": make_principal("ws-responder", ("responder",)),
        "console": make_principal("ws-console", ("console",)),
        "producer": make_principal("ws-producer", ("producer",)),
        "operator": make_principal("ws-operator", ("operator",)),
    }


@pytest.mark.parametrize("path", PATHS)
async def test_no_credentials_is_4401(layer, path):
    async with socket(path) as comm:
        assert await close_code(comm) == 4401


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("header", [b"Bearer wrong-token", b"Bearer", b"Token abc", b"Bearer a b", b"Bearer \xff\xfe"])
async def test_bad_authorization_header_is_4401(layer, principals, path, header):
    async with socket(path, headers=[(b"authorization", header)]) as comm:
        assert await close_code(comm) == 4401


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("query", ["token=wrong", "token=", "token=a&token=b"])
async def test_bad_query_token_is_4401(layer, principals, path, query):
    async with socket(path, query=query) as comm:
        assert await close_code(comm) == 4401


async def test_expired_token_is_4401(layer, principals):
    from knox.models import AuthToken

    user, _ = principals["responder"]
    _, token = await sync(AuthToken.objects.create, user=user, expiry=timedelta(seconds=-1))
    async with socket("/ws/respond/", token=token) as comm:
        assert await close_code(comm) == 4401


async def test_inactive_user_is_4401(layer, principals):
    user, token = principals["responder"]
    user.is_active = False
    await sync(user.save)
    async with socket("/ws/respond/", token=token) as comm:
        assert await close_code(comm) == 4401


@pytest.mark.parametrize("path,who", [("/ws/timeline/", "producer"), ("/ws/respond/", "producer"),
                                      ("/ws/respond/", "operator"), ("/ws/respond/", "console")])
async def test_missing_capability_is_4403(layer, principals, path, who):
    _, token = principals[who]
    async with socket(path, token=token) as comm:
        assert await close_code(comm) == 4403


@pytest.mark.parametrize("path,who", [("/ws/timeline/", "console"), ("/ws/timeline/", "operator"),
                                      ("/ws/timeline/", "responder"), ("/ws/respond/", "responder")])
async def test_header_token_with_capability_connects(layer, principals, path, who):
    _, token = principals[who]
    async with socket(path, token=token) as comm:
        await assert_open(comm, path)


@pytest.mark.parametrize("path", PATHS)
async def test_query_token_connects(layer, principals, path):
    _, token = principals["responder"]
    async with socket(path, query=f"token={token}") as comm:
        await assert_open(comm, path)


def session_cookie(user) -> bytes:
    client = Client()
    client.force_login(user)
    return f"sessionid={client.cookies['sessionid'].value}".encode()


@pytest.mark.parametrize("path", PATHS)
async def test_session_with_same_origin_connects(layer, principals, path):
    user, _ = principals["responder"]
    cookie = await sync(session_cookie, user)
    async with socket(path, headers=[(b"cookie", cookie), (b"origin", b"http://127.0.0.1:8000")]) as comm:
        await assert_open(comm, path)


async def test_session_from_a_foreign_origin_is_denied_at_the_handshake(layer, principals):
    user, _ = principals["responder"]
    cookie = await sync(session_cookie, user)
    async with socket("/ws/respond/", headers=[(b"cookie", cookie), (b"origin", b"https://evil.example")]) as comm:
        assert not comm.accepted


async def test_wrong_token_never_falls_back_to_the_session(layer, principals):
    user, _ = principals["responder"]
    cookie = await sync(session_cookie, user)
    async with socket("/ws/respond/", token="wrong",
                      headers=[(b"cookie", cookie), (b"origin", b"http://127.0.0.1:8000")]) as comm:
        assert await close_code(comm) == 4401


async def test_revoked_token_stops_a_connected_socket(layer, principals):
    from knox.models import AuthToken

    user, token = principals["responder"]
    async with socket("/ws/respond/", token=token) as comm:
        await assert_open(comm, "/ws/respond/")
        await sync(lambda: AuthToken.objects.filter(user=user).delete())
        await comm.send_json_to({"action": "ack", "request_id": "after-revoke",
                                 "notification_id": "00000000-0000-4000-8000-000000000000"})
        reply = await receive(comm)
        assert reply["request_id"] == "after-revoke" and reply["ok"] is False
        assert reply["problem"]["status"] == 401
        assert await close_code(comm) == 4401


async def test_capability_withdrawn_stops_a_connected_socket(layer, principals):
    user, token = principals["console"]
    async with socket("/ws/timeline/", token=token) as comm:
        await assert_open(comm, "/ws/timeline/")
        await sync(lambda: user.groups.clear())
        await comm.send_json_to(SUBSCRIBE_ALL)
        reply = await receive(comm)
        assert reply["type"] == "error" and reply["problem"]["status"] == 403
        assert await close_code(comm) == 4403


async def test_logout_stops_a_session_socket(layer, principals):
    from django.contrib.sessions.models import Session

    user, _ = principals["responder"]
    cookie = await sync(session_cookie, user)
    async with socket("/ws/respond/", headers=[(b"cookie", cookie), (b"origin", b"http://127.0.0.1:8000")]) as comm:
        await assert_open(comm, "/ws/respond/")
        await sync(lambda: Session.objects.all().delete())
        await comm.send_json_to({"action": "ack", "request_id": "x",
                                 "notification_id": "00000000-0000-4000-8000-000000000000"})
        assert (await receive(comm))["problem"]["status"] == 401
        assert await close_code(comm) == 4401


def _http_refusal(path: str, **headers) -> dict:
    """What HTTP answers the same credentials (an ACK of an unknown id needs the responder
    capability, as ``/ws/respond/`` does)."""
    response = Client().post(path, data="{}", content_type="application/json", **headers)
    body = response.json()
    return {k: body[k] for k in ("status", "code")}


ACK_UNKNOWN = "/api/v1/notifications/00000000-0000-4000-8000-000000000000/ack"


@pytest.mark.parametrize("change", ["revoke-token", "withdraw-capability", "end-session"])
async def test_a_socket_whose_credentials_stop_holding_answers_what_http_answers(layer, principals, change):
    """One refusal: the problem a socket gets when its credentials no longer hold is the
    one HTTP (and MCP, ``access``'s refusals) gives those credentials: 401
    ``authentication_failed`` for a revoked token, 403 ``permission_denied`` for a withdrawn
    capability, 401 ``not_authenticated`` for an ended session."""
    from django.contrib.sessions.models import Session
    from knox.models import AuthToken

    user, token = principals["responder"]
    if change == "end-session":
        cookie = await sync(session_cookie, user)
        opened = socket("/ws/respond/", headers=[(b"cookie", cookie), (b"origin", b"http://127.0.0.1:8000")])
    else:
        opened = socket("/ws/respond/", token=token)
    async with opened as comm:
        await assert_open(comm, "/ws/respond/")
        if change == "revoke-token":
            await sync(lambda: AuthToken.objects.filter(user=user).delete())
            expected = await sync(_http_refusal, ACK_UNKNOWN, HTTP_AUTHORIZATION=f"Bearer {token}")
        elif change == "withdraw-capability":
            await sync(lambda: user.groups.clear())
            expected = await sync(_http_refusal, ACK_UNKNOWN, HTTP_AUTHORIZATION=f"Bearer {token}")
        else:
            await sync(lambda: Session.objects.all().delete())
            expected = await sync(_http_refusal, ACK_UNKNOWN)
        await comm.send_json_to({"action": "ack", "request_id": "r2",
                                 "notification_id": "00000000-0000-4000-8000-000000000000"})
        problem = (await receive(comm))["problem"]
        assert {k: problem[k] for k in ("status", "code")} == expected
        assert await close_code(comm) == (4403 if change == "withdraw-capability" else 4401)
