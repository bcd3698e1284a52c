"""``Runtime.dispatch``: claim with a 60 s fenced lease, attempt outside transactions, settle to
DELIVERED / PENDING with backoff / FAILED (best effort or dead letter); LEASE_LOST never
overwrites newer state."""
import httpx
import pytest

from notifications.adapters.base import DeliveryResult
from notifications.adapters.fake import FakeAdapter
from notifications.adapters.webhook import WebhookAdapter
from notifications.models import Channel, Notification, NotificationAuditRecord
from notifications.runtime import Runtime
from policies.content import BOOTSTRAP_CONTENT, content_hash
from rthelpers import counts, fail, kinds, only_event, request, row, timeline

pytestmark = pytest.mark.django_db

OK = DeliveryResult(True, message_id="m-1", metadata={"status_code": 200})


def test_claim_takes_a_60s_lease_before_the_adapter_runs(rt, clock, webhook, channel):
    n = rt.accept("alice", request()).notification
    clock.advance(5)
    seen = {}

    def observe(notification, target, context):
        r = row(notification["id"])
        seen.update(status=r.status, lease_token=r.lease_token, lease_until=r.lease_until, attempts=r.attempts,
                    cycle_attempts=r.cycle_attempts, context=context, target=target,
                    kinds=kinds(notification["id"]))
        return OK

    webhook.script.append(observe)
    reports = rt.dispatch()

    assert seen["status"] == "PENDING"
    assert len(seen["lease_token"]) == 36
    assert seen["lease_until"] == clock.now + 60
    assert (seen["attempts"], seen["cycle_attempts"]) == (1, 1)
    assert seen["kinds"] == ["ACCEPTED", "ATTEMPT_STARTED", "CHANNEL_ATTEMPT_STARTED"]
    ctx = seen["context"]
    assert (ctx.notification_id, ctx.attempt, ctx.cycle, ctx.cycle_attempt, ctx.lease_token) == (
        n.id, 1, 1, 1, seen["lease_token"])
    assert seen["target"].name == "ops-hook" and seen["target"].kind == "webhook"

    started = only_event(n.id, "ATTEMPT_STARTED")
    assert started.payload == {"attempt": 1, "cycle": 1, "cycle_attempt": 1,
                               "recovery_may_repeat_provider_effect": False}
    assert started.at == clock.now
    channel_started = only_event(n.id, "CHANNEL_ATTEMPT_STARTED")
    assert channel_started.payload == {"channel": "ops-hook", "lease_token": seen["lease_token"], "attempt": 1,
                                       "cycle": 1, "cycle_attempt": 1, "provider_effect_may_have_occurred": True}
    assert [(r.id, r.status, r.dead_letter, r.attempt) for r in reports] == [(n.id, "DELIVERED", False, 1)]


def test_success_settles_delivered_with_result_events_and_audit(rt, clock, webhook, channel):
    n = rt.accept("alice", request(intent="incident", agent_id="agent-7", autonomy_mode="supervised")).notification
    clock.advance(3)
    webhook.script.append(OK)
    rt.dispatch()

    r = row(n.id)
    assert r.status == "DELIVERED"
    assert r.delivered_at == clock.now
    assert r.dead_letter is False
    assert r.lease_token is None and r.lease_until == 0.0
    assert r.outcome == {"channels_attempted": ["ops-hook"], "channels_succeeded": ["ops-hook"],
                         "channels_failed": [], "error_message": None}
    assert r.ack_status is None and r.deadline is None  # require_ack is false

    token = only_event(n.id, "CHANNEL_ATTEMPT_STARTED").payload["lease_token"]
    result = only_event(n.id, "CHANNEL_ATTEMPT_RESULT")
    assert result.payload == {"lease_token": token, "attempt": 1, "cycle": 1, "cycle_attempt": 1,
                              "channel": "ops-hook", "success": True, "message_id": "m-1", "error": None,
                              "metadata": {"status_code": 200, "retryable": False},
                              "provider_observed_at": clock.now}
    delivery = only_event(n.id, "DELIVERY_RESULT")
    assert delivery.payload == {"status": "DELIVERED", "attempt": 1, "cycle": 1, "cycle_attempt": 1,
                                "dead_letter": False, "outcome": r.outcome}
    assert kinds(n.id) == ["ACCEPTED", "ATTEMPT_STARTED", "CHANNEL_ATTEMPT_STARTED", "CHANNEL_ATTEMPT_RESULT",
                           "DELIVERY_RESULT"]

    audit = NotificationAuditRecord.objects.get(notification_id=n.id)
    assert audit.status == "DELIVERED"
    assert audit.policy_config_id == "uns-default"
    assert audit.policy_config_hash == content_hash(BOOTSTRAP_CONTENT)
    assert audit.policy_config_hash == r.notification["metadata"]["uns_resolution"]["policy_hash"]
    assert audit.delivery_mode == "GUARANTEED"
    assert (audit.channels_attempted, audit.channels_succeeded, audit.channels_failed) == (
        ["ops-hook"], ["ops-hook"], [])
    assert audit.error_message is None
    assert audit.delivered_at == clock.now and audit.created_at == clock.now
    assert (audit.notification_type, audit.intent, audit.agent_id, audit.autonomy_mode) == (
        "incident", "incident", "agent-7", "supervised")

    # terminal: nothing left to claim
    clock.advance(3600)
    assert rt.dispatch() == []


