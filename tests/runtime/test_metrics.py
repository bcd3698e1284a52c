"""Prometheus metrics: counters follow committed events only, the attempt latency is
measured on the runtime's clock, the scrape-time gauges read the database, the worker's loop
ages and readiness follow a fake clock. Counters are process-global, so tests compare deltas."""
import json
import urllib.error
import urllib.request

import pytest
from prometheus_client import REGISTRY

from notifications.adapters.base import DeliveryResult
from notifications.live import FailureTally
from notifications.metrics_http import WorkerServer, readiness
from notifications.models import Notification, NotificationAuditRecord
from notifications.runtime import dlq, lists, metrics, timeline
from notifications.runtime.metrics import StateCollector, WorkerCollector, principal_class
from notifications.runtime.worker import Worker

from rthelpers import fail, request


class FakeMonotonic:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def sample(name, **labels) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def collected(collector) -> dict:
    return {(s.name, tuple(sorted(s.labels.items()))): s.value for f in collector.collect() for s in f.samples}


@pytest.fixture(autouse=True)
def fresh_principal_classes():
    metrics._classes.clear()
    yield
    metrics._classes.clear()


def test_accept_counts_after_commit_by_principal_class_and_dedup_role(rt, channel, make_principal,
                                                                      django_capture_on_commit_callbacks):
    make_principal("alice", ("producer",))
    leader = sample("uns_notifications_accepted_total", principal_class="producer", dedup_role="leader")
    follower = sample("uns_notifications_accepted_total", principal_class="producer", dedup_role="follower")
    with django_capture_on_commit_callbacks(execute=True):
        rt.accept("alice", request(dedup_key="disk"))
        rt.accept("alice", request(dedup_key="disk", title="again"))
    assert sample("uns_notifications_accepted_total", principal_class="producer", dedup_role="leader") == leader + 1
    assert sample("uns_notifications_accepted_total", principal_class="producer",
                  dedup_role="follower") == follower + 1


def test_nothing_is_counted_before_the_commit(rt, channel, make_principal, django_capture_on_commit_callbacks):
    make_principal("alice", ("producer",))
    before = sample("uns_notifications_accepted_total", principal_class="producer", dedup_role="leader")
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        rt.accept("alice", request())
    assert callbacks  # the count waits for the commit (never run here: a rolled-back test transaction)
    assert sample("uns_notifications_accepted_total", principal_class="producer", dedup_role="leader") == before


def test_principal_class_is_bounded_by_the_seeded_groups(db, make_principal):
    from django.contrib.auth.models import Group

    make_principal("multi", ("producer", "operator"))
    user, _ = make_principal("odd", ())
    user.groups.add(Group.objects.create(name="team-secret-name"))
    assert principal_class("multi") == "operator+producer"
    assert principal_class("odd") == "other"  # a custom group's name never becomes a label
    assert principal_class("nobody") == "none"
    assert principal_class(None) == "none"


def test_dispatch_counts_deliveries_retries_and_latency_on_the_runtime_clock(rt, channel, clock, webhook,
                                                                             django_capture_on_commit_callbacks):
    def slow_success(**_):
        clock.advance(0.3)
        return DeliveryResult(True, message_id="m1")

    webhook.script.extend([fail(), slow_success])
    names = [("uns_channel_deliveries_total", {"channel": "ops-hook", "outcome": "failure"}),
             ("uns_channel_deliveries_total", {"channel": "ops-hook", "outcome": "success"}),
             ("uns_delivery_results_total", {"status": "PENDING"}),
             ("uns_delivery_results_total", {"status": "DELIVERED"}),
             ("uns_retries_total", {}),
             ("uns_channel_attempt_seconds_count", {"channel": "ops-hook"}),
             ("uns_channel_attempt_seconds_sum", {"channel": "ops-hook"})]
    before = [sample(n, **l) for n, l in names]
    with django_capture_on_commit_callbacks(execute=True):
        n = rt.accept("alice", request()).notification
        rt.dispatch()
        clock.advance(3600)
        rt.dispatch()
    assert Notification.objects.get(id=n.id).status == "DELIVERED"
    delta = [sample(n, **l) - b for (n, l), b in zip(names, before)]
    assert delta[:6] == [1, 1, 1, 1, 1, 2]
    assert delta[6] == pytest.approx(0.3)


