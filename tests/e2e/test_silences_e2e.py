"""Silences and early resolves with real processes: ``uns_serve`` (no embedded worker), a
``runworker`` and a real HTTP receiver behind the policy's default webhook channel.

- the official PagerDuty client (``pagerduty`` on PyPI) triggers, triggers again (coalesced),
  acknowledges and resolves within a second: with the policy's ``pause_seconds`` the resolve
  arrives before any page, so the receiver gets nothing for that alert (a later alert that is not
  resolved is delivered, which proves the worker ran past the pause);
- a silence created over HTTP holds a matching notification (accepted, visible, SILENCED naming
  the silence, never sent) while a non-matching one is delivered.
"""
import json

import pagerduty
import pytest

from .stack import Stack, policy_content, wait_for
from .workerkit import ScriptedReceiver

pytestmark = pytest.mark.e2e

CHANNEL = "pager-hook"
SIGNING = "whsec_c2lsZW5jZXMtZTJlLWtleQ=="
PRINCIPALS = {"pd-monitor": "producer,responder", "e2e-operator": "operator,console", "e2e-producer": "producer"}
PAUSE_SECONDS = 2


@pytest.fixture
def receiver():
    r = ScriptedReceiver([])
    yield r
    r.close()


@pytest.fixture
def stack(tmp_path, receiver):
    s = Stack(tmp_path, f"http://127.0.0.1:{receiver.port}/hook", secret=SIGNING)
    content = policy_content()
    content["defaults"].update(channels=[CHANNEL], pause_seconds=PAUSE_SECONDS)
    (tmp_path / "policy.json").write_text(json.dumps(content))
    try:
        s.prepare(PRINCIPALS, CHANNEL)
        s.serve(UNS_EMBEDDED_WORKER="false")
        worker = s.start("runworker", "runworker", UNS_CALLBACK_URL="")
        # the worker's loops are up before any assertion waits on a delivery (a loaded machine can
        # take longer than one state's deadline just to start a Django process)
        wait_for(lambda: "uns worker running" in worker.output() or not worker.running(), "runworker to start",
                 timeout=120)
        assert worker.running(), worker.output()[-3000:]
        yield s
    finally:
        s.close()


def kinds(detail):
    return [e["kind"] for e in detail["timeline"]]


def test_official_pagerduty_client_trigger_then_resolve_pages_nobody(stack, receiver):
    client = pagerduty.EventsApiV2Client(stack.tokens["pd-monitor"])
    # The client insists on https:// in its url setter; a deployment serves UNS over TLS, this
    # test's server speaks plain HTTP on 127.0.0.1, so the base URL is set beneath the setter.
    client._url = f"{stack.base_url}/api/v1/integrations/pagerduty"
    key = client.trigger("db-01 replication lag", "db-01", dedup_key="db-01/lag")
    assert key == "db-01/lag"
    assert client.trigger("db-01 replication lag", "db-01", dedup_key="db-01/lag") == key  # coalesced
    assert client.acknowledge(key) == key
    assert client.resolve(key) == key
    with stack.client("e2e-operator") as http:
        items = http.get("/api/v1/notifications", params={"source": "db-01"}).json()["items"]
    assert len(items) == 2
    for item in items:
        d = stack.wait_state(item["id"], "withheld", lambda d: d["status"] == "FAILED", "e2e-operator")
        assert d["dead_letter"] is False and d["ack_status"] is None
        assert "DELIVERY_WITHHELD" in kinds(d) and "CHANNEL_ATTEMPT_STARTED" not in kinds(d)
    # an alert nobody resolves is paged after the pause: the worker was running all along
    other = client.trigger("db-02 disk full", "db-02", dedup_key="db-02/disk")
    with stack.client("e2e-operator") as http:
        [paged] = http.get("/api/v1/notifications", params={"source": "db-02"}).json()["items"]
    stack.wait_state(paged["id"], "delivered", lambda d: d["status"] == "DELIVERED", "e2e-operator")
    assert other == "db-02/disk"
    assert [r["id"] for r in receiver.seen()] == [paged["id"]]
    # the resolved alert's rows are still settled the same way after the worker's later passes
    for item in items:
        assert stack.detail(item["id"], "e2e-operator")["status"] == "FAILED"


def test_a_silence_holds_a_matching_notification_while_a_non_matching_one_is_delivered(stack, receiver):
    with stack.client("e2e-operator") as op:
        made = op.post("/api/v1/silences", json={
            "matchers": [{"name": "source", "op": "=~", "value": "db-0[1-3]"}],
            "duration_seconds": 3600, "comment": "db migration"})
        assert made.status_code == 201, made.text
        silence = made.json()
        bad = op.post("/api/v1/silences", json={"matchers": [{"name": "source", "op": "=~", "value": "db-("}],
                                                 "duration_seconds": 60, "comment": "x"})
        assert bad.status_code == 400 and bad.json()["code"] == "invalid_silence"
    with stack.client("e2e-producer") as producer:
        held = producer.post("/api/v1/notifications", json={"source": "db-02", "title": "disk full"}).json()
        sent = producer.post("/api/v1/notifications", json={"source": "web-01", "title": "5xx rate"}).json()
    stack.wait_state(sent["id"], "delivered", lambda d: d["status"] == "DELIVERED", "e2e-operator")
    d = stack.wait_state(held["id"], "silenced", lambda d: "SILENCED" in kinds(d), "e2e-operator")
    [event] = [e for e in d["timeline"] if e["kind"] == "SILENCED"]
    assert event["payload"]["silence_id"] == silence["id"] and event["payload"]["scope"] == "delivery"
    assert d["status"] == "PENDING" and "CHANNEL_ATTEMPT_STARTED" not in kinds(d)
    assert [r["id"] for r in receiver.seen()] == [sent["id"]]
    # expire it now: the held notification is fresh, so it is delivered
    with stack.client("e2e-operator") as op:
        assert op.post(f"/api/v1/silences/{silence['id']}/expire").json()["state"] == "expired"
    stack.wait_state(held["id"], "delivered", lambda d: d["status"] == "DELIVERED", "e2e-operator")
    wait_for(lambda: len(receiver.seen()) == 2, "the held notification at the receiver")
