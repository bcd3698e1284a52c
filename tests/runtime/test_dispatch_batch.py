"""Batched dispatch and its settle: a batch costs the same statements
whatever its size, a crash between the provider's answer and the settle is still told by the
timeline, and one failing row's settle does not roll back the others."""
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from notifications.adapters.base import DeliveryResult
from notifications.models import Channel, Notification
from notifications.runtime import audit
from notifications.runtime import dispatch as dispatch_mod
from notifications.runtime.dispatch import window
from notifications.runtime.dispatch.claim import confirm_leases
from rthelpers import kinds, request, row, timeline

pytestmark = pytest.mark.django_db

OK = DeliveryResult(True, message_id="m-1")


def accept(rt, n, **fields):
    return [rt.accept("alice", request(title=f"t{i}", **fields)).notification.id for i in range(n)]


class WorkerDied(BaseException):
    """The worker process ending where it is raised (nothing after it runs, nothing catches it)."""


def statements_of_a_pass(rt) -> list[str]:
    with CaptureQueriesContext(connection) as ctx:
        reports = rt.dispatch()
    assert reports and {r.status for r in reports} == {"DELIVERED"}
    return [q["sql"].split()[0].upper() for q in ctx.captured_queries
            if not q["sql"].upper().startswith(("SAVEPOINT", "RELEASE", "BEGIN"))]


def test_a_pass_costs_the_same_statements_for_3_rows_and_for_30(webhook, channel, make_runtime):
    rt = make_runtime(concurrency=30)  # threads for every row: the window confirms them together
    webhook.default = OK
    accept(rt, 3)
    small = statements_of_a_pass(rt)
    accept(rt, 30)
    large = statements_of_a_pass(rt)
    assert large == small
    # claim (+ the due read on SQLite) and ATTEMPT_STARTED; channel lookup; one lease check and
    # CHANNEL_ATTEMPT_STARTED; one settle UPDATE, its events, their time-series rollup (one
    # upsert, ``runtime.series``) and audits.
    assert small.count("UPDATE") + small.count("WITH") == 3 and small.count("INSERT") == 5


def test_multi_channel_rows_take_one_lease_check_per_group_of_attempts_started(webhook, channel, make_runtime):
    """Each claim has one channel attempt at a time, in policy order; the attempts the window
    starts together (here: every row's first channel, then every row's second) share one
    committed lease check."""
    rt = make_runtime(concurrency=5)
    Channel.objects.create(name="pager", kind="webhook", config={"url": "http://127.0.0.1:9/pager"})
    webhook.default = OK
    ids = accept(rt, 5, channels=["ops-hook", "pager"])
    with CaptureQueriesContext(connection) as ctx:
        assert {r.status for r in rt.dispatch()} == {"DELIVERED"}
    checks = [q for q in ctx.captured_queries if "SET lease_token = n.lease_token" in q["sql"]]
    assert len(checks) == 2  # "ops-hook" for all five rows, then "pager" for all five
    for nid in ids:
        started = [e.payload["channel"] for e in timeline(nid, "CHANNEL_ATTEMPT_STARTED")]
        results = [e.payload["channel"] for e in timeline(nid, "CHANNEL_ATTEMPT_RESULT")]
        assert started == results == ["ops-hook", "pager"]
    # Every provider call came after its committed check: "pager" calls after all five "ops-hook" calls.
    assert [c["target"].name for c in webhook.calls] == ["ops-hook"] * 5 + ["pager"] * 5


def test_a_crash_after_the_provider_answered_and_before_the_settle_is_told_by_the_timeline(
        rt, clock, webhook, channel, monkeypatch):
    (nid,) = accept(rt, 1)
    answered = []

    def died(runtime, claims):
        answered.extend(c.results["ops-hook"].success for c in claims)  # the provider answered ...
        raise WorkerDied  # ... and the worker died here: its settle (which writes CHANNEL_ATTEMPT_RESULT) never ran

    webhook.script.append(OK)
    monkeypatch.setattr(window, "settle_batch", died)
    with pytest.raises(WorkerDied):
        rt.dispatch()
    monkeypatch.undo()
    assert answered == [True]
    assert kinds(nid) == ["ACCEPTED", "ATTEMPT_STARTED", "CHANNEL_ATTEMPT_STARTED"]
    started = timeline(nid, "CHANNEL_ATTEMPT_STARTED")[0].payload
    first_token = started["lease_token"]
    assert started["provider_effect_may_have_occurred"] is True

    clock.advance(61)  # the lease expires; another pass recovers the row
    webhook.script.append(OK)
    assert [r.status for r in rt.dispatch()] == ["DELIVERED"]
    assert len(webhook.calls) == 2  # the provider saw it twice: never lost, and said so
    recovery = [e.payload["recovery_may_repeat_provider_effect"] for e in timeline(nid, "ATTEMPT_STARTED")]
    assert recovery == [False, True]
    results = [e.payload["lease_token"] for e in timeline(nid, "CHANNEL_ATTEMPT_RESULT")]
    assert first_token not in results and len(results) == 1  # the first answer is the crash's loss
    assert kinds(nid) == ["ACCEPTED", "ATTEMPT_STARTED", "CHANNEL_ATTEMPT_STARTED", "ATTEMPT_STARTED",
                          "CHANNEL_ATTEMPT_STARTED", "CHANNEL_ATTEMPT_RESULT", "DELIVERY_RESULT"]


