"""``Runtime.accept``: a durable PENDING leader under a frozen policy snapshot, exactly once;
bad input raises a typed error and writes nothing."""
import pytest

from core.keys import idempotency_key, sha256_hex
from notifications.models import Channel
from notifications.runtime import Conflict, InvalidRequest, UnknownChannel
from notifications.runtime.intake import validate_request
from policies import store
from policies.content import BOOTSTRAP_CONTENT, content_hash
from rthelpers import counts, kinds, only_event, request, row

pytestmark = pytest.mark.django_db


def test_accept_stores_a_pending_leader(rt, clock, channel):
    res = rt.accept("alice", request(idempotency_key="k-1"))
    n = res.notification
    assert res.created is True
    stored = row(n.id)
    assert len(stored.id) == 36
    assert stored.status == "PENDING"
    assert stored.principal == "alice"
    assert stored.key == idempotency_key("alice", "billing", "k-1")
    assert stored.fingerprint == sha256_hex(validate_request(request(idempotency_key="k-1")))
    assert (stored.attempts, stored.cycle, stored.cycle_attempts) == (0, 1, 0)
    assert stored.dead_letter is False
    assert stored.next_attempt == clock.now
    assert stored.lease_until == 0.0 and stored.lease_token is None
    assert stored.dedup_key is None and stored.dedup_owner_id is None and stored.dedup_generation is None
    assert stored.dedup_successor_id is None
    assert stored.ack_status is None and stored.deadline is None and stored.delivered_at is None
    assert stored.actor is None and stored.responded_at is None
    assert stored.outcome == {"channels_attempted": [], "channels_succeeded": [], "channels_failed": [],
                              "error_message": None}
    assert stored.notification["title"] == "disk full"
    assert stored.notification["channels"] == ["ops-hook"]
    assert kinds(n.id) == ["ACCEPTED"]


def test_accepted_payload_and_row_carry_the_frozen_policy_snapshot(rt, clock, channel):
    req = request(metadata={"ticket": "INC-7"})
    n = rt.accept("alice", req).notification

    ev = only_event(n.id, "ACCEPTED")
    assert set(ev.payload) == {"policy_id", "policy_hash", "revision", "effective", "effective_hash"}
    assert ev.payload["policy_id"] == "uns-default"
    assert ev.payload["policy_hash"] == content_hash(BOOTSTRAP_CONTENT)
    assert ev.payload["revision"] == 1
    effective = ev.payload["effective"]
    assert ev.payload["effective_hash"] == sha256_hex(effective)
    defaults = {k: v for k, v in BOOTSTRAP_CONTENT["defaults"].items() if k not in ("channels", "allowed_channels")}
    assert effective == {**defaults, "channels": ["ops-hook"]}
    assert effective["delivery_mode"] == "GUARANTEED" and effective["max_attempts"] == 5
    assert ev.at == clock.now
    assert ev.callback_pending is False

    meta = row(n.id).notification["metadata"]
    assert meta["ticket"] == "INC-7"
    frozen = meta["uns_resolution"]
    for field in ("policy_id", "policy_hash", "revision", "effective", "effective_hash"):
        assert frozen[field] == ev.payload[field]


def test_policy_rule_applies_and_is_recorded(rt, channel):
    n = rt.accept("alice", request(severity="critical")).notification
    frozen = row(n.id).notification["metadata"]["uns_resolution"]
    assert frozen["rule"] == "critical-needs-ack"
    assert frozen["effective"]["require_ack"] is True
    assert row(n.id).notification["require_ack"] is True


def test_snapshot_is_frozen_against_later_policy_changes(rt, channel):
    n = rt.accept("alice", request()).notification
    before = row(n.id).notification["metadata"]["uns_resolution"]
    content = {**BOOTSTRAP_CONTENT, "defaults": {**BOOTSTRAP_CONTENT["defaults"], "max_attempts": 1,
                                                 "delivery_mode": "BEST_EFFORT"}}
    draft = store.create_draft("uns-default", content, actor="admin")
    store.activate("uns-default", draft.version, actor="admin")
    later = rt.accept("alice", request()).notification
    assert only_event(later.id, "ACCEPTED").payload["revision"] == 2
    assert only_event(n.id, "ACCEPTED").payload["revision"] == 1
    assert row(n.id).notification["metadata"]["uns_resolution"] == before
    assert row(later.id).notification["metadata"]["uns_resolution"]["effective"]["delivery_mode"] == "BEST_EFFORT"
    assert row(later.id).notification["metadata"]["uns_resolution"]["policy_hash"] != before["policy_hash"]


def test_same_key_and_fingerprint_returns_the_same_row_and_writes_nothing(rt, clock, channel):
    first = rt.accept("alice", request(idempotency_key="k-1")).notification
    before = counts()
    clock.advance(30)
    again = rt.accept("alice", request(idempotency_key="k-1"))
    assert again.created is False
    assert again.notification.id == first.id
    assert counts() == before


def test_idempotent_repeat_returns_current_state_after_delivery(rt, channel):
    first = rt.accept("alice", request(idempotency_key="k-1")).notification
    rt.dispatch()
    before = counts()
    again = rt.accept("alice", request(idempotency_key="k-1"))
    assert (again.created, again.notification.id, again.notification.status) == (False, first.id, "DELIVERED")
    assert counts() == before


