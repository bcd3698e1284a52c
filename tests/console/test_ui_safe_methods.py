"""INV-UI-001: every /ui route answers GET, HEAD and OPTIONS only; every other method is 405
problem details before authentication, for every caller, and changes nothing. The routes are
found by walking the URLconf, so a new /ui route is covered without editing this file."""
import pytest
from rest_framework.test import APIClient
from rest_framework.views import APIView

from console.views import UIView
from notifications.models import AckAuditRecord, Dedup, Event, Notification, NotificationAuditRecord

from uihelpers import populate, ui_paths, ui_routes

pytestmark = pytest.mark.django_db

UNSAFE = ("POST", "PUT", "PATCH", "DELETE", "TRACE", "CONNECT", "PROPFIND")
EXPECTED = {"ui/overview", "ui/inbox", "ui/notifications/<str:notification_id>", "ui/dlq", "ui/policies",
            "ui/policies/<str:policy_id>/diff", "ui/audit", "ui/me"}


def counts():
    return [m.objects.count() for m in (Notification, Event, Dedup, NotificationAuditRecord, AckAuditRecord)]


def test_the_walk_finds_every_ui_route_and_each_is_a_read_only_ui_view():
    found = {route for route, _ in ui_routes()}
    assert found >= EXPECTED
    for route, pattern in ui_routes():
        cls = pattern.callback.cls
        assert issubclass(cls, APIView) and issubclass(cls, UIView), route
        assert set(cls.http_method_names) == {"get", "head", "options"}, route
        assert not any(hasattr(cls, m) for m in ("post", "put", "patch", "delete")), route


def test_safe_methods_answer_and_unsafe_methods_are_405_for_everyone(ui, make_principal, rt, clock, webhook, channel):
    from django.contrib.auth import get_user_model
    from knox.models import AuthToken

    ids = populate(rt, clock, webhook)
    root = get_user_model().objects.create_superuser("root", password="pw-root-123")
    _, root_token = AuthToken.objects.create(user=root)
    superuser = APIClient()
    superuser.credentials(HTTP_AUTHORIZATION=f"Bearer {root_token}")
    callers = {"anonymous": APIClient(), "console": ui(), "superuser": superuser,
               "operator": ui(groups=("operator", "responder", "policy_admin"))}
    session = APIClient()
    session.force_login(root)  # a session cookie must not open a write either (no CSRF dance needed)
    callers["session"] = session
    paths = ui_paths(ids["dlq"][0])
    assert set(paths) >= EXPECTED
    before = counts()
    for route, path in paths.items():
        for who, client in callers.items():
            for method in UNSAFE:
                response = client.generic(method, path, '{"seconds": 60}', content_type="application/json")
                assert response.status_code == 405, (who, method, path, response.content)
                assert response["Content-Type"].startswith("application/problem+json")
                assert response.json()["code"] == "method_not_allowed"
                assert set(response["Allow"].replace(" ", "").split(",")) == {"GET", "HEAD", "OPTIONS"}
        client = callers["console"]
        got = client.get(path)
        assert got.status_code == 200, (path, got.content)
        head = client.head(path)
        assert head.status_code == 200 and head.content == b"", path
        options = client.options(path)
        assert options.status_code == 200, path
        assert got["Cache-Control"] == "no-store"
    assert counts() == before
