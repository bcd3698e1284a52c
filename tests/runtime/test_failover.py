"""Failover channels: a policy's ``fallback_channels`` (``{channel: [fallback, ...]}``),
frozen in the effective settings at acceptance, shown by simulation. When a channel's delivery
fails permanently, or fails on the cycle's last attempt, its next fallback is tried in the same
attempt, behind its own committed lease check (CHANNEL_ATTEMPT_STARTED), after a
CHANNEL_FAILED_OVER row; the notification is dead-lettered only when the last one fails too; a
fallback that fails transiently is what the retries try; replay starts every chain again."""
from collections import defaultdict, deque

import pytest

from notifications.adapters.base import DeliveryResult
from notifications.models import Channel
from policies.content import BOOTSTRAP_CONTENT, resolve_settings, validate_content
from rthelpers import fail, kinds, request, row, timeline

pytestmark = pytest.mark.django_db

OK = DeliveryResult(True, message_id="ok")
GONE = fail(retryable=False, error="HTTP 410")
DOWN = fail(retryable=True, error="HTTP 503")


class ByChannel:
    """A webhook adapter scripted per channel name (``script[name]``: results in order, then
    success); ``calls``: channel names in call order. ``on_call(name)`` runs before answering."""

    def __init__(self, on_call=None, **script):
        self.script = defaultdict(deque, {k: deque(v) for k, v in script.items()})
        self.calls = []
        self.on_call = on_call

    def send(self, notification, target, context):
        self.calls.append(target.name)
        if self.on_call:
            self.on_call(target.name)
        return self.script[target.name].popleft() if self.script[target.name] else OK


@pytest.fixture
def hooks(channel):
    for name in ("backup-hook", "last-hook"):
        Channel.objects.create(name=name, kind="webhook", config={"url": f"http://127.0.0.1:9/{name}"})


@pytest.fixture
def failover(policy, hooks):
    """Policy: ops-hook falls back to backup-hook, then last-hook; 2 attempts per cycle."""
    def set_policy(**defaults):
        return policy(fallback_channels={"ops-hook": ["backup-hook", "last-hook"]}, max_attempts=2, **defaults)

    return set_policy


def runtime(make_runtime, adapter):
    return make_runtime(adapters={"webhook": adapter})


def channel_events(nid):
    return [(e.kind, e.payload.get("channel")) for e in timeline(nid)
            if e.kind in ("CHANNEL_ATTEMPT_STARTED", "CHANNEL_ATTEMPT_RESULT", "CHANNEL_FAILED_OVER")]


# -- policy content --------------------------------------------------------------------------

def content_with(fallbacks, where="defaults"):
    content = {**BOOTSTRAP_CONTENT, "defaults": dict(BOOTSTRAP_CONTENT["defaults"]),
               "rules": [{"name": "r", "match": {"severity": "critical"}, "set": {}}]}
    if where == "defaults":
        content["defaults"]["fallback_channels"] = fallbacks
    else:
        content["rules"][0]["set"]["fallback_channels"] = fallbacks
    return content


@pytest.mark.parametrize("where", ["defaults", "rule"])
def test_fallback_channels_is_an_optional_setting(where):
    assert validate_content(BOOTSTRAP_CONTENT) == []  # content written before it stays valid
    assert validate_content(content_with({"ops-hook": ["backup-hook"]}, where)) == []
    assert validate_content(content_with({}, where)) == []  # a rule may clear the defaults'


@pytest.mark.parametrize("value, field, message", [
    ("backup-hook", "defaults.fallback_channels", "must be an object"),
    ({"ops-hook": "backup-hook"}, "defaults.fallback_channels.ops-hook", "must be a list"),
    ({"ops-hook": []}, "defaults.fallback_channels.ops-hook", None),
    ({"ops-hook": ["ops-hook"]}, "defaults.fallback_channels.ops-hook", "a channel cannot be its own fallback"),
    ({"ops-hook": ["b", "b"]}, "defaults.fallback_channels.ops-hook", "names a fallback twice"),
    ({"ops-hook": ["a", "b", "c", "d", "e"]}, "defaults.fallback_channels.ops-hook", "must have at most 4 items"),
    ({"ops-hook": [""]}, "defaults.fallback_channels.ops-hook", None),
])
def test_bad_fallback_channels_are_refused_naming_the_field(value, field, message):
    errors = validate_content(content_with(value))
    assert [e["field"] for e in errors] == [field]
    if message:
        assert errors[0]["message"] == message