def test_transient_failure_goes_back_to_pending_with_backoff(rt, clock, webhook, channel):
    n = rt.accept("alice", request()).notification
    webhook.script.append(fail(error="HTTP 503"))
    reports = rt.dispatch()
    assert [(r.status, r.dead_letter) for r in reports] == [("PENDING", False)]

    r = row(n.id)
    assert r.status == "PENDING" and r.dead_letter is False
    assert r.next_attempt == clock.now + 2.0  # base 2 s, jitter pinned to its midpoint
    assert r.lease_token is None and r.lease_until == 0.0
    assert (r.attempts, r.cycle_attempts) == (1, 1)
    assert r.outcome["channels_failed"] == ["ops-hook"]
    assert r.outcome["error_message"] == "ops-hook: HTTP 503"
    assert only_event(n.id, "DELIVERY_RESULT").payload == {
        "status": "PENDING", "attempt": 1, "cycle": 1, "cycle_attempt": 1, "dead_letter": False,
        "outcome": r.outcome}
    result = only_event(n.id, "CHANNEL_ATTEMPT_RESULT").payload
    assert (result["success"], result["error"], result["metadata"]["retryable"]) == (False, "HTTP 503", True)
    audit = NotificationAuditRecord.objects.get(notification_id=n.id)
    assert (audit.status, audit.error_message, audit.delivered_at) == ("PENDING", "ops-hook: HTTP 503", None)

    # not eligible before next_attempt
    clock.advance(1.9)
    assert rt.dispatch() == []
    clock.advance(0.1)
    webhook.script.append(OK)
    assert [rep.status for rep in rt.dispatch()] == ["DELIVERED"]
    r = row(n.id)
    assert (r.attempts, r.cycle_attempts, r.status) == (2, 2, "DELIVERED")
    assert r.outcome["channels_failed"] == [] and r.outcome["error_message"] is None
    assert [e.payload["attempt"] for e in timeline(n.id, "ATTEMPT_STARTED")] == [1, 2]
    assert [e.payload["recovery_may_repeat_provider_effect"] for e in timeline(n.id, "ATTEMPT_STARTED")] == [
        False, False]


def _fail_until_settled(rt, clock, webhook, nid, results):
    """Feed ``results`` one attempt at a time, jumping the clock to each next_attempt.
    Returns the backoff delays observed after each attempt that went back to PENDING."""
    delays = []
    for res in results:
        clock.now = max(clock.now, row(nid).next_attempt)
        webhook.script.append(res)
        [report] = rt.dispatch()
        if report.status == "PENDING":
            delays.append(row(nid).next_attempt - clock.now)
    return delays


