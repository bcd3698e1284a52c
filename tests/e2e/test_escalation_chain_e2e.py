"""A three-level escalation chain through real processes: ``uns_serve`` for the API
and the console read model, a separate ``runworker`` (so it can be killed), and a real webhook
receiver per level (``channel_servers.start_http``) on the run's database (SQLite or PostgreSQL).

- nobody responds: the levels reach their receivers in order, each once, and the chain ends
  (``ESCALATION_EXHAUSTED``), all shown by ``/ui/notifications/{id}``;
- an ACK over HTTP on level 1's escalation, between levels: the chain stops, and level 2's and
  level 3's receivers get nothing, also after their deadlines have passed;
- the worker SIGKILLed after level 1 and down across level 2's deadline: after a restart,
  level 2 fires exactly once (the timer is a row), then level 3.

The original's acknowledgement deadline is 3 s (a policy rule that matches its channel); each
level waits a few seconds. Waiting is by polling with generous deadlines, never a bare sleep
before an assertion, except where the assertion is that nothing arrives until a deadline has
passed.
"""
import json
import time

import pytest
from channel_servers import start_http, stop_http

from .stack import Stack, policy_content, wait_for
from .workerkit import Rows

pytestmark = pytest.mark.e2e

SECRET = "e2e-chain-secret"
CHANNEL = "chain-origin"
LEVELS = ("chain-l1", "chain-l2", "chain-l3")
PRINCIPALS = {"e2e-producer": "producer", "e2e-responder": "responder"}
DEADLINE = 90.0  # seconds any awaited state may take on a loaded machine
ACK_TIMEOUT_MINUTES = 0.05  # 3 s
WAITS = (8.0, 4.0, 2.0)  # seconds each level waits for a response


def chain_policy() -> dict:
    body = policy_content()
    body["rules"] = [{"name": "origin-escalates", "match": {"channels": [CHANNEL]}, "set": {
        "require_ack": True,
        "ack_timeout_minutes": ACK_TIMEOUT_MINUTES,
        "escalation": {"levels": [{"channels": [name], "wait_seconds": wait} for name, wait in zip(LEVELS, WAITS)]},
    }}]
    return body


@pytest.fixture(scope="module")
def servers():
    started = {name: start_http() for name in (CHANNEL, *LEVELS)}
    yield started
    for server in started.values():
        stop_http(server)


@pytest.fixture(scope="module")
def stack(tmp_path_factory, servers):
    """One ``uns_serve`` (no embedded worker) for the module; each test starts its workers."""
    tmp_path = tmp_path_factory.mktemp("chain")
    s = Stack(tmp_path, f"http://127.0.0.1:{servers[CHANNEL].port}/hook", secret=SECRET)
    try:
        (tmp_path / "policy.json").write_text(json.dumps(chain_policy()))  # before the first intake
        s.prepare(PRINCIPALS, CHANNEL)
        for name in LEVELS:
            s.manage("uns_channel", "--skip-checks", "create", name, "--kind", "webhook", "--url",
                     f"http://127.0.0.1:{servers[name].port}/hook", "--secret-stdin", "--timeout", "5",
                     input=SECRET + "\n")
        s.serve(UNS_EMBEDDED_WORKER="false")
        yield s
    finally:
        s.close()


@pytest.fixture
def receivers(stack, servers):
    """The receivers, emptied for this test; every worker the test started is stopped after it
    (the earlier tests' chains have ended, so nothing of theirs arrives any more)."""
    for server in servers.values():
        with server.receiver.lock:
            server.receiver.requests.clear()
    started = len(stack.processes)
    yield servers
    for proc in stack.processes[started:]:
        if proc.running():
            assert proc.terminate() == 0, proc.output()[-3000:]


def worker(stack, name="runworker"):
    return stack.start(name, "runworker", UNS_LOG_LEVEL="INFO", UNS_CALLBACK_URL="")


def ids_received(server) -> list[str]:
    with server.receiver.lock:
        return [r["json"]["id"] for r in server.receiver.requests if r["json"]]


def submit(stack) -> str:
    with stack.client("e2e-producer") as client:
        response = client.post("/api/v1/notifications", json={"source": "e2e-chain", "title": "db down",
                                                               "channels": [CHANNEL]})
    assert response.status_code == 202, response.text
    return response.json()["id"]


def chain(stack, nid) -> dict:
    with stack.client("e2e-responder") as client:
        response = client.get(f"/ui/notifications/{nid}")
    assert response.status_code == 200, response.text
    return response.json()["escalation"]