def test_resolution_keeps_the_fallbacks_of_the_effective_channels_only():
    content = content_with({"ops-hook": ["backup-hook"], "other": ["x"]})
    effective, _ = resolve_settings(content, {"channels": ["ops-hook"]})
    assert effective["fallback_channels"] == {"ops-hook": ["backup-hook"]}
    effective, _ = resolve_settings(content, {"channels": ["pager"]})
    assert "fallback_channels" not in effective  # so a policy without failover hashes as before
    assert resolve_settings(BOOTSTRAP_CONTENT, {"channels": ["ops-hook"]})[0] == effective | {"channels": ["ops-hook"]}


def test_the_fallbacks_are_frozen_at_acceptance_and_shown_by_simulation(make_runtime, clock, failover):
    from policies.simulation import simulate

    failover()
    rt = runtime(make_runtime, ByChannel())
    n = rt.accept("alice", request()).notification
    frozen = n.notification["metadata"]["uns_resolution"]["effective"]
    assert frozen["fallback_channels"] == {"ops-hook": ["backup-hook", "last-hook"]}
    assert timeline(n.id, "ACCEPTED")[0].payload["effective"]["fallback_channels"] == frozen["fallback_channels"]
    shown = simulate("alice", request(idempotency_key="sim"), now=clock.now)
    assert shown["effective"]["fallback_channels"] == frozen["fallback_channels"]
    assert shown["effective_hash"] == n.notification["metadata"]["uns_resolution"]["effective_hash"]


# -- dispatch ----------------------------------------------------------------------------------

def test_a_permanent_failure_fails_over_in_the_same_attempt_behind_its_own_lease_check(make_runtime, clock,
                                                                                         failover):
    failover()
    adapter = ByChannel(**{"ops-hook": [GONE]})
    rt = runtime(make_runtime, adapter)
    n = rt.accept("alice", request()).notification
    [report] = rt.dispatch()
    assert report.status == "DELIVERED" and adapter.calls == ["ops-hook", "backup-hook"]
    assert channel_events(n.id) == [
        ("CHANNEL_ATTEMPT_STARTED", "ops-hook"), ("CHANNEL_ATTEMPT_RESULT", "ops-hook"),
        ("CHANNEL_FAILED_OVER", "ops-hook"),
        ("CHANNEL_ATTEMPT_STARTED", "backup-hook"), ("CHANNEL_ATTEMPT_RESULT", "backup-hook"),
    ]
    [over] = timeline(n.id, "CHANNEL_FAILED_OVER")
    [started] = timeline(n.id, "ATTEMPT_STARTED")
    lease = timeline(n.id, "CHANNEL_ATTEMPT_STARTED")[1].payload["lease_token"]
    assert over.payload == {"channel": "ops-hook", "fallback": "backup-hook", "primary": "ops-hook",
                            "reason": "permanent_failure", "error": "HTTP 410", "lease_token": lease,
                            "attempt": 1, "cycle": 1, "cycle_attempt": 1}
    assert started.payload["attempt"] == 1
    r = row(n.id)
    assert (r.status, r.attempts, r.dead_letter) == ("DELIVERED", 1, False)
    assert r.outcome["channels_succeeded"] == ["backup-hook"] and r.outcome["channels_failed"] == ["ops-hook"]
    assert r.outcome["failover"] == {"cycle": 1, "given_up": ["ops-hook"]}


def test_transient_failures_fail_over_only_on_the_cycles_last_attempt(make_runtime, clock, failover):
    failover()
    adapter = ByChannel(**{"ops-hook": [DOWN, DOWN]})
    rt = runtime(make_runtime, adapter)
    n = rt.accept("alice", request()).notification
    assert rt.dispatch()[0].status == "PENDING" and adapter.calls == ["ops-hook"]  # retried, not failed over
    clock.now = row(n.id).next_attempt
    assert rt.dispatch()[0].status == "DELIVERED"
    assert adapter.calls == ["ops-hook", "ops-hook", "backup-hook"]
    assert timeline(n.id, "CHANNEL_FAILED_OVER")[0].payload["reason"] == "attempts_exhausted"


def test_dead_lettered_only_when_the_last_fallback_fails_too(make_runtime, clock, failover):
    failover()
    adapter = ByChannel(**{"ops-hook": [GONE], "backup-hook": [GONE], "last-hook": [GONE]})
    rt = runtime(make_runtime, adapter)
    n = rt.accept("alice", request()).notification
    [report] = rt.dispatch()
    assert (report.status, report.dead_letter) == ("FAILED", True)
    assert adapter.calls == ["ops-hook", "backup-hook", "last-hook"]
    assert [(e.payload["channel"], e.payload["fallback"]) for e in timeline(n.id, "CHANNEL_FAILED_OVER")] == [
        ("ops-hook", "backup-hook"), ("backup-hook", "last-hook")]
    assert kinds(n.id)[-1] == "DELIVERY_RESULT"
    r = row(n.id)
    assert (r.status, r.dead_letter, r.cycle_attempts) == ("FAILED", True, 1)
    assert r.outcome["channels_failed"] == ["ops-hook", "backup-hook", "last-hook"]


