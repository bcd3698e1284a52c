"""The maintained list counts (``runtime.counts``: notifications per source, dead letters per
DLQ group; migration 0018's trigger) stay exact under real concurrency on PostgreSQL (real
threads, one connection each, one barrier): replays and resolves racing over the same dead
letters, accepts of new notifications and a dispatch that dead-letters again, all at once; after
each race the counts equal a count of the table, and the DLQ's totals and groups read them."""
import json

import pytest
from django.db.models import Count

from notifications.adapters.base import DeliveryResult
from notifications.models import Notification
from notifications.runtime import Conflict, counts, dlq, lists

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

FIELDS = {"source": "notification__source", "severity": "notification__severity",
          "reason": "outcome__error_message", "channel": "outcome__channels_failed"}
SOURCES = ("billing", "db", "web")


def truth() -> dict:
    out = {counts.SOURCE: dict(Notification.objects.order_by().values_list("notification__source")
                               .annotate(n=Count("id")))}
    dead = Notification.objects.filter(status="FAILED", dead_letter=True).order_by()
    for group, kind in counts.DLQ_KINDS.items():
        out[kind] = {(json.dumps(v, separators=(", ", ": ")) if isinstance(v, list) else v): n
                     for v, n in dead.values_list(FIELDS[group]).annotate(n=Count("id"))}
    return out


def check():
    assert {kind: dict(counts.groups(kind, 1000)) for kind in truth()} == truth()
    depth = Notification.objects.filter(status="FAILED", dead_letter=True).count()
    assert dlq.dead_letter_depth() == depth == lists.dead_letter_total({})["total"]
    for source in SOURCES:
        assert lists.dead_letter_total({"source": source})["total"] == lists.dead_letter_rows(
            {"source": source}).count()


def dead_letters(rt, webhook, n):
    ids = [rt.accept("alice", {"source": SOURCES[i % 3], "title": f"t{i}", "severity": ("critical", "info")[i % 2],
                               "channels": ["ops-hook"]}).notification.id for i in range(n)]
    webhook.default = DeliveryResult(False, retryable=False, error="HTTP 410 gone")
    while rt.dispatch():
        pass
    assert Notification.objects.filter(id__in=ids, dead_letter=True).count() == n
    return ids


def test_counts_stay_exact_while_replays_resolves_accepts_and_dead_letters_race(rt, clock, webhook, channel, race):
    ids = dead_letters(rt, webhook, 24)
    check()

    def work(i):
        if i in (0, 1):  # two operators resolve every dead letter, racing each other and the replays
            for nid in ids[i::2] + ids[1 - i::2]:
                try:
                    rt.resolve_failure(nid, f"res-{i}")
                except Conflict:
                    pass
        elif i in (2, 3):  # two operators replay every dead letter
            for nid in ids[i % 2::2] + ids[1 - i % 2::2]:
                try:
                    rt.replay(nid, f"rep-{i}")
                except Conflict:
                    pass
        else:  # a producer accepts new notifications meanwhile
            for k in range(20):
                rt.accept("alice", {"source": SOURCES[k % 3], "title": f"new {k}", "channels": ["ops-hook"]})

    results, pids = race(5, work)
    assert len(set(pids)) == 5
    assert not Notification.objects.filter(id__in=ids, dead_letter=True).exists()  # each left the DLQ once
    check()

    # The replayed ones and the new ones fail for good while resolves of the new dead letters
    # race the dispatch that makes them.
    webhook.default = DeliveryResult(False, retryable=False, error="connection refused")

    def settle(i):
        if i < 2:
            while rt.dispatch(limit=5):
                pass
        else:
            for nid in Notification.objects.filter(status="PENDING").values_list("id", flat=True):
                try:
                    rt.resolve_failure(nid, f"late-{i}")
                except Conflict:
                    pass

    race(3, settle)
    while rt.dispatch():
        pass
    assert Notification.objects.filter(dead_letter=True).exists()
    check()
    reasons = {g["value"]: g["count"] for g in lists.dead_letter_groups("reason", {}, 50)}
    assert reasons == dict(lists.dead_letter_rows({}).order_by().values_list("outcome__error_message")
                           .annotate(n=Count("id")))