def test_lease_lost_timed_out_and_dead_lettered_follow_their_events():
    before = (sample("uns_lease_lost_total"), sample("uns_ack_timed_out_total"), sample("uns_dead_lettered_total"))
    metrics.record_committed([
        timeline.event("n1", timeline.LEASE_LOST, {"lease_token": "t", "attempt": 1}, 1.0),
        timeline.event("n2", timeline.TIMED_OUT, {"actor": "uns-timeout-worker"}, 1.0),
        timeline.event("n3", timeline.DELIVERY_RESULT, {"status": "FAILED", "dead_letter": True}, 1.0),
        timeline.event("n4", timeline.DELIVERY_RESULT, {"status": "FAILED", "dead_letter": False}, 1.0),
    ])
    after = (sample("uns_lease_lost_total"), sample("uns_ack_timed_out_total"), sample("uns_dead_lettered_total"))
    assert [a - b for a, b in zip(after, before)] == [1, 1, 1]


def test_live_push_failures_are_counted_per_failed_send():
    before = sample("uns_live_push_failures_total")
    tally = FailureTally()
    tally.failed(ConnectionError("down"), "e1")
    tally.failed(ConnectionError("down"), "e2")
    assert sample("uns_live_push_failures_total") == before + 2


def test_state_gauges_read_the_database(rt, channel, clock, webhook, policy, django_capture_on_commit_callbacks):
    policy(max_attempts=1)
    webhook.script.extend([fail()])
    empty = collected(StateCollector(clock=clock))
    assert empty[("uns_metrics_database_up", ())] == 1
    assert empty[("uns_dead_letters", ())] == 0 and empty[("uns_dead_letter_oldest_age_seconds", ())] == 0
    assert ("uns_ack_oldest_deadline_timestamp_seconds", ()) not in empty

    dead = rt.accept("alice", request(title="dead")).notification
    rt.dispatch()  # one attempt allowed: dead-lettered now
    clock.advance(120)
    acked = rt.accept("alice", request(title="ack me", require_ack=True)).notification
    rt.dispatch()
    clock.advance(30)
    got = collected(StateCollector(clock=clock))
    assert Notification.objects.get(id=dead.id).dead_letter is True
    assert got[("uns_dead_letters", ())] == 1
    assert got[("uns_dead_letter_oldest_age_seconds", ())] == pytest.approx(150)
    assert got[("uns_ack_pending", ())] == 1
    assert got[("uns_ack_oldest_deadline_timestamp_seconds", ())] == Notification.objects.get(id=acked.id).deadline
    assert got[("uns_notifications", (("status", "FAILED"),))] == 1
    assert got[("uns_notifications", (("status", "DELIVERED"),))] == 1
    assert got[("uns_callback_outbox", ())] == 0


def test_oldest_dead_letter_is_one_query_over_the_failure_index(rt, channel, clock, webhook, policy,
                                                                django_assert_max_num_queries):
    policy(max_attempts=1)
    webhook.default = fail()
    first = rt.accept("alice", request(title="first")).notification
    clock.advance(10)
    rt.accept("alice", request(title="second")).notification
    rt.dispatch()  # both dead-lettered at the same settle
    failed_at = clock.now
    assert dlq.oldest_dead_letter_failed_at() == failed_at
    assert Notification.objects.get(id=first.id).dead_letter
    with django_assert_max_num_queries(1):
        assert dlq.oldest_dead_letter_failed_at() == failed_at


def test_worker_loop_ages_and_readiness_follow_the_clock(rt, db, monkeypatch):
    mono = FakeMonotonic()
    worker = Worker(rt, poll_interval=0.05, clock=mono)
    monkeypatch.setattr(worker, "loop_states", lambda: dict.fromkeys(Worker.LOOPS, True))  # threads alive
    mono.now += 5
    assert worker.loop_ages() == {"dispatch": 5.0, "timeout": 5.0, "callback": 5.0}
    assert worker.stale_loops(60) == {"dispatch": None, "timeout": None, "callback": None}  # never passed
    worker.run_once()
    mono.now += 2
    assert worker.loop_ages() == {"dispatch": 2.0, "timeout": 2.0, "callback": 2.0}
    assert worker.stale_loops(60) == {}
    status, body = readiness(worker, 60)
    assert status == 200 and body["status"] == "ok" and body["checks"]["database"] == {"ok": True}
    assert body["checks"]["migrations"] == {"ok": True} and body["checks"]["worker"]["ok"] is True

    metrics.track_worker(worker)
    try:
        assert collected(WorkerCollector())[("uns_worker_loop_last_pass_age_seconds", (("loop", "timeout"),))] == 2.0
    finally:
        metrics.untrack_worker(worker)

    mono.now += 100
    status, body = readiness(worker, 60)
    assert status == 503 and body["failed"] == ["worker"]
    assert body["checks"]["worker"]["stale"] == {"dispatch": 102.0, "timeout": 102.0, "callback": 102.0}
    worker.run_once()
    monkeypatch.setattr("notifications.health.check_database",
                        lambda: {"ok": False, "error": "OperationalError: connection refused"})
    status, body = readiness(worker, 60)
    assert status == 503 and body["status"] == "unavailable" and body["failed"] == ["database"]
    assert body["checks"]["migrations"]["ok"] is None and body["checks"]["worker"]["ok"] is True


