"""Prometheus metrics of real processes, PostgreSQL leg: a web process (``uns_serve``
without embedded loops) and ``runworker --metrics-port``. Notifications are submitted over HTTP:
some delivered through a webhook, some dead-lettered against a channel whose URL refuses
connections, one waiting for an acknowledgement, one coalesced behind a dedup leader. Once the
database is quiet, both ``/metrics`` endpoints are scraped and compared with the database: the
web process's accepted counter with the rows, the worker's delivery counters with the
timeline's CHANNEL_ATTEMPT_RESULT / DELIVERY_RESULT events, and the gauges of both with the
counts by status, DLQ depth and pending acknowledgements.

A second test stops the worker's (throwaway) PostgreSQL and waits for ``/readyz`` to answer 503
naming the database, then 200 again after the restart.

Polling only, with generous deadlines; no durations are asserted.
"""
import json
from collections import Counter

import httpx
import pytest
from django.conf import settings
from prometheus_client.parser import text_string_to_metric_families

from .stack import LOG_SWEEP, Stack, free_port, wait_for
from .workerkit import OwnDatabaseStack, Rows, SlowReceiver, ThrowawayPostgres

pytestmark = [pytest.mark.e2e, pytest.mark.skipif(not settings.IS_POSTGRES, reason="needs PostgreSQL")]

OK, BAD = "metrics-ok", "metrics-bad"
DEADLINE = 60.0


@pytest.fixture
def receiver():
    r = SlowReceiver(delay=0.0)
    yield r
    r.close()


@pytest.fixture
def stack(tmp_path, receiver):
    s = Stack(tmp_path, receiver.url, secret="metrics-secret")
    try:
        s.prepare({"e2e-producer": "producer"}, OK)
        bad_url = f"http://127.0.0.1:{free_port()}/refused"  # nothing listens there
        LOG_SWEEP.add_channel(bad_url, "metrics-bad-secret")
        s.manage("uns_channel", "--skip-checks", "create", BAD, "--kind", "webhook", "--url", bad_url,
                 "--secret-stdin", "--timeout", "2", input="metrics-bad-secret\n")
        yield s
    finally:
        s.close()


def scrape(url: str) -> dict[tuple, float]:
    """``{(sample name, ((label, value), ...)): value}`` of one ``/metrics`` answer."""
    response = httpx.get(url, timeout=20)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain")
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(response.text) for s in family.samples}


def by_label(samples: dict, name: str, label: str) -> dict[str, float]:
    return {dict(labels)[label]: v for (n, labels), v in samples.items() if n == name}


def value(samples: dict, name: str, default=None):
    return samples.get((name, ()), default)


def payloads(rows: Rows, kind: str) -> list[dict]:
    out = rows._query("SELECT payload FROM uns_events WHERE kind = %s", (kind,))
    return [p if isinstance(p, dict) else json.loads(p) for (p,) in out]


def database_view(rows: Rows) -> dict:
    q = rows._query
    results = payloads(rows, "CHANNEL_ATTEMPT_RESULT")
    settles = payloads(rows, "DELIVERY_RESULT")
    linked = Counter(p["owner_status"] for p in payloads(rows, "DEDUP_LINKED"))
    total = q("SELECT count(*) FROM uns_notifications")[0][0]
    return {
        "by_status": dict(q("SELECT status, count(*) FROM uns_notifications GROUP BY status")),
        "dlq": q("SELECT count(*) FROM uns_notifications WHERE status = 'FAILED' AND dead_letter")[0][0],
        "ack_pending": q("SELECT count(*) FROM uns_notifications WHERE ack_status = 'PENDING'")[0][0],
        "deadline": q("SELECT min(deadline) FROM uns_notifications WHERE ack_status = 'PENDING'")[0][0],
        "outbox": q("SELECT count(*) FROM uns_events WHERE callback_pending")[0][0],
        "accepted": {"leader": total - sum(linked.values()), "follower": linked.get("PENDING", 0),
                     "deduplicated": linked.get("DELIVERED", 0)},
        "deliveries": Counter((p["channel"], "success" if p["success"] else "failure") for p in results),
        "attempts": Counter(p["channel"] for p in results),
        "settles": Counter(p["status"] for p in settles),
        "dead_lettered": sum(1 for p in settles if p["dead_letter"]),
    }


def post(client, **body):
    response = client.post("/api/v1/notifications", json={"source": "e2e-metrics", **body})
    assert response.status_code == 202, response.text
    return response.json()["id"]