def test_backoff_grows_exponentially_and_guaranteed_exhaustion_dead_letters(rt, clock, webhook, channel):
    n = rt.accept("alice", request()).notification  # bootstrap: GUARANTEED, max_attempts 5
    delays = _fail_until_settled(rt, clock, webhook, n.id, [fail()] * 5)
    assert delays == [2.0, 4.0, 8.0, 16.0]

    r = row(n.id)
    assert (r.status, r.dead_letter, r.attempts, r.cycle_attempts) == ("FAILED", True, 5, 5)
    assert r.lease_token is None and r.lease_until == 0.0
    last = timeline(n.id, "DELIVERY_RESULT")[-1]
    assert last.payload["status"] == "FAILED" and last.payload["dead_letter"] is True
    assert last.payload["cycle_attempt"] == 5
    assert [a.status for a in NotificationAuditRecord.objects.filter(notification_id=n.id).order_by("created_at")] == [
        "PENDING"] * 4 + ["FAILED"]

    clock.advance(10_000)
    assert rt.dispatch() == []
    assert len(webhook.calls) == 5


def test_backoff_is_capped(rt, clock, webhook, channel, policy):
    policy(max_attempts=6, backoff={"base_seconds": 10.0, "factor": 3.0, "cap_seconds": 60.0, "jitter": 0.0})
    n = rt.accept("alice", request()).notification
    delays = _fail_until_settled(rt, clock, webhook, n.id, [fail()] * 5 + [OK])
    assert delays == [10.0, 30.0, 60.0, 60.0, 60.0]
    assert row(n.id).status == "DELIVERED"


def test_best_effort_failure_is_terminal_without_dead_letter(rt, clock, webhook, channel, policy):
    policy(delivery_mode="BEST_EFFORT", max_attempts=2)
    n = rt.accept("alice", request()).notification
    delays = _fail_until_settled(rt, clock, webhook, n.id, [fail(), fail()])
    assert delays == [2.0]
    r = row(n.id)
    assert (r.status, r.dead_letter, r.attempts) == ("FAILED", False, 2)
    assert timeline(n.id, "DELIVERY_RESULT")[-1].payload["dead_letter"] is False
    audit = NotificationAuditRecord.objects.filter(notification_id=n.id, status="FAILED").get()
    assert audit.delivery_mode == "BEST_EFFORT"
    clock.advance(10_000)
    assert rt.dispatch() == []


def test_best_effort_single_attempt_fails_at_once(rt, clock, webhook, channel, policy):
    policy(delivery_mode="BEST_EFFORT", max_attempts=1)
    n = rt.accept("alice", request()).notification
    webhook.script.append(fail())
    assert [(r.status, r.dead_letter) for r in rt.dispatch()] == [("FAILED", False)]
    assert row(n.id).dead_letter is False


@pytest.mark.parametrize("mode,dead_letter", [("GUARANTEED", True), ("BEST_EFFORT", False)])
def test_permanent_failure_is_never_retried(rt, clock, webhook, channel, policy, mode, dead_letter):
    policy(delivery_mode=mode, max_attempts=5)
    n = rt.accept("alice", request()).notification
    webhook.script.append(fail(retryable=False, error="HTTP 404"))
    assert [(r.status, r.dead_letter) for r in rt.dispatch()] == [("FAILED", dead_letter)]
    r = row(n.id)
    assert (r.status, r.dead_letter, r.attempts, r.cycle_attempts) == ("FAILED", dead_letter, 1, 1)
    assert r.outcome["error_message"] == "ops-hook: HTTP 404"
    clock.advance(10_000)
    assert rt.dispatch() == []
    assert len(webhook.calls) == 1


@pytest.mark.parametrize("code,status", [(404, "FAILED"), (400, "FAILED"), (410, "FAILED"), (301, "FAILED"),
                                         (408, "PENDING"), (429, "PENDING"), (500, "PENDING"), (503, "PENDING")])
def test_real_webhook_classification_drives_retry(clock, channel, code, status):
    """The real webhook adapter over a mock transport: 4xx other than 408/429 is permanent."""
    calls = []

    def handler(req):
        calls.append(req)
        return httpx.Response(code)

    rt = Runtime(clock=clock, adapters={"webhook": WebhookAdapter(transport=httpx.MockTransport(handler))},
                 callback=None, concurrency=1, rng=lambda: 0.5)
    n = rt.accept("alice", request()).notification
    [report] = rt.dispatch()
    assert report.status == status
    assert row(n.id).outcome["error_message"] == f"ops-hook: HTTP {code} from 127.0.0.1:9"  # the channel fixture's URL
    assert len(calls) == 1
    assert calls[0].headers["idempotency-key"] == f"{n.id}:1"


