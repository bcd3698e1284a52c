"""``runtime.bulk``: bulk actions on a filtered list, settled item by item through the runtime's
single-item verbs, bounded per run, resumable, with per-item results and the bulk action's id
in each transition's event and audit row."""
import uuid

import pytest

from notifications.models import AckAuditRecord, BulkAction, BulkActionItem, Event, Notification
from notifications.runtime import Conflict, InvalidRequest, NotFound, bulk
from notifications.runtime.schemas import MAX_BULK_CHUNK
from rthelpers import fail, request, row

pytestmark = pytest.mark.django_db


def dead_letters(rt, webhook, n, **fields):
    ids = []
    for i in range(n):
        ids.append(rt.accept("alice", request(title=f"node down {i}", **fields)).notification.id)
        rt.clock.advance(0.001)
    webhook.script.extend(fail(retryable=False, error="HTTP 404") for _ in ids)
    while rt.dispatch():
        pass
    assert all(row(i).dead_letter for i in ids)
    return ids


def awaiting(rt, clock, n, **fields):
    ids = [rt.accept("alice", request(require_ack=True, title=f"health check {i}", **fields)).notification.id
           for i in range(n)]
    clock.advance(1)
    rt.dispatch()
    assert all(row(i).ack_status == "PENDING" for i in ids)
    return ids


def run_to_end(rt, bulk_id, actor="oscar", limit=None):
    results = []
    for _ in range(100):
        out = rt.run_bulk(bulk_id, actor, limit)
        results += out["results"]
        if out["state"] == "DONE":
            return out, results
    raise AssertionError("bulk action did not finish")


def test_replay_all_matching_settles_each_item_once_with_results(rt, clock, webhook, channel):
    ids = dead_letters(rt, webhook, 5, source="billing")
    other = dead_letters(rt, webhook, 2, source="shipping")
    created = rt.create_bulk("oscar", {"action": "replay", "filter": {"source": "billing"}, "expected": 5})
    assert (created.matched, created.total, created.state) == (5, 5, "RUNNING")
    out, results = run_to_end(rt, created.id, limit=2)
    assert (out["settled"], out["refused"], out["remaining"], out["cursor"]) == (5, 0, 0, None)
    assert sorted(r["notification_id"] for r in results) == sorted(ids)
    assert all(r["result"] == "settled" and r["actor"] == "oscar" for r in results)
    for nid in ids:
        r = row(nid)
        assert (r.status, r.dead_letter, r.cycle) == ("PENDING", False, 2)
        [ev] = Event.objects.filter(notification_id=nid, kind="REPLAY_REQUESTED")
        assert ev.payload["bulk_action_id"] == created.id and ev.payload["actor"] == "oscar"
    assert all(row(nid).dead_letter for nid in other)  # outside the filter: untouched
    # a DONE bulk action settles nothing more
    again = rt.run_bulk(created.id, "oscar")
    assert again["results"] == [] and again["settled"] == 5


def test_items_are_frozen_at_the_confirmed_n_in_list_order(rt, clock, webhook, channel):
    ids = dead_letters(rt, webhook, 4)
    created = rt.create_bulk("oscar", {"action": "resolve", "expected": 3})
    assert (created.matched, created.total) == (4, 3)
    frozen = list(BulkActionItem.objects.filter(bulk=created).order_by("ordinal").values_list("notification_id", flat=True))
    assert frozen == ids[:3]  # oldest accepted first, as /ui/dlq lists them
    # a dead letter arriving after the confirmation is not taken
    dead_letters(rt, webhook, 1)
    out, _ = run_to_end(rt, created.id)
    assert out["settled"] == 3
    assert row(ids[3]).dead_letter
    ev = Event.objects.get(notification_id=ids[0], kind="FAILURE_RESOLVED")
    assert ev.payload == {"actor": "oscar", "bulk_action_id": created.id}


def test_items_settled_elsewhere_meanwhile_are_refused_with_the_reason(rt, clock, webhook, channel):
    ids = dead_letters(rt, webhook, 3)
    created = rt.create_bulk("oscar", {"action": "replay", "expected": 3})
    rt.replay(ids[1], "someone-else")  # a single action wins first
    out, results = run_to_end(rt, created.id)
    by_id = {r["notification_id"]: r for r in results}
    assert (out["settled"], out["refused"]) == (2, 1)
    assert by_id[ids[1]]["result"] == "refused" and by_id[ids[1]]["code"] == "not_dead_lettered"
    assert by_id[ids[1]]["detail"]
    assert Event.objects.filter(notification_id=ids[1], kind="REPLAY_REQUESTED").count() == 1


def test_run_is_bounded_and_resumes_from_the_cursor(rt, clock, webhook, channel):
    dead_letters(rt, webhook, MAX_BULK_CHUNK + 3)
    created = rt.create_bulk("oscar", {"action": "resolve", "expected": MAX_BULK_CHUNK + 3})
    first = rt.run_bulk(created.id, "oscar")
    assert len(first["results"]) == MAX_BULK_CHUNK
    assert (first["remaining"], first["cursor"], first["state"]) == (3, MAX_BULK_CHUNK, "RUNNING")
    # a crash here loses nothing: a second caller continues from the cursor
    second = rt.run_bulk(created.id, "olga")
    assert [r["ordinal"] for r in second["results"]] == [MAX_BULK_CHUNK, MAX_BULK_CHUNK + 1, MAX_BULK_CHUNK + 2]
    assert second["state"] == "DONE" and second["finished_at"] == clock.now
    assert {r["actor"] for r in second["results"]} == {"olga"}