def test_web_and_worker_metrics_match_the_database(stack):
    stack.serve(UNS_EMBEDDED_WORKER="false", UNS_CALLBACK_URL="")
    port = free_port()
    worker = stack.start("runworker", "runworker", "--metrics-port", str(port), UNS_CALLBACK_URL="")
    worker_url = f"http://127.0.0.1:{port}"

    def worker_up():
        assert worker.running(), worker.output()[-3000:]
        try:
            return httpx.get(f"{worker_url}/healthz", timeout=2).json() == {"status": "ok"}
        except httpx.HTTPError:
            return False

    wait_for(worker_up, "runworker /healthz", timeout=DEADLINE)

    with stack.client("e2e-producer") as client:
        for i in range(3):
            post(client, title=f"ok {i}", channels=[OK])
        for i in range(2):
            post(client, title=f"bad {i}", channels=[BAD])
        ack_id = post(client, title="needs ack", channels=[OK], require_ack=True)
        post(client, title="dup", channels=[OK], dedup_key="metrics-dup")
        post(client, title="dup", channels=[OK], dedup_key="metrics-dup")

    rows = Rows(stack.database_url)

    def settled():
        view = database_view(rows)
        s = view["by_status"]
        done = s.get("PENDING", 0) == 0 and view["dlq"] == 2 and view["ack_pending"] == 1
        # database_view's queries are not one snapshot (the events are read before the states, so
        # a settle can commit in between): take it only once two reads in a row agree
        return view if done and database_view(rows) == view else None

    try:
        view = wait_for(settled, "every notification settled", timeout=DEADLINE)
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n{stack.logs()}") from None
    assert rows.notifications()[ack_id]["status"] == "DELIVERED"

    def matches(url, check):
        def probe():
            samples = scrape(url)
            try:
                check(samples)
            except AssertionError:
                return None
            return samples
        try:
            return wait_for(probe, f"{url} to show the database's counts", timeout=DEADLINE, interval=0.2)
        except AssertionError:
            check(scrape(url))  # the mismatch itself
            raise

    def gauges(samples):
        assert value(samples, "uns_metrics_database_up") == 1
        assert by_label(samples, "uns_notifications", "status") == view["by_status"]
        assert value(samples, "uns_dead_letters") == view["dlq"] == 2
        assert value(samples, "uns_dead_letter_oldest_age_seconds") >= 0
        assert value(samples, "uns_ack_pending") == view["ack_pending"] == 1
        assert value(samples, "uns_ack_oldest_deadline_timestamp_seconds") == pytest.approx(view["deadline"])
        assert value(samples, "uns_callback_outbox") == view["outbox"]

    def web(samples):
        gauges(samples)
        accepted = {dict(labels)["dedup_role"]: v for (n, labels), v in samples.items()
                    if n == "uns_notifications_accepted_total" and dict(labels)["principal_class"] == "producer"}
        assert {k: v for k, v in accepted.items() if v} == {k: v for k, v in view["accepted"].items() if v}
        assert sum(accepted.values()) == 8

    def work(samples):
        gauges(samples)
        deliveries = {(dict(labels)["channel"], dict(labels)["outcome"]): v for (n, labels), v in samples.items()
                      if n == "uns_channel_deliveries_total"}
        assert deliveries == dict(view["deliveries"])
        assert by_label(samples, "uns_channel_attempt_seconds_count", "channel") == dict(view["attempts"])
        assert by_label(samples, "uns_delivery_results_total", "status") == dict(view["settles"])
        assert value(samples, "uns_retries_total", 0) == view["settles"].get("PENDING", 0) > 0
        assert value(samples, "uns_dead_lettered_total") == view["dead_lettered"] == 2
        assert set(by_label(samples, "uns_worker_loop_last_pass_age_seconds", "loop")) == {
            "dispatch", "timeout", "callback"}

    matches(f"{stack.base_url}/metrics", web)
    matches(f"{worker_url}/metrics", work)
    assert view["deliveries"][(BAD, "failure")] == 6  # 2 notifications x 3 attempts (the e2e policy)

    ready = httpx.get(f"{worker_url}/readyz", timeout=20)
    assert ready.status_code == 200, ready.text
    assert ready.json()["status"] == "ok"


def test_worker_readyz_fails_while_its_database_is_down(tmp_path):
    pg = ThrowawayPostgres()
    stack = None
    try:
        stack = OwnDatabaseStack(tmp_path, "http://127.0.0.1:9/unused", secret="readyz-secret",
                                  database_url=pg.url)
        stack.manage("migrate", "--no-input", "-v", "0")
        port = free_port()
        worker = stack.start("runworker", "runworker", "--metrics-port", str(port), UNS_CALLBACK_URL="",
                             UNS_DB_POOL_TIMEOUT="2")
        url = f"http://127.0.0.1:{port}/readyz"

        def ready(expected):
            def probe():
                assert worker.running(), worker.output()[-3000:]
                try:
                    response = httpx.get(url, timeout=20)
                except httpx.HTTPError:
                    return None
                return response if response.status_code == expected else None
            return probe

        wait_for(ready(200), "/readyz 200", timeout=DEADLINE)
        pg.stop()
        down = wait_for(ready(503), "/readyz 503 with the database down", timeout=DEADLINE)
        body = down.json()
        assert body["status"] == "unavailable" and "database" in body["failed"]
        assert body["checks"]["database"]["ok"] is False and body["checks"]["database"]["error"]
        health = httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=5)
        assert health.status_code == 200  # liveness: the process still answers
        pg.start()
        wait_for(ready(200), "/readyz 200 after the database is back", timeout=DEADLINE)
        assert worker.terminate() == 0
    finally:
        try:
            if stack is not None:
                stack.close()
        finally:
            pg.close()