def test_adapter_exception_is_recorded_as_a_retryable_failure(rt, clock, webhook, channel):
    n = rt.accept("alice", request()).notification

    def boom(**_):
        raise RuntimeError("socket exploded")

    webhook.script.append(boom)
    [report] = rt.dispatch()
    assert report.status == "PENDING"
    result = only_event(n.id, "CHANNEL_ATTEMPT_RESULT").payload
    assert result["success"] is False
    assert result["error"] == "adapter raised RuntimeError: socket exploded"
    assert result["metadata"]["retryable"] is True


def test_partial_success_retries_only_the_failed_channel(rt, clock, webhook, channel):
    Channel.objects.create(name="pager", kind="webhook", config={"url": "http://127.0.0.1:9/pager"})
    n = rt.accept("alice", request(channels=["ops-hook", "pager"])).notification
    webhook.script.extend([OK, fail()])
    [report] = rt.dispatch()
    assert report.status == "PENDING"
    r = row(n.id)
    assert r.outcome["channels_succeeded"] == ["ops-hook"] and r.outcome["channels_failed"] == ["pager"]

    clock.now = r.next_attempt
    webhook.script.append(OK)
    [report] = rt.dispatch()
    assert report.status == "DELIVERED"
    assert [c["target"].name for c in webhook.calls] == ["ops-hook", "pager", "pager"]
    r = row(n.id)
    assert r.outcome == {"channels_attempted": ["ops-hook", "pager"], "channels_succeeded": ["ops-hook", "pager"],
                         "channels_failed": [], "error_message": None}
    second = [e.payload["channel"] for e in timeline(n.id, "CHANNEL_ATTEMPT_STARTED")]
    assert second == ["ops-hook", "pager", "pager"]


def test_channel_disabled_after_acceptance_is_a_permanent_failure(rt, clock, webhook, channel):
    n = rt.accept("alice", request()).notification
    Channel.objects.filter(name="ops-hook").update(enabled=False)
    [report] = rt.dispatch()
    assert (report.status, report.dead_letter) == ("FAILED", True)
    assert webhook.calls == []
    assert "no longer configured" in row(n.id).outcome["error_message"]


def test_dispatch_claims_due_leaders_up_to_the_limit(rt, clock, webhook, channel):
    ids = []
    for _ in range(3):
        ids.append(rt.accept("alice", request()).notification.id)
        clock.advance(1)
    first = rt.dispatch(limit=2)
    assert [r.id for r in first] == ids[:2]  # oldest next_attempt first
    assert row(ids[2]).status == "PENDING" and row(ids[2]).attempts == 0
    assert [r.id for r in rt.dispatch()] == [ids[2]]


def test_stale_settle_after_lease_expiry_changes_nothing_and_records_lease_lost(rt, clock, webhook, channel):
    n = rt.accept("alice", request()).notification

    def slow(**_):
        clock.advance(61)  # the lease (60 s) expires during the provider call
        return OK

    webhook.script.append(slow)
    [report] = rt.dispatch()
    assert report.status == "LEASE_LOST"

    r = row(n.id)
    token = only_event(n.id, "CHANNEL_ATTEMPT_STARTED").payload["lease_token"]
    assert r.status == "PENDING" and r.delivered_at is None
    assert r.lease_token == token  # untouched: only a newer claim replaces it
    assert r.outcome["channels_attempted"] == []
    assert not timeline(n.id, "DELIVERY_RESULT")
    assert not NotificationAuditRecord.objects.filter(notification_id=n.id).exists()
    # the provider observation survives, attributed to the lost lease
    assert only_event(n.id, "CHANNEL_ATTEMPT_RESULT").payload["lease_token"] == token
    lost = only_event(n.id, "LEASE_LOST")
    assert lost.payload == {"lease_token": token, "attempt": 1, "provider_effect_may_have_occurred": True}
    assert lost.at == clock.now

    # the next claim knows a provider effect may repeat
    [report] = rt.dispatch()
    assert report.status == "DELIVERED"
    recovery = timeline(n.id, "ATTEMPT_STARTED")[-1].payload
    assert recovery == {"attempt": 2, "cycle": 1, "cycle_attempt": 2, "recovery_may_repeat_provider_effect": True}


