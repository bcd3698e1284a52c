"""The operational event catalog (reference section 3): one run through every runtime path emits
every kind except RETENTION_APPLIED (maintenance), each with exactly the catalog's payload fields;
a second test runs retention with and without an archive for RETENTION_APPLIED."""
import pytest

from notifications.models import Event
from rthelpers import fail, request, row

pytestmark = pytest.mark.django_db

# Section 3, "Key payload Fields", transcribed.
CATALOG = {
    "ACCEPTED": {"policy_id", "policy_hash", "revision", "effective", "effective_hash"},
    "DEDUP_LINKED": {"owner_id", "generation", "owner_status"},
    "ATTEMPT_STARTED": {"attempt", "cycle", "cycle_attempt", "recovery_may_repeat_provider_effect"},
    "CHANNEL_ATTEMPT_STARTED": {"channel", "lease_token", "attempt", "cycle", "cycle_attempt",
                                "provider_effect_may_have_occurred"},
    "CHANNEL_ATTEMPT_RESULT": {"lease_token", "attempt", "cycle", "cycle_attempt", "channel", "success",
                               "message_id", "error", "metadata", "provider_observed_at"},
    "LEASE_LOST": {"lease_token", "attempt", "provider_effect_may_have_occurred"},
    "DELIVERY_RESULT": {"status", "attempt", "cycle", "cycle_attempt", "dead_letter", "outcome"},
    "OBLIGATION_HANDED_OFF": {"successor_id", "generation"},
    "DEDUP_SATISFIED": {"previous_owner_id", "owner_id", "generation"},
    "DEDUP_OWNER_PROMOTED": {"previous_owner_id", "owner_id", "generation"},
    "DEDUP_RELINKED": {"previous_owner_id", "owner_id", "generation"},
    "ACKED": {"actor", "metadata"},
    "DISMISSED": {"actor", "metadata"},
    "TIMED_OUT": {"actor", "metadata"},
    "REPLAY_REQUESTED": {"actor", "cycle", "cumulative_attempts"},
    "FAILURE_RESOLVED": {"actor"},
}
CALLBACK_KINDS = {"ACKED", "DISMISSED", "TIMED_OUT"}
# "operator, cutoff, deleted_rows, notification_ids, dedup_keys, archive or removed"
RETENTION_APPLIED = {"operator", "cutoff", "deleted_rows", "notification_ids", "dedup_keys"}


def test_every_reference_path_emits_catalog_payloads(make_runtime, clock, webhook, channel, policy):
    policy(max_attempts=1)
    rt = make_runtime(callback=lambda body: None)

    def one(**fields):
        nid = rt.accept("alice", request(**fields)).notification.id
        clock.advance(1)
        return nid

    # dedup group: leader exhausts, first follower promoted, the other relinked, then satisfied
    leader = one(dedup_key="g", require_ack=True)
    f1 = one(dedup_key="g", require_ack=True)
    f2 = one(dedup_key="g", require_ack=True)
    webhook.script.append(fail())
    rt.dispatch()
    assert row(leader).dedup_successor_id == f1
    rt.dispatch()
    assert row(f1).status == "DELIVERED" and row(f2).status == "DEDUPLICATED"
    rt.acknowledge(f1, "bob")

    # dismissed, then timed out
    dismissed = one(require_ack=True)
    rt.dispatch()
    rt.acknowledge(dismissed, "bob", dismiss=True)
    timed_out = one(require_ack=True)
    rt.dispatch()
    clock.now = row(timed_out).deadline
    assert rt.expire() == [timed_out]

    # replayed and resolved dead letters
    replayed = one()
    webhook.script.append(fail())
    rt.dispatch()
    rt.replay(replayed, "oscar")
    rt.dispatch()
    assert row(replayed).status == "DELIVERED"
    resolved = one()
    webhook.script.append(fail(retryable=False, error="HTTP 400"))
    rt.dispatch()
    rt.resolve_failure(resolved, "oscar")

    # a stale worker
    stale = one()

    def slow(**_):
        clock.advance(61)
        return webhook.default

    webhook.script.append(slow)
    assert [r.status for r in rt.dispatch()] == ["LEASE_LOST"]
    assert [r.status for r in rt.dispatch()] == ["DELIVERED"]
    assert row(stale).status == "DELIVERED"

    events = list(Event.objects.all())
    assert {e.kind for e in events} == set(CATALOG)
    for e in events:
        assert set(e.payload) == CATALOG[e.kind], e.kind
        assert e.callback_pending is (e.kind in CALLBACK_KINDS), e.kind
        assert len(e.id) == 36 and len(e.notification_id) == 36


def test_retention_receipts_carry_the_catalog_payload(rt, clock, webhook, channel, tmp_path):
    from notifications.runtime.maintenance import maintain

    for _ in range(2):
        rt.accept("alice", request(dedup_key="r"))
        rt.dispatch()
        clock.advance(3600)
    cutoff = clock.now
    clock.advance(1)
    maintain(rt, cutoff=cutoff, apply=True, operator="oscar", batch_size=1, archive=tmp_path)
    maintain(rt, cutoff=cutoff, apply=True, operator="oscar")  # nothing left: an empty receipt, no archive
    receipts = list(Event.objects.filter(kind="RETENTION_APPLIED"))
    assert len(receipts) == 4  # two notification batches, one window batch, the empty run
    for e in receipts:
        extra = set(e.payload) - RETENTION_APPLIED
        assert RETENTION_APPLIED <= set(e.payload) and extra in ({"archive"}, {"removed"}), set(e.payload)
        assert e.notification_id == e.id and len(e.id) == 36 and e.callback_pending is False
    assert {e.payload["deleted_rows"]["uns_dedup"] for e in receipts} == {0, 1}
