"""``/api/v1/channels``: the operator's channel verbs over HTTP through ``runtime.channels``;
bad input is problem details and changes nothing; the secret is write-only."""
import logging

import httpx
import pytest

from notifications.adapters.webhook import WebhookAdapter
from notifications.models import Channel, ChannelAuditRecord

from .helpers import assert_problem

pytestmark = pytest.mark.django_db

URL = "http://127.0.0.1:9/hook"
SECRET = "whsec_aHR0cC10ZXN0LWtleS0x"
CRED_URL = "https://bot:pa55w0rd-X@hooks.example/in?token=t0ken-Y&x=1"


@pytest.fixture
def operator(api, api_rt):
    return api(groups=("operator",), name="olga")


def state(name):
    ch = Channel.objects.filter(name=name).first()
    return None if ch is None else (ch.kind, ch.config, ch.secret, ch.enabled)


def test_create_read_update_rotate_disable_enable(operator, caplog):
    caplog.set_level(logging.DEBUG)
    r = operator.post("/api/v1/channels", {"name": "hook", "kind": "webhook", "config": {"url": CRED_URL},
                                           "secret": SECRET}, format="json")
    assert r.status_code == 201, r.content
    body = r.json()
    assert body["has_secret"] is True and "secret" not in body
    assert body["config"]["url"] == "https://***@hooks.example/in?token=***&x=1"
    assert r["Location"] == "/api/v1/channels/hook"
    assert operator.get("/api/v1/channels/hook").json()["name"] == "hook"
    r = operator.patch("/api/v1/channels/hook", {"config": {"url": URL, "timeout": 4}}, format="json")
    assert r.status_code == 200 and r.json()["config"] == {"url": URL, "timeout": 4.0}
    r = operator.post("/api/v1/channels/hook/rotate-secret", {"secret": "whsec_bmV3"}, format="json")
    assert r.status_code == 200 and Channel.objects.get(name="hook").secret == "whsec_bmV3"
    assert operator.post("/api/v1/channels/hook/disable", {}, format="json").json()["enabled"] is False
    assert operator.post("/api/v1/channels/hook/enable").json()["enabled"] is True
    listed = operator.get("/api/v1/channels").json()["items"]
    assert {c["name"] for c in listed} == {"console", "hook"}
    audit = list(ChannelAuditRecord.objects.filter(channel="hook").order_by("at", "id").values_list("action", "actor"))
    assert audit == [("CREATE", "olga"), ("UPDATE", "olga"), ("ROTATE_SECRET", "olga"), ("DISABLE", "olga"),
                     ("ENABLE", "olga")]
    everything = str(listed) + str(list(ChannelAuditRecord.objects.values()))
    for secret in (SECRET, "whsec_bmV3", "pa55w0rd-X", "t0ken-Y"):
        assert secret not in everything and secret not in caplog.text


@pytest.mark.parametrize("body,code,field", [
    ({"name": "hook", "kind": "webhook", "config": {"url": "ftp://x"}}, "invalid_channel", "config.url"),
    ({"name": "hook", "kind": "webhook", "config": {"url": URL, "timeout": 0}}, "invalid_channel", "config.timeout"),
    ({"name": "hook", "kind": "webhook", "config": {"url": URL, "timeout": "soon"}}, "invalid_channel",
     "config.timeout"),
    ({"name": "hook", "kind": "pager"}, "invalid_request", "kind"),
    ({"name": "hook", "kind": "webhook", "config": {"url": URL}, "extra": 1}, "invalid_request", "extra"),
    ({"name": "bad name", "kind": "console"}, "invalid_channel", "name"),
    ({"name": "hook", "kind": "webhook", "config": {"url": URL}, "secret": "whsec_not base64!"}, "invalid_channel",
     "secret"),
    ({"name": "hook", "kind": "webhook", "config": {"url": URL}, "secret": "s3cret\n"}, "invalid_channel", "secret"),
    ({"name": "hook", "kind": "email", "config": {"to": ["a@example.com"], "host": "smtp.example\r\nRCPT TO:<x@y>"}},
     "invalid_channel", "config"),
    ({"name": "hook", "kind": "email", "config": {"to": ["a@example.com"], "host": "smtp://mail.example"}},
     "invalid_channel", "config"),
    ({"name": "hook", "kind": "email", "config": {"to": ["a@example.com"], "username": "me\r\nQUIT"}},
     "invalid_channel", "config"),
    ({"name": "hook", "kind": "email", "config": {"to": ["a@example.com"]}, "secret": "pw\r\n"}, "invalid_channel",
     "secret"),
])
def test_bad_creates_are_problems_and_write_nothing(operator, body, code, field):
    problem = assert_problem(operator.post("/api/v1/channels", body, format="json"), 400, code)
    assert field in {e["field"] for e in problem["errors"]}
    assert state("hook") is None and not ChannelAuditRecord.objects.exists()


def test_a_taken_name_is_409(operator):
    assert_problem(operator.post("/api/v1/channels", {"name": "console", "kind": "console"}, format="json"),
                   409, "channel_exists")


