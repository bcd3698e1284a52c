"""One dispatch pass attempts each notification at most once (reference 1.1; issue 20), on both
databases, with the window's refill in play (both refill a running window).

The pass holds one slow attempt (row ``slow``) while a flaky row fails at once with zero backoff:
its settle makes it due again within the pass. Before the fix the PostgreSQL refill claimed it
again (and again, until it was exhausted), then claimed and failed the dedup successor that
exhaustion promoted, all inside one ``dispatch()``. The slow attempt ends only once a refill
after the flaky row's settle found nothing to claim, so the window had every chance to re-claim.
"""
import threading

import pytest

from notifications.adapters.base import DeliveryResult
from notifications.models import Event, Notification
from notifications.runtime import Runtime
from notifications.runtime.dispatch import window

pytestmark = pytest.mark.django_db(transaction=True)

ZERO_BACKOFF = {"base_seconds": 0.0, "factor": 1.0, "cap_seconds": 0.0, "jitter": 0.0}


class SlowAndFlaky:
    """``flaky`` rows fail (retryable) at once; the ``slow`` row answers once ``release`` is set."""

    def __init__(self):
        self.lock = threading.Lock()
        self.calls: list[str] = []
        self.release = threading.Event()

    def send(self, notification, target, context):
        with self.lock:
            self.calls.append(notification["title"])
        if notification["title"] == "slow":
            assert self.release.wait(60), "no refill after the flaky row's settle"
            return DeliveryResult(True, message_id="slow-ok")
        return DeliveryResult(False, retryable=True, error="HTTP 503")


def test_one_pass_attempts_a_zero_backoff_failure_once_and_leaves_its_promoted_successor(
        clock, channel, policy, monkeypatch):
    policy(max_attempts=2, backoff=ZERO_BACKOFF)
    adapter = SlowAndFlaky()
    rt = Runtime(clock=clock, adapters={"webhook": adapter}, callback=None, concurrency=4, rng=lambda: 0.5)
    leader = rt.accept("alice", {"source": "s", "title": "flaky", "channels": ["ops-hook"],
                                 "dedup_key": "disk-full"}).notification.id
    clock.advance(1)
    follower = rt.accept("alice", {"source": "s", "title": "flaky", "channels": ["ops-hook"],
                                   "dedup_key": "disk-full"}).notification.id
    slow = rt.accept("alice", {"source": "s", "title": "slow", "channels": ["ops-hook"]}).notification.id
    clock.advance(1)

    real_settle, real_claim = window.settle_batch, window.claim
    leader_settled = threading.Event()

    def settle_batch(runtime, claims):
        reports = real_settle(runtime, claims)
        if any(c.id == leader for c in claims):
            leader_settled.set()
        return reports

    def claim(runtime, limit, **kw):
        # window.claim is the pass's first claim and every refill; a refill after the leader's
        # settle that finds nothing means the window will not re-claim: the slow row may answer.
        was_settled = leader_settled.is_set()
        got = real_claim(runtime, limit, **kw)
        if was_settled and not got:
            adapter.release.set()
        return got

    monkeypatch.setattr(window, "settle_batch", settle_batch)
    monkeypatch.setattr(window, "claim", claim)
    try:
        reports = rt.dispatch()
    finally:
        adapter.release.set()

    assert sorted(r.id for r in reports) == sorted([leader, slow])
    assert {r.id: r.status for r in reports} == {leader: "PENDING", slow: "DELIVERED"}
    assert sorted(adapter.calls) == ["flaky", "slow"]
    lead, succ = Notification.objects.get(id=leader), Notification.objects.get(id=follower)
    assert (lead.status, lead.attempts, lead.dead_letter) == ("PENDING", 1, False)
    assert (succ.status, succ.attempts, succ.dedup_owner_id) == ("PENDING", 0, leader)
    starts = Event.objects.filter(notification_id__in=[leader, follower], kind="ATTEMPT_STARTED").count()
    assert starts == 1

    # The next pass takes the row that is due again: its second and last attempt, and only now
    # is the successor promoted (and left for the pass after).
    reports = rt.dispatch()
    assert [(r.id, r.status, r.dead_letter) for r in reports] == [(leader, "FAILED", True)]
    succ.refresh_from_db()
    assert (succ.status, succ.attempts, succ.dedup_owner_id) == ("PENDING", 0, None)