def test_same_key_other_fingerprint_is_an_idempotency_conflict(rt, channel):
    first = rt.accept("alice", request(idempotency_key="k-1")).notification
    before = counts()
    with pytest.raises(Conflict) as err:
        rt.accept("alice", request(idempotency_key="k-1", title="disk really full"))
    assert err.value.code == "idempotency_conflict"
    assert err.value.status == 409
    assert err.value.extra["notification_id"] == first.id
    assert counts() == before


def test_idempotency_key_is_scoped_by_principal_and_source(rt, channel):
    a = rt.accept("alice", request(idempotency_key="k-1")).notification
    b = rt.accept("bob", request(idempotency_key="k-1")).notification
    c = rt.accept("alice", request(idempotency_key="k-1", source="payroll")).notification
    assert len({a.id, b.id, c.id}) == 3


def test_requests_without_idempotency_key_are_distinct(rt, channel):
    a = rt.accept("alice", request()).notification
    b = rt.accept("alice", request()).notification
    assert a.id != b.id and a.key != b.key


BAD_REQUESTS = [
    pytest.param({"title": "t", "channels": ["ops-hook"]}, "source", id="missing-source"),
    pytest.param({"source": "svc", "channels": ["ops-hook"]}, "title", id="missing-title"),
    pytest.param(request(title="   "), "title", id="blank-title"),
    pytest.param(request(title=42), "title", id="title-not-string"),
    pytest.param(request(source=["svc"]), "source", id="source-not-string"),
    pytest.param(request(title="x" * 501), "title", id="title-too-long"),
    pytest.param(request(severity="urgent"), "severity", id="unknown-severity"),
    pytest.param(request(channels="ops-hook"), "channels", id="channels-not-list"),
    pytest.param(request(channels=[1]), "channels", id="channel-not-string"),
    pytest.param(request(channels=["ops-hook"] * 17), "channels", id="too-many-channels"),
    pytest.param(request(require_ack="yes"), "require_ack", id="require-ack-not-bool"),
    pytest.param(request(metadata=["a"]), "metadata", id="metadata-not-object"),
    pytest.param(request(metadata={"uns_resolution": {}}), "metadata.uns_resolution", id="reserved-metadata"),
    pytest.param(request(metadata={"blob": "x" * (16 * 1024)}), "metadata", id="oversized-metadata"),
    pytest.param(request(titel="typo"), "titel", id="unknown-field"),
    pytest.param(request(principal="mallory"), "principal", id="principal-is-not-a-body-field"),
]


@pytest.mark.parametrize("body,field", BAD_REQUESTS)
def test_invalid_request_raises_and_writes_nothing(rt, channel, body, field):
    before = counts()
    with pytest.raises(InvalidRequest) as err:
        rt.accept("alice", body)
    assert err.value.status == 400
    assert field in [e["field"] for e in err.value.extra["errors"]]
    assert counts() == before


def test_every_problem_is_reported_at_once(rt, channel):
    with pytest.raises(InvalidRequest) as err:
        rt.accept("alice", {"title": 5, "severity": "loud", "bogus": 1})
    fields = {e["field"] for e in err.value.extra["errors"]}
    assert {"source", "title", "severity", "bogus"} <= fields


def test_non_object_request_is_invalid(rt, channel):
    before = counts()
    with pytest.raises(InvalidRequest):
        rt.accept("alice", ["not", "an", "object"])
    assert counts() == before


def test_missing_principal_is_invalid(rt, channel):
    before = counts()
    with pytest.raises(InvalidRequest) as err:
        rt.accept("", request())
    assert err.value.code == "principal_required"
    assert counts() == before


def test_metadata_just_under_the_limit_is_accepted(rt, channel):
    # {"blob":"..."} is 11 bytes of JSON around the value
    res = rt.accept("alice", request(metadata={"blob": "x" * (16 * 1024 - 11)}))
    assert res.created


def test_unknown_channel_raises_and_writes_nothing(rt, channel):
    before = counts()
    with pytest.raises(UnknownChannel) as err:
        rt.accept("alice", request(channels=["ops-hook", "nope"]))
    assert err.value.code == "unknown_channel"
    assert err.value.status == 422
    assert counts() == before


def test_disabled_channel_is_unknown(rt, channel):
    Channel.objects.filter(name="ops-hook").update(enabled=False)
    before = counts()
    with pytest.raises(UnknownChannel):
        rt.accept("alice", request(dedup_key="d-1"))
    assert counts() == before


def test_policy_default_channel_must_be_configured(rt, db):
    # No channels named: the bootstrap policy's ``console`` channel applies (seeded after
    # migrate), and here it is disabled.
    Channel.objects.filter(name="console").update(enabled=False)
    before = counts()
    with pytest.raises(UnknownChannel):
        rt.accept("alice", {"source": "svc", "title": "t", "dedup_key": "d-1"})
    assert counts() == before


def test_policy_default_channel_is_used_when_none_named(rt, clock, db):
    assert Channel.objects.filter(name="console", kind="console", enabled=True).exists()  # seeded
    n = rt.accept("alice", {"source": "svc", "title": "t"}).notification
    assert row(n.id).notification["channels"] == ["console"]
    assert row(n.id).notification["requested_channels"] == []
    assert [r.status for r in rt.dispatch()] == ["DELIVERED"]