def test_bad_updates_change_nothing(operator):
    operator.post("/api/v1/channels", {"name": "hook", "kind": "webhook", "config": {"url": URL}}, format="json")
    before = state("hook")
    assert_problem(operator.patch("/api/v1/channels/hook", {"config": {"url": "nope"}}, format="json"),
                   400, "invalid_channel")
    assert_problem(operator.patch("/api/v1/channels/hook", {"config": {"timeout": -1}}, format="json"),
                   400, "invalid_channel")
    assert_problem(operator.patch("/api/v1/channels/hook", {"config": "x"}, format="json"), 400, "invalid_request")
    assert state("hook") == before


@pytest.mark.parametrize("method,path", [
    ("get", "/api/v1/channels/nope"), ("patch", "/api/v1/channels/nope"),
    ("post", "/api/v1/channels/nope/enable"), ("post", "/api/v1/channels/nope/disable"),
    ("post", "/api/v1/channels/nope/rotate-secret"), ("post", "/api/v1/channels/nope/test"),
])
def test_unknown_channels_are_404(operator, method, path):
    body = {"config": {}} if method == "patch" else {"secret": "x"} if "rotate" in path else {}
    assert_problem(getattr(operator, method)(path, body, format="json"), 404, "channel_not_found")


def test_disabling_a_routed_channel_is_409_and_changes_nothing(operator):
    before = state("console")
    problem = assert_problem(operator.post("/api/v1/channels/console/disable"), 409, "channel_routed")
    assert problem["routes"] == [{"policy_id": "uns-default", "version": 1, "field": "defaults.channels"}]
    assert state("console") == before and not ChannelAuditRecord.objects.exists()


def test_other_principals_are_refused(api, api_rt):
    for groups in (("producer",), ("console",), ("responder",)):
        client = api(groups=groups)
        assert client.get("/api/v1/channels").status_code == 403
        r = client.post("/api/v1/channels", {"name": "x", "kind": "console"}, format="json")
        assert r.status_code == 403 and state("x") is None


def test_test_sends_through_the_real_adapter(operator, api_rt):
    seen = []

    def answer(request):
        seen.append(request)
        return httpx.Response(202, content=b'{"accepted": true, "echo": "' + SECRET.encode() + b'"}')

    api_rt.adapters["webhook"] = WebhookAdapter(transport=httpx.MockTransport(answer))
    operator.post("/api/v1/channels", {"name": "hook", "kind": "webhook", "config": {"url": URL},
                                       "secret": SECRET}, format="json")
    r = operator.post("/api/v1/channels/hook/test")
    body = r.json()
    assert r.status_code == 200 and body["success"] is True and body["error"] is None
    assert body["answer"].startswith('HTTP 202 {"accepted": true') and SECRET not in body["answer"]
    assert len(seen) == 1 and seen[0].headers["webhook-signature"].startswith("v1,")


def test_a_rotated_secret_with_a_newline_is_refused_and_the_old_one_kept(operator):
    operator.post("/api/v1/channels", {"name": "hook", "kind": "webhook", "config": {"url": URL}, "secret": SECRET},
                  format="json")
    for bad in ("whsec_bmV3\n", "whsec_%%%", "whsec_"):
        problem = assert_problem(operator.post("/api/v1/channels/hook/rotate-secret", {"secret": bad}, format="json"),
                                 400, "invalid_channel")
        assert bad == "whsec_" or bad.strip() not in str(problem)
    assert Channel.objects.get(name="hook").secret == SECRET


def test_email_hosts_that_are_names_or_addresses_are_kept(operator):
    for host in ("smtp.example.com", "mailhog", "127.0.0.1", "::1", "relay-1.internal."):
        r = operator.post("/api/v1/channels", {"name": "mail", "kind": "email",
                                               "config": {"to": ["a@example.com"], "host": host}}, format="json")
        assert r.status_code == 201, (host, r.content)
        assert r.json()["config"]["host"] == host
        Channel.objects.filter(name="mail").delete()


def test_the_channel_list_is_paged_by_name_and_refuses_unknown_parameters(operator):
    for i in range(5):
        assert operator.post("/api/v1/channels", {"name": f"hook-{i}", "kind": "webhook", "config": {"url": URL}},
                             format="json").status_code == 201
    names, cursor = [], None
    while True:
        body = operator.get("/api/v1/channels", {"limit": 2, **({"cursor": cursor} if cursor else {})}).json()
        assert len(body["items"]) <= 2
        names += [c["name"] for c in body["items"]]
        cursor = body["next"]
        if cursor is None:
            break
    assert names == sorted(names) == ["console", *[f"hook-{i}" for i in range(5)]]
    problem = assert_problem(operator.get("/api/v1/channels", {"kind": "webhook"}), 400, "invalid_request")
    assert problem["errors"] == [{"field": "kind", "message": "unknown parameter"}]
    assert_problem(operator.get("/api/v1/channels", {"limit": 0}), 400, "invalid_request")
    assert_problem(operator.get("/api/v1/channels", {"cursor": "forged"}), 400, "invalid_cursor")