def test_bulk_ack_and_snooze_carry_the_bulk_id_in_the_audit(rt, clock, channel):
    ids = awaiting(rt, clock, 3, source="node-health")
    acked = rt.create_bulk("rita", {"action": "ack", "filter": {"q": "health"}, "expected": 2})
    out, results = run_to_end(rt, acked.id, "rita")
    assert out["settled"] == 2
    first = results[0]["notification_id"]
    audit = AckAuditRecord.objects.get(notification_id=first)
    assert (audit.acked_by, audit.new_status, audit.ack_metadata) == ("rita", "ACKED", {"bulk_action_id": acked.id})
    [left] = set(ids) - {r["notification_id"] for r in results}
    snoozed = rt.create_bulk("rita", {"action": "snooze", "expected": 5, "seconds": 600})
    assert snoozed.total == 1  # only the one still awaiting
    out, [result] = run_to_end(rt, snoozed.id, "rita")
    assert result["notification_id"] == left and result["result"] == "settled"
    assert row(left).deadline == clock.now + 600
    audit = AckAuditRecord.objects.get(notification_id=left)
    assert audit.ack_metadata["metadata"] == {"bulk_action_id": snoozed.id} and audit.ack_metadata["action"] == "snooze"


def test_an_idempotent_repeat_is_not_counted_as_settled_by_the_bulk(rt, clock, channel):
    [nid] = awaiting(rt, clock, 1)
    created = rt.create_bulk("rita", {"action": "ack", "expected": 1})
    rt.acknowledge(nid, "rita")  # the same actor, outside the bulk action
    _, [result] = run_to_end(rt, created.id, "rita")
    assert (result["result"], result["code"]) == ("refused", "already_settled")


@pytest.mark.parametrize("body, field", [
    ({"action": "explode", "expected": 1}, "action"),
    ({"action": "replay", "expected": 0}, "expected"),
    ({"action": "replay", "expected": 5001}, "expected"),
    ({"action": "replay"}, "expected"),
    ({"action": "snooze", "expected": 1}, "seconds"),
    ({"action": "replay", "expected": 1, "seconds": 600}, "seconds"),
    ({"action": "replay", "expected": 1, "filter": {"colour": "red"}}, "filter.colour"),
    ({"action": "replay", "expected": 1, "filter": {"q": 5}}, "q"),
    ({"action": "replay", "expected": 1, "filter": {"q": "x" * 501}}, "q"),
])
def test_bad_bulk_requests_are_refused_and_store_nothing(rt, body, field):
    with pytest.raises(InvalidRequest) as exc:
        rt.create_bulk("oscar", body)
    assert field in [e["field"] for e in exc.value.extra["errors"]]
    assert BulkAction.objects.count() == 0


def test_nothing_matching_is_a_conflict(rt, clock, webhook, channel):
    dead_letters(rt, webhook, 1, source="billing")
    with pytest.raises(Conflict) as exc:
        rt.create_bulk("oscar", {"action": "replay", "filter": {"source": "nope"}, "expected": 3})
    assert exc.value.code == "bulk_nothing_matches"
    assert BulkAction.objects.count() == 0


def test_unknown_bulk_and_bad_limits(rt, clock, webhook, channel):
    with pytest.raises(NotFound):
        rt.run_bulk("no-such-bulk", "oscar")
    dead_letters(rt, webhook, 1)
    created = rt.create_bulk("oscar", {"action": "replay", "expected": 1})
    for limit in (0, MAX_BULK_CHUNK + 1, True):
        with pytest.raises(InvalidRequest):
            rt.run_bulk(created.id, "oscar", limit)
    with pytest.raises(InvalidRequest):
        rt.run_bulk(created.id, "")
    assert bulk.progress(BulkAction.objects.get()).get("remaining") == 1
    assert Notification.objects.filter(dead_letter=True).count() == 1


def test_a_selection_is_a_filter_too(rt, clock, webhook, channel):
    ids = dead_letters(rt, webhook, 4)
    created = rt.create_bulk("oscar", {"action": "resolve", "filter": {"ids": [ids[3], ids[1], str(uuid.uuid4())]},
                                       "expected": 3})
    assert created.total == 2  # the selected rows still in the DLQ, in list order
    out, results = run_to_end(rt, created.id)
    assert [r["notification_id"] for r in results] == [ids[1], ids[3]]
    for bad in ([], "x", [1], ["x" * 37], ["a"] * 5001, ["unknown-id"], [ids[0], "not-a-uuid"]):
        with pytest.raises(InvalidRequest):
            rt.create_bulk("oscar", {"action": "resolve", "filter": {"ids": bad}, "expected": 1})


def test_a_bulk_action_takes_the_filters_of_its_list(rt, clock, webhook, channel):
    """One parser (``lists.parse_list_filter``): the DLQ's severity, channel, reason and
    dedup_key filters select for a bulk action exactly what they select on the list; the inbox
    has no ``reason`` filter, so a bulk ACK with one is refused, not widened."""
    from notifications.runtime import lists

    critical = dead_letters(rt, webhook, 2, source="billing", severity="critical")
    dead_letters(rt, webhook, 3, source="billing", severity="info")
    filters = {"severity": "critical", "channel": "ops-hook", "reason": "http 404", "source": "billing"}
    listed = list(lists.dead_letters(lists.parse_list_filter(filters, "dlq")).values_list("id", flat=True))
    assert sorted(listed) == sorted(critical)
    created = rt.create_bulk("oscar", {"action": "resolve", "filter": filters, "expected": 10})
    assert (created.matched, created.total) == (2, 2)
    assert sorted(BulkActionItem.objects.filter(bulk=created).values_list("notification_id", flat=True)) == sorted(critical)
    with pytest.raises(InvalidRequest) as exc:
        rt.create_bulk("oscar", {"action": "ack", "filter": {"reason": "x"}, "expected": 1})
    assert [e["field"] for e in exc.value.extra["errors"]] == ["filter.reason"]
