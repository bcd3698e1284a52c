"""Operator login: POST /api/v1/auth/login trades a password for a short-lived Django session
in an HttpOnly, SameSite=Strict cookie (Secure over HTTPS) and a CSRF token in the body; writes
with the session need the token; POST /api/v1/auth/logout ends the session (or revokes a Bearer
token). The console's WebSocket accepts the session (tests/ws)."""
import time

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.cache import cache
from rest_framework.test import APIClient

pytestmark = pytest.mark.django_db

LOGIN = "/api/v1/auth/login"


@pytest.fixture(autouse=True)
def _fresh_throttle(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # speed, not security
    cache.clear()
    yield
    cache.clear()


def person(name, groups, password="correct horse battery"):
    user = get_user_model().objects.create_user(name, password=password)
    user.groups.add(*Group.objects.filter(name__in=groups))
    return user


def login(username, password):
    return APIClient().post(LOGIN, {"username": username, "password": password}, format="json")


def bearer(token):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    return client


def session_client(username="olga", password="correct horse battery", secure=False):
    """An APIClient that enforces CSRF, as a browser's requests are checked, logged in."""
    client = APIClient(enforce_csrf_checks=True)
    response = client.post(LOGIN, {"username": username, "password": password}, format="json", secure=secure)
    return client, response


def test_login_starts_a_session_in_an_httponly_strict_cookie_and_no_token_in_the_body(settings):
    settings.UNS_CONSOLE_TOKEN_TTL_SECONDS = 600
    person("olga", ["operator"])
    client, response = session_client()
    assert response.status_code == 200
    body = response.json()
    assert body["username"] == "olga" and "token" not in body and len(body["csrf_token"]) >= 32
    assert time.time() + 590 < body["expiry"] <= time.time() + 600
    assert body["expiry_iso"].endswith("Z")
    assert response["Cache-Control"] == "no-store"
    cookie = response.cookies["sessionid"]
    assert cookie["httponly"] is True and cookie["samesite"] == "Strict" and not cookie["secure"]
    assert 590 <= int(cookie["max-age"]) <= 600
    assert response.cookies["csrftoken"]["httponly"] is True
    # A reload: the cookie alone resumes the session; /ui/me hands the CSRF token back.
    me = client.get("/ui/me").json()
    assert me["username"] == "olga" and me["capabilities"]["operate_dlq"] is True
    assert me["token_expiry"] == pytest.approx(body["expiry"], abs=2) and me["csrf_token"]


def test_over_https_the_cookies_are_secure():
    person("olga", ["operator"])
    _, response = session_client(secure=True)
    assert response.cookies["sessionid"]["secure"] is True and response.cookies["csrftoken"]["secure"] is True


def test_a_session_write_needs_the_csrf_token(rt, channel):
    person("rita", ["responder"])
    client, response = session_client("rita")
    nid = rt.accept("svc", {"source": "s", "title": "t", "channels": ["console"], "require_ack": True}).notification.id
    rt.dispatch(limit=10)
    refused = client.post(f"/api/v1/notifications/{nid}/ack", {}, format="json")
    assert refused.status_code == 403 and refused["Content-Type"].startswith("application/problem+json")
    assert "CSRF" in refused.json()["detail"]
    wrong = client.post(f"/api/v1/notifications/{nid}/ack", {}, format="json", HTTP_X_CSRFTOKEN="x" * 64)
    assert wrong.status_code == 403
    ok = client.post(f"/api/v1/notifications/{nid}/ack", {}, format="json",
                     HTTP_X_CSRFTOKEN=response.json()["csrf_token"])
    assert ok.status_code == 200, ok.json()
    assert ok.json()["ack_status"] == "ACKED"


def test_logout_ends_the_session_and_needs_the_csrf_token():
    person("olga", ["operator"])
    client, response = session_client()
    assert client.post("/api/v1/auth/logout").status_code == 403  # no CSRF token: the session stays
    assert client.get("/ui/me").status_code == 200
    token = client.get("/ui/me").json()["csrf_token"]
    out = client.post("/api/v1/auth/logout", HTTP_X_CSRFTOKEN=token)
    assert out.status_code == 204 and out.cookies["sessionid"].value == ""
    assert client.get("/ui/me").status_code == 401


def test_login_issues_no_knox_token():
    from knox.models import AuthToken
    person("olga", ["operator"])
    before = AuthToken.objects.count()
    assert session_client()[1].status_code == 200
    assert AuthToken.objects.count() == before


@pytest.mark.parametrize("username,password", [("olga", "wrong"), ("nobody", "correct horse battery")])
def test_wrong_password_and_unknown_user_are_the_same_401(username, password):
    person("olga", ["operator"])
    response = login(username, password)
    assert response.status_code == 401
    assert response["Content-Type"].startswith("application/problem+json")
    assert response.json()["code"] == "invalid_credentials"
    assert response.json()["detail"] == "the username or password is not right"


def test_inactive_user_cannot_log_in():
    user = person("olga", ["operator"])
    user.is_active = False
    user.save()
    assert login("olga", "correct horse battery").status_code == 401


def test_a_principal_without_the_console_capability_may_not_log_in():
    person("svc", ["producer"])
    response = login("svc", "correct horse battery")
    assert response.status_code == 403 and response.json()["code"] == "console_access_denied"


@pytest.mark.parametrize("body", [{}, {"username": "olga"}, {"username": 1, "password": "x"}, []])
def test_malformed_login_is_400(body):
    response = APIClient().post(LOGIN, body, format="json")
    assert response.status_code == 400 and response.json()["code"] == "invalid_request"


def test_logout_revokes_a_bearer_token():
    from knox.models import AuthToken
    user = person("olga", ["operator"])
    _, token = AuthToken.objects.create(user=user)
    client = bearer(token)
    assert client.post("/api/v1/auth/logout").status_code == 204
    assert client.get("/ui/me").status_code == 401
    assert APIClient().post("/api/v1/auth/logout").status_code == 401


def test_an_expired_console_session_is_refused(settings):
    settings.UNS_CONSOLE_TOKEN_TTL_SECONDS = 1
    person("olga", ["operator"])
    client, _ = session_client()
    from django.contrib.sessions.models import Session
    from django.utils import timezone
    Session.objects.update(expire_date=timezone.now())
    assert client.get("/ui/me").status_code == 401


def test_password_guessing_is_throttled():
    person("olga", ["operator"])
    codes = [login("olga", f"guess-{i}").status_code for i in range(25)]
    assert codes[:20] == [401] * 20
    assert codes[-1] == 429
