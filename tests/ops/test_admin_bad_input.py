"""The Django admin never answers bad input with a 500: NUL in an admin path is a
404, NUL in an admin query a 400 ``invalid_query`` (``api.middleware``), and a JSON field value
UNS cannot store (``1e400``, NUL, nesting too deep) a form error (``notifications.admin``),
on SQLite and PostgreSQL alike."""
import pytest
from django.contrib.auth import get_user_model

from notifications.models import Channel

pytestmark = pytest.mark.django_db


@pytest.fixture
def root(client):
    user = get_user_model().objects.create_superuser("root", password=None)
    client.force_login(user)
    return client


@pytest.mark.parametrize("path", [
    "/admin/notifications/notification/%00/change/",
    "/admin/notifications/event/%00/change/",
    "/admin/notifications/channel/%00/change/",
    "/admin/notifications/channel/%00/delete/",
    "/admin/policies/policy/%00/change/",
    "/admin/notifications/notification/x%00y/history/",
])
def test_nul_in_an_admin_path_is_a_404(root, path):
    response = root.get(path)
    assert response.status_code == 404


@pytest.mark.parametrize("path", [
    "/admin/notifications/notification/?status__exact=%00",
    "/admin/notifications/notification/?q=%00",
    "/admin/notifications/event/?kind__exact=a%00b",
    "/admin/notifications/channel/?kind__exact=%00",
    "/admin/policies/policy/?policy_id__exact=%00",
    "/admin/notifications/notification/?st%00atus=x",
])
def test_nul_in_an_admin_query_is_a_400(root, path):
    response = root.get(path)
    assert response.status_code == 400
    assert response.json()["code"] == "invalid_query"


def test_the_changelist_still_filters(root):
    response = root.get("/admin/notifications/notification/?status__exact=DELIVERED")
    assert response.status_code == 200


def _channel_form(channel: Channel, config: str) -> dict:
    return {"name": channel.name, "kind": channel.kind, "enabled": "on" if channel.enabled else "",
            "config": config, "_save": "Save"}


@pytest.mark.parametrize("config, message", [
    ('{"timeout": 1e400}', "timeout: numbers must be finite"),
    ('{"timeout": Infinity}', "timeout: numbers must be finite"),
    ('{"header": "a\\u0000b"}', "header: strings must not contain U+0000"),
    ('{"k\\u0000": 1}', "strings must not contain U+0000"),
    ("[" * 70 + "]" * 70, "nested deeper than 64 levels"),
])
def test_a_channel_config_uns_cannot_store_is_a_form_error(root, config, message):
    channel = Channel.objects.create(name="hook", kind="webhook", config={"url": "http://127.0.0.1:9/x"})
    response = root.post(f"/admin/notifications/channel/{channel.pk}/change/", _channel_form(channel, config))
    assert response.status_code == 200  # the form again, with the error
    errors = response.context["adminform"].form.errors
    assert message in " ".join(errors["config"])
    channel.refresh_from_db()
    assert channel.config == {"url": "http://127.0.0.1:9/x"}


def test_a_storable_channel_config_saves(root):
    channel = Channel.objects.create(name="hook", kind="webhook", config={"url": "http://127.0.0.1:9/x"})
    response = root.post(f"/admin/notifications/channel/{channel.pk}/change/",
                         _channel_form(channel, '{"url": "http://127.0.0.1:9/y", "timeout": 1.5}'))
    assert response.status_code == 302, response.context["adminform"].form.errors if response.context else ""
    channel.refresh_from_db()
    assert channel.config == {"url": "http://127.0.0.1:9/y", "timeout": 1.5}


@pytest.mark.parametrize("content", ['{"schema_version": 1, "x": 1e400}', "[" * 3000 + "]" * 3000])
def test_policy_content_uns_cannot_store_is_a_form_error(root, content):
    response = root.post("/admin/policies/policy/add/", {"policy_id": "p1", "content": content, "_save": "Save"})
    assert response.status_code == 200
    errors = response.context["adminform"].form.errors
    assert "content" in errors


def test_the_400_names_the_parameter(root):
    response = root.get("/admin/notifications/notification/?status__exact=%00")
    body = response.json()
    assert body["errors"] == [{"field": "status__exact", "message": "strings must not contain U+0000 (NUL)"}]
    assert body["instance"] == "/admin/notifications/notification/"
    response = root.get("/admin/notifications/notification/?st%00atus=x")
    assert response.json()["errors"][0]["field"] == "st\\x00atus"
