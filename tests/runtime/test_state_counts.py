"""``runtime.counts``: the state counts /ui/overview shows, maintained on PostgreSQL by the
triggers of migration 0005 (no count of the whole table). After every kind of write
the runtime makes (accept, claim, deliver, retry, dead-letter, replay, resolve, ACK, time-out,
dedup follower, delete) the maintained counts equal a count of the table, and ``compact``
folds the deltas without changing them. PostgreSQL only: on SQLite ``by_state`` is that count."""
import json

import pytest
from django.db.models import Count

from notifications.models import Notification, StatusCount
from notifications.runtime import counts, dlq
from notifications.runtime.maintenance import maintain
from rthelpers import fail, request, row

pytestmark = [pytest.mark.postgres, pytest.mark.django_db]


def truth():
    status = dict(Notification.objects.order_by().values_list("status").annotate(n=Count("id")))
    ack = {k or "NONE": n for k, n in Notification.objects.order_by().values_list("ack_status").annotate(n=Count("id"))}
    return status, ack


def maintained(kind: str) -> dict:
    return {v: n for v, n in counts.groups(kind, 1000)}


def list_truth() -> dict:
    """Per source, and per DLQ group among the dead letters, counted from the table with the
    lookups the console's groups use (a channel group's value as its JSON text)."""
    out = {counts.SOURCE: dict(Notification.objects.order_by().values_list("notification__source")
                               .annotate(n=Count("id")))}
    dead = Notification.objects.filter(status="FAILED", dead_letter=True).order_by()
    for group, kind in counts.DLQ_KINDS.items():
        field = {"source": "notification__source", "severity": "notification__severity",
                 "reason": "outcome__error_message", "channel": "outcome__channels_failed"}[group]
        rows = dead.values_list(field).annotate(n=Count("id"))
        out[kind] = {(json.dumps(v, separators=(", ", ": ")) if isinstance(v, list) else v): n for v, n in rows}
    return out


def check():
    assert counts.by_state() == truth()
    assert {kind: maintained(kind) for kind in list_truth()} == list_truth()
    assert dlq.dead_letter_depth() == Notification.objects.filter(status="FAILED", dead_letter=True).count()


def answers(webhook, outcomes):
    """Script the fake webhook by notification title (claim order is not the acceptance order):
    ``outcomes[title]`` is returned for that notification, delivery for any other."""
    def answer(notification, **_):
        return outcomes.get(notification["title"], webhook.default)
    webhook.script.clear()
    webhook.script.extend([answer] * 100)


def test_maintained_counts_follow_every_write(rt, clock, webhook, channel):
    check()  # empty
    answers(webhook, {"retry": fail(), "dead": fail(retryable=False, error="HTTP 410")})
    ids = {title: rt.accept("alice", request(title=title)).notification.id for title in ("ok", "retry", "dead")}
    critical = rt.accept("alice", request(title="needs ack", severity="critical")).notification.id
    leader = rt.accept("alice", request(title="dup", dedup_key="d-1")).notification.id
    follower = rt.accept("alice", request(title="dup again", dedup_key="d-1")).notification.id
    check()
    assert counts.by_state()[0]["PENDING"] == 6

    rt.dispatch()  # delivered, a retry, a dead letter, the ACK one delivered, the dedup leader and its follower
    assert (row(ids["retry"]).status, row(ids["dead"]).dead_letter, row(critical).ack_status) == ("PENDING", True,
                                                                                                     "PENDING")
    assert row(follower).status == "DEDUPLICATED"
    check()

    rt.replay(ids["dead"], "oscar")
    check()
    rt.dispatch()
    assert row(ids["dead"]).dead_letter
    rt.resolve_failure(ids["dead"], "oscar")
    check()

    rt.acknowledge(critical, "bob")
    check()
    other = rt.accept("alice", request(title="will time out", severity="critical")).notification.id
    rt.dispatch()
    clock.now = row(other).deadline + 1
    rt.expire()
    assert row(other).ack_status == "TIMED_OUT"
    check()

    Notification.objects.filter(id=ids["ok"]).delete()
    Notification.objects.filter(id=leader).update(lease_until=0.0)  # a write that changes no state
    check()

    # a dead letter from another source with another reason stays in the DLQ; retention prunes
    # the terminal rows (the resolved dead letter among them) and never a dead letter
    answers(webhook, {"kept": fail(retryable=False, error="timed out after 10 s")})
    kept = rt.accept("alice", request(title="kept", source="db")).notification.id
    rt.dispatch()
    assert row(kept).dead_letter
    check()
    clock.advance(100 * 86400)
    report = maintain(rt, cutoff=clock.now - 86400, apply=True, operator="oscar")
    assert report.rows["uns_notifications"] >= 3 and not Notification.objects.filter(id=ids["dead"]).exists()
    assert Notification.objects.filter(id=kept).exists()
    check()
    assert maintained(counts.DLQ_KINDS["reason"]) == {"ops-hook: timed out after 10 s": 1}


def test_compact_folds_the_deltas_and_keeps_the_counts(rt, channel):
    for i in range(30):
        rt.accept("alice", request(title=f"n{i}"))
    rt.dispatch()
    before, rows = counts.by_state(), StatusCount.objects.count()
    assert rows > 4
    assert counts.compact(above=rows) == 0  # at or below the threshold: nothing to do
    assert StatusCount.objects.count() == rows
    assert counts.compact(above=1) == rows
    assert counts.by_state() == before == truth()
    # one row per (kind, value) with a non-zero count: status DELIVERED, ack_status NONE and
    # source billing (the test request's) here; no dead letter, so no DLQ group
    assert sorted(StatusCount.objects.values_list("kind", "value", "delta")) == [
        ("ack_status", "NONE", 30), ("source", "billing", 30), ("status", "DELIVERED", 30)]
    check()
