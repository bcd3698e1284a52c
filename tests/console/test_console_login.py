"""Operator login: POST /api/v1/auth/login trades a password for a short-lived knox token
returned in the body (no cookie); POST /api/v1/auth/logout revokes it."""
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


def test_login_returns_a_short_lived_token_in_the_body_and_sets_no_cookie(settings):
    settings.UNS_CONSOLE_TOKEN_TTL_SECONDS = 600
    person("olga", ["operator"])
    response = login("olga", "correct horse battery")
    assert response.status_code == 200
    body = response.json()
    assert body["username"] == "olga" and len(body["token"]) >= 32
    assert time.time() + 590 < body["expiry"] <= time.time() + 600
    assert body["expiry_iso"].endswith("Z")
    assert not response.cookies and "Set-Cookie" not in response.headers
    assert response["Cache-Control"] == "no-store"
    me = bearer(body["token"]).get("/ui/me").json()
    assert me["username"] == "olga" and me["capabilities"]["operate_dlq"] is True
    assert me["token_expiry"] == pytest.approx(body["expiry"], abs=1)


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


def test_logout_revokes_the_token():
    person("olga", ["operator"])
    token = login("olga", "correct horse battery").json()["token"]
    client = bearer(token)
    assert client.post("/api/v1/auth/logout").status_code == 204
    assert client.get("/ui/me").status_code == 401
    assert APIClient().post("/api/v1/auth/logout").status_code == 401


def test_an_expired_console_token_is_refused(settings):
    settings.UNS_CONSOLE_TOKEN_TTL_SECONDS = -1
    person("olga", ["operator"])
    token = login("olga", "correct horse battery").json()["token"]
    assert bearer(token).get("/ui/me").status_code == 401


def test_password_guessing_is_throttled():
    person("olga", ["operator"])
    codes = [login("olga", f"guess-{i}").status_code for i in range(25)]
    assert codes[:20] == [401] * 20
    assert codes[-1] == 429