def test_one_failing_row_settle_does_not_roll_back_the_others(rt, clock, webhook, channel, monkeypatch, caplog):
    webhook.default = OK
    ids = accept(rt, 5)
    bad = ids[2]
    real_audit = audit.delivery_audit

    def breaking_audit(notification_row, **kw):
        if notification_row.id == bad:
            raise RuntimeError("this row's settle breaks")
        return real_audit(notification_row, **kw)

    monkeypatch.setattr(audit, "delivery_audit", breaking_audit)
    reports = {r.id: r.status for r in rt.dispatch()}
    assert reports == {i: ("UNSETTLED" if i == bad else "DELIVERED") for i in ids}
    assert "settling %s failed" % bad in caplog.text
    for nid in set(ids) - {bad}:
        assert row(nid).status == "DELIVERED"
        assert kinds(nid)[-2:] == ["CHANNEL_ATTEMPT_RESULT", "DELIVERY_RESULT"]
    r = row(bad)
    assert (r.status, r.attempts) == ("PENDING", 1) and r.lease_token is not None  # kept until it expires
    # Its provider observation is still written.
    assert kinds(bad) == ["ACCEPTED", "ATTEMPT_STARTED", "CHANNEL_ATTEMPT_STARTED", "CHANNEL_ATTEMPT_RESULT"]

    monkeypatch.setattr(audit, "delivery_audit", real_audit)
    assert rt.dispatch() == []  # still leased
    clock.advance(61)
    assert [(r.id, r.status) for r in rt.dispatch()] == [(bad, "DELIVERED")]
    recovery = [e.payload["recovery_may_repeat_provider_effect"] for e in timeline(bad, "ATTEMPT_STARTED")]
    assert recovery == [False, True]


def test_settle_of_rows_with_different_outcomes_in_one_batch(rt, clock, webhook, channel):
    ids = accept(rt, 3)
    # Claim order is next_attempt then id; script by id through a function.
    outcome = {ids[0]: OK, ids[1]: DeliveryResult(False, retryable=True, error="HTTP 503"),
               ids[2]: DeliveryResult(False, retryable=False, error="HTTP 410")}

    def by_id(notification, target, context):
        return outcome[notification["id"]]

    webhook.script.extend([by_id] * 3)
    reports = {r.id: (r.status, r.dead_letter) for r in rt.dispatch()}
    assert reports == {ids[0]: ("DELIVERED", False), ids[1]: ("PENDING", False), ids[2]: ("FAILED", True)}
    stored = {n.id: n for n in Notification.objects.filter(id__in=ids)}
    assert stored[ids[0]].delivered_at == clock.now and stored[ids[1]].delivered_at is None
    assert stored[ids[1]].next_attempt > clock.now and stored[ids[1]].outcome["channels_failed"] == ["ops-hook"]
    assert stored[ids[2]].outcome["error_message"] == "ops-hook: HTTP 410"
    assert all(n.lease_token is None and n.lease_until == 0.0 for n in stored.values())


def test_the_settle_writes_ack_status_only_from_no_ack_state(rt, clock, webhook, channel, monkeypatch):
    """The settle's ``ack_status`` write is the edge None -> PENDING, and its WHERE names that
    prior state (``core.transitions.sql_guard``): a row that somehow has an ack state is not settled
    over it (lease lost), the rest of the batch settles (the table drives the writes)."""
    ids = accept(rt, 2, require_ack=True)
    webhook.script.extend([OK, OK])
    real = window.settle_batch

    def settle_batch(runtime, claims):
        Notification.objects.filter(id=ids[0]).update(ack_status="ACKED")  # not an edge any code may write
        return real(runtime, claims)

    monkeypatch.setattr(window, "settle_batch", settle_batch)
    reports = {r.id: r.status for r in rt.dispatch()}
    assert reports == {ids[0]: "LEASE_LOST", ids[1]: "DELIVERED"}
    assert (row(ids[0]).status, row(ids[0]).ack_status) == ("PENDING", "ACKED")
    assert (row(ids[1]).status, row(ids[1]).ack_status) == ("DELIVERED", "PENDING")


def test_a_lease_check_renews_the_lease_so_an_attempt_started_late_keeps_it(rt, clock, webhook, channel):
    """The sliding window may start a claim's channel late in its lease (here its second
    channel, after a first that took all but 10 s of it). That channel's committed check renews
    the lease (``now + lease_seconds``): an answer that comes a half lease later still settles,
    where before the row lost its lease mid-request and was sent again."""
    Channel.objects.create(name="pager", kind="webhook", config={"url": "http://127.0.0.1:9/pager"})
    (nid,) = accept(rt, 1, channels=["ops-hook", "pager"])
    seen = {}

    def first_channel(**_call):
        seen["claimed_until"] = Notification.objects.get(id=nid).lease_until
        clock.advance(rt.lease_seconds - 10)  # 10 s of the claim's lease left when the next channel starts
        return OK

    def slow_receiver(**_call):
        seen["checked_at"], seen["renewed_until"] = clock.now, Notification.objects.get(id=nid).lease_until
        clock.advance(rt.lease_seconds / 2)  # the longest timeout the channel rule allows
        return OK

    webhook.script.extend([first_channel, slow_receiver])
    assert [r.status for r in rt.dispatch()] == ["DELIVERED"]
    assert seen["renewed_until"] == seen["checked_at"] + rt.lease_seconds > seen["claimed_until"]
    assert "LEASE_LOST" not in kinds(nid) and len(webhook.calls) == 2


def test_a_lease_check_never_revives_an_expired_lease(rt, clock, webhook, channel):
    (nid,) = accept(rt, 1)
    claims = dispatch_mod.claim(rt, 10)
    clock.advance(rt.lease_seconds + 1)
    assert confirm_leases(rt, [(claims[0], "ops-hook")]) == []
    assert claims[0].lease_lost and Notification.objects.get(id=nid).lease_until < clock.now