def test_web_metrics_endpoint_and_its_optional_token(client, db, settings):
    response = client.get("/metrics")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain")
    text = response.content.decode()
    assert "uns_dead_letters 0.0" in text and "uns_notifications_accepted_total" in text
    assert client.post("/metrics").status_code == 405

    settings.UNS_METRICS_TOKEN = "scrape-token"
    assert client.get("/metrics").status_code == 401
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer wrong").status_code == 401
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer scrape-token").status_code == 200


def _get(url):
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return r.status, r.headers.get("Content-Type"), r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get("Content-Type"), e.read().decode()


@pytest.mark.django_db(transaction=True)
def test_worker_metrics_port_serves_metrics_healthz_and_readyz(rt):
    mono = FakeMonotonic()
    worker = Worker(rt, poll_interval=0.05, clock=mono)
    metrics.track_worker(worker)
    server = WorkerServer(worker, "127.0.0.1", 0, max_age=60)
    base = f"http://127.0.0.1:{server.port}"
    try:
        status, _, body = _get(f"{base}/healthz")
        assert (status, json.loads(body)) == (200, {"status": "ok"})
        status, _, body = _get(f"{base}/readyz")  # no loop thread runs, none has passed yet
        assert status == 503 and json.loads(body)["checks"]["worker"]["stale"]["dispatch"] is None
        worker.loop_states = lambda: dict.fromkeys(Worker.LOOPS, True)  # as if the threads ran
        worker.run_once()
        status, _, body = _get(f"{base}/readyz")
        assert status == 200, body
        status, ctype, body = _get(f"{base}/metrics")
        assert status == 200 and ctype.startswith("text/plain")
        assert 'uns_worker_loop_last_pass_age_seconds{loop="dispatch"} 0.0' in body
        assert "uns_metrics_database_up 1.0" in body
        assert _get(f"{base}/nope")[0] == 404
    finally:
        server.close()
        metrics.untrack_worker(worker)


