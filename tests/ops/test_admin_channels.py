"""The Django admin manages channels through ``runtime.channels``: every save is audited with the
admin user as actor, bad URLs and timeouts are form errors, disabling or deleting a channel the
ACTIVE policy routes to is refused with a message, and the secret is write-only."""
import pytest
from django.contrib.auth import get_user_model

from notifications.models import Channel, ChannelAuditRecord

pytestmark = pytest.mark.django_db

URL = "http://127.0.0.1:9/hook"
SECRET = "whsec_YWRtaW4tdGVzdC1rZXk="
ADD = "/admin/notifications/channel/add/"


@pytest.fixture
def root(client):
    user = get_user_model().objects.create_superuser("root", password=None)
    client.force_login(user)
    return client


def change_url(name):
    return f"/admin/notifications/channel/{Channel.objects.get(name=name).pk}/change/"


def audit(name):
    return list(ChannelAuditRecord.objects.filter(channel=name).order_by("at", "id").values_list("action", "actor"))


def state(name):
    ch = Channel.objects.get(name=name)
    return ch.config, ch.secret, ch.enabled


def form(**fields):
    base = {"enabled": "on", "config": "{}", "new_secret": "", "_save": "Save"}
    base.update(fields)
    return {k: v for k, v in base.items() if v is not None}


def errors_of(response):
    return response.context["adminform"].form.errors


def test_add_change_rotate_disable_enable_delete(root):
    r = root.post(ADD, form(name="hook", kind="webhook", config=f'{{"url": "{URL}"}}', new_secret=SECRET))
    assert r.status_code == 302, errors_of(r)
    assert state("hook") == ({"url": URL}, SECRET, True)
    r = root.post(change_url("hook"), form(config=f'{{"url": "{URL}", "timeout": 2}}'))
    assert r.status_code == 302 and state("hook") == ({"url": URL, "timeout": 2.0}, SECRET, True)  # secret kept
    root.post(change_url("hook"), form(config=f'{{"url": "{URL}", "timeout": 2}}', new_secret="whsec_bmV3"))
    root.post(change_url("hook"), form(config=f'{{"url": "{URL}", "timeout": 2}}', enabled=None))
    assert state("hook") == ({"url": URL, "timeout": 2.0}, "whsec_bmV3", False)
    root.post(change_url("hook"), form(config=f'{{"url": "{URL}", "timeout": 2}}'))
    r = root.post(change_url("hook").replace("/change/", "/delete/"), {"post": "yes"})
    assert r.status_code == 302 and not Channel.objects.filter(name="hook").exists()
    assert audit("hook") == [("CREATE", "root"), ("UPDATE", "root"), ("ROTATE_SECRET", "root"), ("DISABLE", "root"),
                             ("ENABLE", "root"), ("DELETE", "root")]


def test_the_secret_is_never_rendered(root):
    root.post(ADD, form(name="hook", kind="webhook", config=f'{{"url": "{URL}"}}', new_secret=SECRET))
    page = root.get(change_url("hook")).content.decode()
    assert 'name="new_secret"' in page and SECRET not in page
    assert SECRET not in root.get("/admin/notifications/channel/").content.decode()


@pytest.mark.parametrize("config,field_text", [
    ('{"url": "ftp://x/y"}', "not an http"),
    ('{"url": "http://127.0.0.1:9/x", "timeout": -5}', "timeout"),
    ('{"url": "http://127.0.0.1:9/x", "timeout": "soon"}', "timeout"),
    ('{"url": "http://127.0.0.1:9/x", "retries": 3}', "unknown field"),
])
def test_bad_settings_are_form_errors_and_change_nothing(root, config, field_text):
    r = root.post(ADD, form(name="hook", kind="webhook", config=config))
    assert r.status_code == 200 and field_text in " ".join(errors_of(r)["config"])
    assert not Channel.objects.filter(name="hook").exists()
    root.post(ADD, form(name="hook", kind="webhook", config=f'{{"url": "{URL}"}}'))
    before = state("hook")
    r = root.post(change_url("hook"), form(config=config))
    assert r.status_code == 200 and field_text in " ".join(errors_of(r)["config"])
    assert state("hook") == before and audit("hook") == [("CREATE", "root")]


def test_disabling_a_routed_channel_is_a_form_error(root):
    before = state("console")
    r = root.post(change_url("console"), form(enabled=None))
    assert r.status_code == 200
    assert "routed to by the ACTIVE policy set" in " ".join(errors_of(r)["enabled"])
    assert state("console") == before and audit("console") == []


def test_deleting_a_routed_channel_is_refused_with_a_message(root):
    r = root.post(change_url("console").replace("/change/", "/delete/"), {"post": "yes"}, follow=True)
    assert "routed to by the ACTIVE policy set" in r.content.decode()
    assert Channel.objects.filter(name="console").exists() and audit("console") == []


def test_the_bulk_actions_go_through_the_service(root):
    root.post(ADD, form(name="hook", kind="webhook", config=f'{{"url": "{URL}"}}'))
    ids = [str(pk) for pk in Channel.objects.values_list("pk", flat=True)]
    r = root.post("/admin/notifications/channel/", {"action": "disable_channels", "_selected_action": ids},
                  follow=True)
    said = [str(m) for m in r.context["messages"]]
    assert any(m.startswith("console: channel 'console' is routed") for m in said) and "disabled: hook" in said
    assert Channel.objects.get(name="console").enabled is True and Channel.objects.get(name="hook").enabled is False
    assert "delete_selected" not in root.get("/admin/notifications/channel/").content.decode()