def events(rows, nid, kind) -> list[dict]:
    found = rows._query("SELECT payload FROM uns_events WHERE notification_id = %s AND kind = %s ORDER BY at, id",
                        (nid, kind))
    return [p if isinstance(p, dict) else json.loads(p) for (p,) in found]


def received(stack, server, what, n=1) -> list[str]:
    try:
        return wait_for(lambda: ids_received(server) if len(ids_received(server)) >= n else None, what,
                        timeout=DEADLINE, interval=0.1)
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n{stack.logs()}") from None


def test_without_a_response_the_levels_fire_in_order(stack, receivers):
    rows = Rows(stack.database_url)
    worker(stack)
    nid = submit(stack)
    assert received(stack, receivers[CHANNEL], "the original delivered") == [nid]
    [l1] = received(stack, receivers[LEVELS[0]], "level 1")
    [l2] = received(stack, receivers[LEVELS[1]], "level 2")
    [l3] = received(stack, receivers[LEVELS[2]], "level 3")
    wait_for(lambda: events(rows, nid, "ESCALATION_EXHAUSTED"), "the chain's end", timeout=DEADLINE)
    fired = events(rows, nid, "ESCALATED")
    assert [(p["level"], p["escalation_id"]) for p in fired] == [(1, l1), (2, l2), (3, l3)]
    view = chain(stack, nid)
    assert view["state"] == "EXHAUSTED" and view["active_level"] == 3
    assert [f["level"] for f in view["fired"]] == [1, 2, 3]
    assert view["fired"][0]["at"] <= view["fired"][1]["at"] - WAITS[0] + 0.5  # level 2 waited for level 1
    for server in (CHANNEL, *LEVELS):  # each level once
        assert len(ids_received(receivers[server])) == 1


def test_an_ack_between_levels_stops_the_chain(stack, receivers):
    rows = Rows(stack.database_url)
    worker(stack)
    nid = submit(stack)
    [l1] = received(stack, receivers[LEVELS[0]], "level 1")
    with stack.client("e2e-responder") as client:
        response = client.post(f"/api/v1/notifications/{l1}/ack")
    assert response.status_code == 200, response.text
    stop = wait_for(lambda: events(rows, nid, "ESCALATION_STOPPED"), "the chain stopped", timeout=DEADLINE)
    assert stop[0]["responded_on"] == l1 and stop[0]["actor"] == "e2e-responder" and stop[0]["level"] == 1
    level_one = events(rows, nid, "ESCALATED")[0]
    # wait until level 3 would have fired, and some more: the worker keeps passing meanwhile
    fired_at = rows._query("SELECT at FROM uns_events WHERE notification_id = %s AND kind = %s", (nid, "ESCALATED"))[0][0]
    while time.time() < fired_at + sum(WAITS) + 3.0:
        time.sleep(0.2)
    assert ids_received(receivers[LEVELS[1]]) == [] and ids_received(receivers[LEVELS[2]]) == []
    assert [p["escalation_id"] for p in events(rows, nid, "ESCALATED")] == [level_one["escalation_id"]]
    view = chain(stack, nid)
    assert view["state"] == "RESPONDED" and view["stopped"]["actor"] == "e2e-responder"
    assert view["fired"][0]["responded_by"] == "e2e-responder"


def test_a_worker_killed_across_a_deadline_fires_the_level_once_after_restart(stack, receivers):
    rows = Rows(stack.database_url)
    first = worker(stack, "runworker-1")
    nid = submit(stack)
    received(stack, receivers[LEVELS[0]], "level 1")
    first.popen.kill()  # SIGKILL: no cleanup of any kind
    first.popen.wait(30)
    [(due,)] = rows._query("SELECT escalation_due FROM uns_notifications WHERE id = %s", (nid,))
    assert due is not None
    while time.time() < due + 2.0:  # level 2's deadline passes while no worker runs
        time.sleep(0.2)
    assert ids_received(receivers[LEVELS[1]]) == []
    worker(stack, "runworker-2")
    [l2] = received(stack, receivers[LEVELS[1]], "level 2 after the restart")
    received(stack, receivers[LEVELS[2]], "level 3 after the restart")
    wait_for(lambda: events(rows, nid, "ESCALATION_EXHAUSTED"), "the chain's end", timeout=DEADLINE)
    assert ids_received(receivers[LEVELS[1]]) == [l2]
    assert [p["level"] for p in events(rows, nid, "ESCALATED")] == [1, 2, 3]
