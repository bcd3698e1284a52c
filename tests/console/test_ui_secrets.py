"""No secret ever appears in a /ui response: channel signing secrets, credentials inside channel
URLs (even when a provider error quotes the URL), secret-named fields in producer metadata,
bearer tokens and the caller's own login token."""
import json

import pytest

from console.redaction import MASK, mask_string, redact
from notifications.adapters.base import DeliveryResult
from notifications.models import Channel

from uihelpers import oncall_schedule, ui_paths

pytestmark = pytest.mark.django_db

SIGNING = "s3cret-signing-key"  # the ``channel`` fixture's secret
URL_PASSWORD = "hunter2-pass"
QUERY_TOKEN = "qs-secret-123456"
META_SECRET = "meta-secret-456"
BEARER = "abcdefghijklmnopqrstuv"
HOOK_URL = f"https://hookuser:{URL_PASSWORD}@hooks.example/in?token={QUERY_TOKEN}&x=1"


def test_no_secret_reaches_any_ui_response(ui, rt, clock, webhook, channel):
    Channel.objects.create(name="cred-hook", kind="webhook", config={"url": HOOK_URL}, secret="second-signing-secret")
    # A provider error that quotes the URL, and one that echoes the signing secret.
    webhook.script.extend([
        DeliveryResult(False, retryable=False, error=f"HTTP 404 for url '{HOOK_URL}'",
                       metadata={"authorization": f"Bearer {BEARER}"}),
        DeliveryResult(False, retryable=False, error=f"rejected signature made with {SIGNING}"),
    ])
    metadata = {"api_key": META_SECRET, "note": f"Authorization: Bearer {BEARER}", "nested": {"password": "pw-789xyz"}}
    a = rt.accept("svc", {"source": "s", "title": "cred", "channels": ["cred-hook"], "metadata": metadata}).notification.id
    rt.dispatch()
    b = rt.accept("svc", {"source": "s", "title": "echo", "channels": ["ops-hook"], "require_ack": True,
                          "metadata": {"callback": HOOK_URL}}).notification.id
    rt.dispatch()
    rt.create_bulk("olga", {"action": "replay", "expected": 10})  # /ui/bulk-actions/{id} shows its items
    oncall_schedule(clock)  # /ui/oncall/schedules/{name}/calendar shows it

    from knox.models import AuthToken

    client = ui(groups=("console", "operator", "responder", "policy_admin"))
    token = client._credentials["HTTP_AUTHORIZATION"].split()[1]
    assert AuthToken.objects.count() == 1
    bodies = []
    for nid in (a, b):
        for path in ui_paths(nid).values():
            response = client.get(path)
            assert response.status_code == 200, path
            bodies.append(response.content.decode())
            bodies.append(json.dumps(dict(response.headers)))
    text = "\n".join(bodies)
    for needle in (SIGNING, "second-signing-secret", URL_PASSWORD, QUERY_TOKEN, META_SECRET, BEARER, "pw-789xyz", token):
        assert needle not in text, f"{needle[:8]}... leaked"
    # Still useful: the masked error keeps the host and the reason.
    assert "hooks.example" in text and "HTTP 404" in text and MASK in text
    # lease_token is the reference's fencing id, not a credential: it stays.
    assert "lease_token" in text


@pytest.mark.parametrize("raw,expected", [
    ("https://u:p4ss@h.example/x", "https://***@h.example/x"),
    ("GET http://h/x?token=abc&y=1 failed", "GET http://h/x?token=***&y=1 failed"),
    ("see https://h/x?a=1&sig=zzz", "see https://h/x?a=1&sig=***"),
    ("Authorization: Bearer abcdefgh12345", "Authorization: Bearer ***"),
    ("idempotency_key=abc&dedup=1", "idempotency_key=abc&dedup=1"),
    ("plain words", "plain words"),
])
def test_mask_string(raw, expected):
    assert mask_string(raw) == expected


def test_redact_masks_secret_keys_at_any_depth_but_keeps_ids():
    value = {"a": [{"Client-Secret": "x1"}, {"token": "t"}], "lease_token": "lt", "api_key": None,
             "text": "known-secret-value inside"}
    assert redact(value, frozenset({"known-secret-value"})) == {
        "a": [{"Client-Secret": MASK}, {"token": MASK}], "lease_token": "lt", "api_key": None,
        "text": f"{MASK} inside"}


def test_a_contact_method_secret_never_reaches_the_ui(ui, rt, webhook):
    from django.contrib.auth import get_user_model  # noqa: PLC0415  # only this test makes a person

    from oncall.models import ContactMethod  # noqa: PLC0415  # only this test makes a contact method

    user = get_user_model().objects.create_user("pat")
    ContactMethod.objects.create(id="pat-0", user=user, kind="webhook", verification="VERIFIED", created_at=0.0,
                                 config={"url": f"https://pat:{URL_PASSWORD}@pager.example/in"},
                                 secret="contact-signing-secret")
    webhook.script.append(DeliveryResult(False, retryable=False,
                                         error="rejected signature made with contact-signing-secret"))
    nid = rt.accept("svc", {"source": "s", "title": "page pat", "channels": ["user:pat"]}).notification.id
    rt.dispatch()
    client = ui(groups=("console", "operator", "responder"))
    text = "\n".join(client.get(path).content.decode() for path in ui_paths(nid).values())
    assert "contact-signing-secret" not in text and URL_PASSWORD not in text
    assert "rejected signature" in text and MASK in text