def test_the_metrics_guide_names_every_metric_and_its_alert_rules_are_valid(rt, channel, tmp_path,
                                                                            django_capture_on_commit_callbacks):
    """The metrics how-to's table and alert rules (docs/how-to/metrics.md) name only metrics that
    exist, and every uns_ metric is in the table; the rules are YAML Prometheus accepts (promtool,
    where installed)."""
    import re
    import shutil
    import subprocess
    from pathlib import Path

    import yaml
    from django.conf import settings

    from notifications.metrics_http import exposition

    section = (Path(settings.BASE_DIR) / "docs" / "how-to" / "metrics.md").read_text()
    with django_capture_on_commit_callbacks(execute=True):
        rt.accept("alice", request(require_ack=True))
        rt.dispatch()
    worker = Worker(rt)
    metrics.track_worker(worker)
    try:
        typed = {m.group(1) for m in re.finditer(r"^# TYPE (uns_\w+) ", exposition().decode(), re.M)}
    finally:
        metrics.untrack_worker(worker)
    table = set(re.findall(r"^\| `(uns_\w+)` \|", section, re.M))
    # A counter's TYPE line omits its _total suffix.
    assert {n for n in typed if n not in table and n + "_total" not in table} == set()
    assert {n for n in table if n not in typed and n.removesuffix("_total") not in typed} == set()
    rules_yaml = re.findall(r"```yaml\n(# uns-alerts.yml\n.*?)```", section, re.S)[0]
    rules = yaml.safe_load(rules_yaml)["groups"][0]["rules"]
    used = {m for r in rules for m in re.findall(r"uns_\w+", r["expr"])}
    assert used <= table, used - table
    assert {"uns_dead_letters", "uns_dead_letter_oldest_age_seconds"} <= used
    if shutil.which("promtool"):
        path = tmp_path / "uns-alerts.yml"
        path.write_text(rules_yaml)
        done = subprocess.run(["promtool", "check", "rules", str(path)], capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stdout + done.stderr


MULTIPROCESS_SCRIPT = """
import multiprocessing, os, sys
import django
django.setup()
from notifications.runtime import metrics
from notifications.metrics_http import exposition

def child():
    metrics.RETRIES.inc(2)

metrics.RETRIES.inc(1)
p = multiprocessing.get_context("fork").Process(target=child)
p.start(); p.join()
sys.stdout.write(exposition().decode())
sys.stdout.write("=====\\n")
sys.stdout.write(exposition(multiprocess_dir=False).decode())
"""


def test_multiprocess_mode_sums_the_counters_of_every_process(tmp_path):
    """With PROMETHEUS_MULTIPROC_DIR (read when the client library is imported, hence a
    subprocess), /metrics sums the processes' counters and runworker's own-process exposition
    does not; a database that cannot answer turns into uns_metrics_database_up 0, not an error."""
    import os
    import subprocess
    import sys

    from django.conf import settings

    prom = tmp_path / "prom"
    prom.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("UNS_", "DJANGO_"))}
    env.update(DJANGO_SETTINGS_MODULE="uns_project.settings", PROMETHEUS_MULTIPROC_DIR=str(prom),
               DATABASE_URL=f"sqlite:///{tmp_path / 'unmigrated.sqlite3'}")
    done = subprocess.run([sys.executable, "-c", MULTIPROCESS_SCRIPT], cwd=settings.BASE_DIR, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    summed, own = done.stdout.split("=====\n")
    assert "\nuns_retries_total 3.0\n" in summed
    assert "\nuns_retries_total 1.0\n" in own
    assert "uns_metrics_database_up 0.0" in summed and "uns_dead_letters" not in summed


@pytest.mark.django_db(transaction=True)
def test_worker_metrics_port_wants_the_token_for_metrics_only(rt, settings):
    settings.UNS_METRICS_TOKEN = "scrape-token"
    worker = Worker(rt, poll_interval=0.05)
    server = WorkerServer(worker, "127.0.0.1", 0, max_age=60)
    base = f"http://127.0.0.1:{server.port}"
    try:
        assert _get(f"{base}/metrics")[0] == 401
        request_ = urllib.request.Request(f"{base}/metrics", headers={"Authorization": "Bearer scrape-token"})
        with urllib.request.urlopen(request_, timeout=10) as r:
            assert r.status == 200
        assert _get(f"{base}/healthz")[0] == 200
        assert _get(f"{base}/readyz")[0] == 503  # a probe gets its answer without a token (no loop runs)
    finally:
        server.close()


def test_oldest_dead_letter_is_exact_when_the_earliest_accepted_failed_last(rt, channel, clock, webhook, policy):
    """The earliest-accepted dead letters failed last (replayed, failed again): the answer is the
    minimum failure time over all of them, the latest settle's time for the replayed ones."""
    from django.db.models import Min

    policy(max_attempts=1)
    webhook.default = fail()
    early = [rt.accept("alice", request(title=f"early {i}")).notification.id for i in range(24)]
    clock.advance(10)
    late = rt.accept("alice", request(title="late")).notification.id
    rt.dispatch()  # all 25 dead-lettered now
    first_failure = clock.now
    clock.advance(60)
    for nid in early:
        rt.replay(nid, "oscar")
    rt.dispatch()  # the 24 early ones fail again, later
    assert Notification.objects.get(id=late).dead_letter
    truth = lists.dead_letters().aggregate(m=Min("failed_at"))["m"]
    assert truth == first_failure
    assert dlq.oldest_dead_letter_failed_at() == truth
    again = {n.failed_at for n in Notification.objects.filter(id__in=early)}
    assert again == {first_failure + 60}  # each replayed one: its second dead-lettering settle
    audited = {a.notification_id: a.created_at for a in NotificationAuditRecord.objects.filter(
        notification_id__in=early, status="FAILED").order_by("created_at")}
    assert set(audited.values()) == {first_failure + 60}  # the newest FAILED audit row agrees