def test_lease_lost_to_another_worker_never_overwrites_its_delivery(rt, clock, webhook, channel, make_runtime):
    n = rt.accept("alice", request()).notification
    other_adapter = FakeAdapter(default=DeliveryResult(True, message_id="from-b"))
    worker_b = make_runtime(adapters={"webhook": other_adapter})
    b_reports = []

    def stall_then_fail(**_):
        clock.advance(61)
        b_reports.extend(worker_b.dispatch())  # B claims the expired lease and delivers
        return fail(error="HTTP 503")  # A's late observation must not undo B's delivery

    webhook.script.append(stall_then_fail)
    [a_report] = rt.dispatch()

    assert [r.status for r in b_reports] == ["DELIVERED"]
    assert a_report.status == "LEASE_LOST"
    r = row(n.id)
    assert r.status == "DELIVERED" and r.delivered_at == clock.now
    assert r.outcome["channels_succeeded"] == ["ops-hook"] and r.outcome["channels_failed"] == []
    assert r.lease_token is None and r.attempts == 2

    started = timeline(n.id, "ATTEMPT_STARTED")
    assert [e.payload["attempt"] for e in started] == [1, 2]
    assert started[1].payload["recovery_may_repeat_provider_effect"] is True
    tokens = [e.payload["lease_token"] for e in timeline(n.id, "CHANNEL_ATTEMPT_STARTED")]
    assert len(set(tokens)) == 2
    results = {e.payload["lease_token"]: e.payload for e in timeline(n.id, "CHANNEL_ATTEMPT_RESULT")}
    assert results[tokens[0]]["success"] is False and results[tokens[1]]["message_id"] == "from-b"
    assert only_event(n.id, "LEASE_LOST").payload == {"lease_token": tokens[0], "attempt": 1,
                                                      "provider_effect_may_have_occurred": True}
    assert [e.payload["status"] for e in timeline(n.id, "DELIVERY_RESULT")] == ["DELIVERED"]
    assert NotificationAuditRecord.objects.filter(notification_id=n.id).count() == 1


def test_lease_lost_before_a_channel_attempt_skips_the_provider(rt, clock, webhook, channel, make_runtime):
    first = rt.accept("alice", request()).notification
    second = rt.accept("alice", request()).notification

    def slow(**_):
        clock.advance(61)
        return OK

    webhook.script.append(slow)
    reports = make_runtime(concurrency=2).dispatch()  # two threads free: both rows confirmed by one check
    assert {r.id: r.status for r in reports} == {first.id: "LEASE_LOST", second.id: "LEASE_LOST"}
    assert len(webhook.calls) == 1  # the second row's lease was gone before its channel attempt
    # Both leases were confirmed by the window's one check (CHANNEL_ATTEMPT_STARTED), but the
    # second expired before its adapter call: its provider was not called and it has no result.
    skipped = ({first.id, second.id} - {webhook.calls[0]["notification"]["id"]}).pop()
    assert kinds(skipped) == ["ACCEPTED", "ATTEMPT_STARTED", "CHANNEL_ATTEMPT_STARTED", "LEASE_LOST"]
    lost = only_event(skipped, "LEASE_LOST").payload
    assert set(lost) == {"lease_token", "attempt", "provider_effect_may_have_occurred"}
    assert lost["provider_effect_may_have_occurred"] is True  # the reference's conservative constant
    assert row(skipped).status == "PENDING"

    before = counts()
    assert sorted(r.status for r in rt.dispatch()) == ["DELIVERED", "DELIVERED"]
    assert counts()["delivery_audit"] == before["delivery_audit"] + 2


def test_lease_lost_before_a_later_channel_skips_that_channel(rt, clock, webhook, channel):
    Channel.objects.create(name="pager", kind="webhook", config={"url": "http://127.0.0.1:9/pager"})
    n = rt.accept("alice", request(channels=["ops-hook", "pager"])).notification

    def slow(**_):
        clock.advance(61)
        return OK

    webhook.script.append(slow)
    [report] = rt.dispatch()
    assert report.status == "LEASE_LOST"
    assert [c["target"].name for c in webhook.calls] == ["ops-hook"]
    # The second channel's conditional check found the lease gone: no CHANNEL_ATTEMPT_STARTED for
    # "pager"; the first channel's result is still written, with the lease it ran under.
    assert [e.payload["channel"] for e in timeline(n.id, "CHANNEL_ATTEMPT_STARTED")] == ["ops-hook"]
    assert [e.payload["channel"] for e in timeline(n.id, "CHANNEL_ATTEMPT_RESULT")] == ["ops-hook"]
    assert kinds(n.id)[-1] == "LEASE_LOST"


