"""``runtime.channels``: the one channel service. Every verb audited with actor and
time, bad input refused with nothing written, and a channel the ACTIVE policy routes to cannot
be disabled or deleted."""
import pytest

from core import channel_kinds
from core.errors import Conflict, InvalidRequest, NotFound
from notifications.adapters.registry import default_adapters
from notifications.models import Channel, ChannelAuditRecord
from notifications.runtime import channels
from policies import store
from policies.content import BOOTSTRAP_CONTENT

pytestmark = pytest.mark.django_db

URL = "http://127.0.0.1:9/hook"
SECRET = "whsec_c2VydmljZS10ZXN0LWtleQ=="


def audit(name):
    return list(ChannelAuditRecord.objects.filter(channel=name).order_by("at", "id").values_list("action", "actor"))


def snapshot(name):
    ch = Channel.objects.get(name=name)
    return ch.kind, ch.config, ch.secret, ch.enabled


def route_to(name):
    """Activate a uns-default version whose escalation targets ``name`` (a route the default
    ``channels`` does not show)."""
    content = {**BOOTSTRAP_CONTENT, "defaults": {**BOOTSTRAP_CONTENT["defaults"],
                                                 "escalation": {"target": name}}}
    draft = store.create_draft("uns-default", content, actor="admin")
    store.activate("uns-default", draft.version, actor="admin")


def test_every_verb_is_audited_with_actor_and_time(clock):
    channels.create("hook", "webhook", {"url": URL}, SECRET, actor="alice", clock=clock)
    clock.advance(1)
    channels.update("hook", {"timeout": 2.5}, actor="bob", clock=clock)
    clock.advance(1)
    channels.rotate_secret("hook", "whsec_bmV3LWtleQ==", actor="carol", clock=clock)
    clock.advance(1)
    channels.disable("hook", actor="dave", clock=clock)
    clock.advance(1)
    channels.enable("hook", actor="erin", clock=clock)
    clock.advance(1)
    channels.delete("hook", actor="frank", clock=clock)
    rows = list(ChannelAuditRecord.objects.filter(channel="hook").order_by("at"))
    assert [(r.action, r.actor, r.at - rows[0].at) for r in rows] == [
        ("CREATE", "alice", 0), ("UPDATE", "bob", 1), ("ROTATE_SECRET", "carol", 2), ("DISABLE", "dave", 3),
        ("ENABLE", "erin", 4), ("DELETE", "frank", 5)]
    assert rows[1].detail == {"changed": ["timeout"]}
    assert not Channel.objects.filter(name="hook").exists()
    for r in rows:  # what changed, never a value
        assert SECRET not in str(r.detail) and "bmV3" not in str(r.detail) and URL not in str(r.detail)


def test_repeats_change_nothing_and_write_no_audit():
    channels.create("hook", "webhook", {"url": URL}, actor="alice")
    channels.enable("hook", actor="alice")
    channels.update("hook", {"url": URL}, actor="alice")
    channels.disable("hook", actor="alice")
    channels.disable("hook", actor="alice")
    assert audit("hook") == [("CREATE", "alice"), ("DISABLE", "alice")]


@pytest.mark.parametrize("kind,config,secret,field", [
    ("webhook", {"url": "ftp://x/y"}, "", "config.url"),
    ("webhook", {}, "", "config.url"),
    ("webhook", {"url": URL, "timeout": -5}, "", "config.timeout"),
    ("webhook", {"url": URL, "timeout": "nan"}, "", "config.timeout"),
    ("webhook", {"url": URL, "retries": 3}, "", "config.retries"),
    ("email", {"to": ["nobody"]}, "", "config"),
    ("apprise", {}, "nosuch://user:pw-Secret-9@host", "secret"),
    ("console", {}, "a-secret", "secret"),
    ("pager", {}, "", "kind"),
])
def test_bad_input_is_refused_and_nothing_is_written(kind, config, secret, field):
    with pytest.raises(InvalidRequest) as caught:
        channels.create("c", kind, config, secret, actor="alice")
    assert caught.value.code == "invalid_channel"
    assert caught.value.extra["errors"][0]["field"] == field
    assert "pw-Secret-9" not in caught.value.detail
    assert not Channel.objects.filter(name="c").exists() and not ChannelAuditRecord.objects.exists()