def test_best_effort_tries_the_chain_and_ends_failed_without_a_dead_letter(make_runtime, clock, failover):
    failover(delivery_mode="BEST_EFFORT")
    adapter = ByChannel(**{"ops-hook": [GONE], "backup-hook": [GONE], "last-hook": [GONE]})
    rt = runtime(make_runtime, adapter)
    rt.accept("alice", request())
    assert [(r.status, r.dead_letter) for r in rt.dispatch()] == [("FAILED", False)]
    assert len(adapter.calls) == 3


def test_a_fallback_that_fails_transiently_is_what_the_retry_tries(make_runtime, clock, failover):
    failover()
    adapter = ByChannel(**{"ops-hook": [GONE], "backup-hook": [DOWN]})
    rt = runtime(make_runtime, adapter)
    n = rt.accept("alice", request()).notification
    assert rt.dispatch()[0].status == "PENDING"
    assert row(n.id).outcome["failover"] == {"cycle": 1, "given_up": ["ops-hook"]}
    clock.now = row(n.id).next_attempt
    assert rt.dispatch()[0].status == "DELIVERED"
    assert adapter.calls == ["ops-hook", "backup-hook", "backup-hook"]  # the primary is not tried again


def test_replay_starts_the_whole_chain_again(make_runtime, clock, failover):
    failover()
    adapter = ByChannel(**{"ops-hook": [GONE, GONE], "backup-hook": [GONE], "last-hook": [GONE]})
    rt = runtime(make_runtime, adapter)
    n = rt.accept("alice", request()).notification
    rt.dispatch()
    assert row(n.id).dead_letter
    rt.replay(n.id, "oscar")
    adapter.calls.clear()
    [report] = rt.dispatch()
    assert report.status == "DELIVERED"
    assert adapter.calls == ["ops-hook", "backup-hook"]  # from the primary, then its first fallback
    r = row(n.id)
    assert (r.cycle, r.outcome["failover"]) == (2, {"cycle": 2, "given_up": ["ops-hook"]})


def test_a_lease_lost_before_the_fallback_stops_the_chain(make_runtime, clock, failover):
    failover()
    rt = None

    def stall(name):
        if name == "ops-hook":
            clock.advance(rt.lease_seconds + 1)  # the lease expires during the primary's call

    adapter = ByChannel(on_call=stall, **{"ops-hook": [GONE]})
    rt = runtime(make_runtime, adapter)
    n = rt.accept("alice", request()).notification
    assert [r.status for r in rt.dispatch()] == ["LEASE_LOST"]
    assert adapter.calls == ["ops-hook"]  # the fallback is never called without the lease
    assert "CHANNEL_ATTEMPT_STARTED" not in [k for k, ch in channel_events(n.id) if ch == "backup-hook"]
    assert row(n.id).status == "PENDING"


def test_each_channel_of_a_notification_has_its_own_chain(make_runtime, clock, policy, hooks):
    Channel.objects.create(name="pager", kind="webhook", config={"url": "http://127.0.0.1:9/pager"})
    policy(fallback_channels={"pager": ["last-hook"]})
    adapter = ByChannel(**{"ops-hook": [GONE], "pager": [GONE]})
    rt = runtime(make_runtime, adapter)
    n = rt.accept("alice", request(channels=["ops-hook", "pager"])).notification
    [report] = rt.dispatch()
    # ops-hook has no fallback: its permanent failure dead-letters, pager's fallback delivered
    assert (report.status, report.dead_letter) == ("FAILED", True)
    assert sorted(adapter.calls) == ["last-hook", "ops-hook", "pager"]
    assert row(n.id).outcome["channels_succeeded"] == ["last-hook"]


def test_the_policy_api_refuses_bad_fallbacks_and_activation_needs_them_configured(api, channel):
    admin = api(groups=("policy_admin",), name="pat")
    bad = content_with({"ops-hook": ["ops-hook"]})
    answer = admin.post("/api/v1/policies", {"policy_id": "fo", "content": bad}, format="json")
    assert answer.status_code == 400 and answer.json()["code"] == "invalid_policy_content"
    assert answer.json()["errors"] == [{"field": "defaults.fallback_channels.ops-hook",
                                        "message": "a channel cannot be its own fallback"}]
    good = content_with({"ops-hook": ["nowhere"]})
    assert admin.post("/api/v1/policies", {"policy_id": "fo", "content": good}, format="json").status_code == 201
    answer = admin.post("/api/v1/policies/fo/versions/1/activate", {}, format="json")
    assert answer.status_code == 400
    assert answer.json()["errors"] == [{"field": "defaults.fallback_channels.ops-hook",
                                        "message": "channel 'nowhere' is not configured or is disabled"}]