def test_followers_are_never_claimed(rt, clock, webhook, channel):
    leader = rt.accept("alice", request(dedup_key="d")).notification
    follower = rt.accept("alice", request(dedup_key="d")).notification
    assert row(follower.id).dedup_owner_id == leader.id
    webhook.script.append(fail())
    assert [r.id for r in rt.dispatch()] == [leader.id]
    clock.advance(3600)
    webhook.script.append(fail())
    assert [r.id for r in rt.dispatch()] == [leader.id]
    assert not timeline(follower.id, "ATTEMPT_STARTED")


def _provider_script(plan):
    """A fake adapter body making one provider attempt per item of ``plan`` (a DeliveryResult,
    or a callable run just before that attempt's lease check) through ``context.provider``."""
    def send(notification, target, context):
        p = context.provider
        seen = []
        for i, step in enumerate(plan, 1):
            if callable(step):
                step()
                step = DeliveryResult(True, metadata={"provider_key": f"k{i}"})
            if not p.begin():
                return DeliveryResult(False, retryable=True, error=f"lease lost before #{i}")
            p.observed(DeliveryResult(step.success, step.retryable, step.message_id, step.error,
                                      {"provider_key": f"k{i}", **step.metadata}))
            seen.append(step.success)
        return DeliveryResult(all(seen), retryable=True, error=None if all(seen) else "some failed")
    return send


def test_each_provider_attempt_gets_its_lease_check_and_result(rt, clock, webhook, channel):
    n = rt.accept("alice", request()).notification
    webhook.script.append(_provider_script([OK, fail()]))
    [report] = rt.dispatch()

    assert report.status == "PENDING"
    assert kinds(n.id) == ["ACCEPTED", "ATTEMPT_STARTED", "CHANNEL_ATTEMPT_STARTED", "CHANNEL_ATTEMPT_RESULT",
                           "CHANNEL_ATTEMPT_STARTED", "CHANNEL_ATTEMPT_RESULT", "DELIVERY_RESULT"]
    started = [e.payload for e in timeline(n.id, "CHANNEL_ATTEMPT_STARTED")]
    assert started[0] == started[1]  # the catalog's payload, once per provider attempt
    results = [e.payload for e in timeline(n.id, "CHANNEL_ATTEMPT_RESULT")]
    assert [(r["success"], r["metadata"]["provider_key"]) for r in results] == [(True, "k1"), (False, "k2")]
    assert row(n.id).outcome["channels_failed"] == ["ops-hook"]

    # The retry is told which provider targets already succeeded.
    seen = {}

    def retry(notification, target, context):
        seen["done"] = context.provider.succeeded_before()
        return OK

    webhook.script.append(retry)
    clock.advance(row(n.id).next_attempt - clock.now)
    [again] = rt.dispatch()
    assert again.status == "DELIVERED" and seen["done"] == {"k1"}


def test_a_provider_attempt_after_the_lease_was_taken_is_never_made(rt, clock, webhook, channel):
    """Another worker holds the row by the second provider attempt: its committed check fails,
    the adapter stops, the first answer is kept and the worker records LEASE_LOST."""
    n = rt.accept("alice", request()).notification

    def taken():
        Notification.objects.filter(id=n.id).update(lease_token="0190a000-0000-7000-8000-0000000000ff")

    webhook.script.append(_provider_script([OK, taken]))
    [report] = rt.dispatch()

    assert report.status == "LEASE_LOST"
    assert kinds(n.id) == ["ACCEPTED", "ATTEMPT_STARTED", "CHANNEL_ATTEMPT_STARTED", "CHANNEL_ATTEMPT_RESULT",
                           "LEASE_LOST"]
    assert row(n.id).lease_token == "0190a000-0000-7000-8000-0000000000ff"  # the newer holder's state stands