@pytest.mark.parametrize("name", ["", "has space", "x" * 65, "nul\x00"])
def test_bad_names_are_refused(name):
    with pytest.raises(InvalidRequest):
        channels.create(name, "console", actor="alice")


def test_a_bad_update_leaves_the_channel_as_it_was():
    channels.create("hook", "webhook", {"url": URL, "timeout": 3}, SECRET, actor="alice")
    before = snapshot("hook")
    for changes in ({"url": "not a url"}, {"timeout": 0}, {"url": None}, {"kind": "email"}):
        with pytest.raises(InvalidRequest):
            channels.update("hook", changes, actor="bob")
    assert snapshot("hook") == before and audit("hook") == [("CREATE", "alice")]


def test_update_none_removes_a_member():
    channels.create("hook", "webhook", {"url": URL, "timeout": 3}, actor="alice")
    assert channels.update("hook", {"timeout": None}, actor="bob").config == {"url": URL}


def test_unknown_channels_are_not_found():
    for verb in (lambda: channels.update("nope", {}, actor="a"), lambda: channels.rotate_secret("nope", "x", actor="a"),
                 lambda: channels.enable("nope", actor="a"), lambda: channels.disable("nope", actor="a"),
                 lambda: channels.delete("nope", actor="a"), lambda: channels.send_test("nope", adapters={}, actor="a")):
        with pytest.raises(NotFound) as caught:
            verb()
        assert caught.value.code == "channel_not_found"


def test_a_taken_name_is_a_conflict():
    channels.create("hook", "webhook", {"url": URL}, actor="alice")
    with pytest.raises(Conflict) as caught:
        channels.create("hook", "console", actor="bob")
    assert caught.value.code == "channel_exists" and audit("hook") == [("CREATE", "alice")]


def test_disabling_or_deleting_a_channel_the_active_policy_routes_to_is_refused():
    # the bootstrap policy delivers to "console"
    before = snapshot("console")
    for verb in (channels.disable, channels.delete):
        with pytest.raises(Conflict) as caught:
            verb("console", actor="alice")
        assert caught.value.code == "channel_routed"
        assert caught.value.extra["routes"] == [{"policy_id": "uns-default", "version": 1,
                                                 "field": "defaults.channels"}]
        assert "uns-default v1 (defaults.channels)" in caught.value.detail
    assert snapshot("console") == before and audit("console") == []


def test_an_escalation_target_counts_as_a_route():
    channels.create("pager", "webhook", {"url": URL}, actor="alice")
    route_to("pager")
    with pytest.raises(Conflict, match="defaults.escalation.target"):
        channels.disable("pager", actor="alice")
    assert Channel.objects.get(name="pager").enabled is True


def test_a_channel_no_longer_routed_can_be_disabled():
    channels.create("pager", "webhook", {"url": URL}, actor="alice")
    route_to("pager")
    draft = store.create_draft("uns-default", BOOTSTRAP_CONTENT, actor="admin")
    store.activate("uns-default", draft.version, actor="admin")
    assert channels.disable("pager", actor="alice").enabled is False


def test_rotate_secret_checks_the_kind():
    channels.create("chat", "apprise", {}, "json://127.0.0.1:9/a", actor="alice")
    with pytest.raises(InvalidRequest):
        channels.rotate_secret("chat", "", actor="bob")  # an apprise channel's URLs are its secret
    with pytest.raises(InvalidRequest):
        channels.rotate_secret("console", "x", actor="bob")
    channels.rotate_secret("chat", "json://127.0.0.1:9/b", actor="bob")
    assert Channel.objects.get(name="chat").secret == "json://127.0.0.1:9/b"


def test_an_actor_is_required():
    with pytest.raises(InvalidRequest):
        channels.create("c", "console", actor="")


def test_every_channel_kind_is_the_registrys_and_has_an_adapter():
    assert tuple(k for k, _ in Channel.KINDS) == channel_kinds.KINDS
    assert set(default_adapters(lambda: 0.0)) == set(channel_kinds.KINDS)
