"""Paging people through real processes: ``uns_serve`` (no embedded worker), a separate
``runworker``, and a real HTTP receiver per person (``channel_servers.start_http``) as each
person's own webhook contact method, added and verified (a real test send) by the person over
``/api/v1/oncall/me/contact-methods``.

A policy rule gives notifications of source ``e2e-oncall`` a 3 s acknowledgement deadline and a
two-level escalation: level 1 to ``schedule:primary`` (ann on call), level 2 to
``schedule:secondary`` (bob on call). Nobody acknowledges:

- the original and level 1 page ann's receiver, level 2 pages bob's; the timeline of each
  escalation names who was paged through which contact method (ONCALL_RESOLVED);
- an override on ``secondary`` (cid instead, for an hour) makes level 2 of the next
  notification page cid, and bob gets nothing more.
"""
import json

import pytest
from channel_servers import start_http, stop_http

from .stack import Stack, policy_content, wait_for
from .workerkit import Rows

pytestmark = pytest.mark.e2e

SECRET = "e2e-oncall-secret"
SOURCE = "e2e-oncall"
PEOPLE = ("ann", "bob", "cid")
PRINCIPALS = {"e2e-producer": "producer", "e2e-operator": "operator", **{p: "responder" for p in PEOPLE}}
DEADLINE = 90.0
WAITS = (4.0, 4.0)


def oncall_policy() -> dict:
    body = policy_content()
    body["rules"] = [{"name": "page-the-on-call", "match": {"source": [SOURCE]}, "set": {
        "require_ack": True,
        "ack_timeout_minutes": 0.05,  # 3 s
        "escalation": {"levels": [{"channels": ["schedule:primary"], "wait_seconds": WAITS[0]},
                                  {"channels": ["schedule:secondary"], "wait_seconds": WAITS[1]}]},
    }}]
    return body


@pytest.fixture(scope="module")
def servers():
    started = {name: start_http() for name in ("origin", *PEOPLE)}
    yield started
    for server in started.values():
        stop_http(server)


@pytest.fixture(scope="module")
def stack(tmp_path_factory, servers):
    tmp_path = tmp_path_factory.mktemp("oncall")
    s = Stack(tmp_path, f"http://127.0.0.1:{servers['origin'].port}/hook", secret=SECRET)
    try:
        (tmp_path / "policy.json").write_text(json.dumps(oncall_policy()))  # before the first intake
        s.prepare(PRINCIPALS, "origin")
        s.serve(UNS_EMBEDDED_WORKER="false")
        yield s
    finally:
        s.close()


def received(server) -> list[dict]:
    with server.receiver.lock:
        return [r["json"] for r in server.receiver.requests if r["json"]]


def ids(server) -> list[str]:
    return [body["id"] for body in received(server)]


def wait_received(stack, server, what, n=1) -> list[str]:
    try:
        return wait_for(lambda: ids(server) if len(ids(server)) >= n else None, what, timeout=DEADLINE, interval=0.1)
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n{stack.logs()}") from None


def events(rows, nid, kind) -> list[dict]:
    found = rows._query("SELECT payload FROM uns_events WHERE notification_id = %s AND kind = %s ORDER BY at, id",
                        (nid, kind))
    return [p if isinstance(p, dict) else json.loads(p) for (p,) in found]


def call(stack, principal, method, path, body=None, expect=(200, 201)):
    with stack.client(principal) as client:
        response = client.request(method, path, json=body)
    assert response.status_code in expect, (method, path, response.status_code, response.text)
    return response.json() if response.content else None


def submit(stack) -> str:
    return call(stack, "e2e-producer", "POST", "/api/v1/notifications",
                {"source": SOURCE, "title": "replica lag", "channels": ["schedule:primary"]}, expect=(202,))["id"]


def test_escalation_to_two_schedules_pages_the_people_on_call(stack, servers):
    rows = Rows(stack.database_url)
    layer = {"rotation_unit": "weeks", "rotation_count": 1, "start": "2020-01-06T00:00", "time_zone": "UTC"}
    call(stack, "e2e-operator", "POST", "/api/v1/oncall/schedules",
         {"name": "primary", "layers": [{**layer, "members": ["ann"]}]})
    call(stack, "e2e-operator", "POST", "/api/v1/oncall/schedules",
         {"name": "secondary", "layers": [{**layer, "members": ["bob"]}]})
    methods = {}
    for person in PEOPLE:  # each person adds and verifies their own contact method
        method = call(stack, person, "POST", "/api/v1/oncall/me/contact-methods",
                      {"kind": "webhook", "label": "pager", "secret": SECRET,
                       "config": {"url": f"http://127.0.0.1:{servers[person].port}/hook", "timeout": 5}})
        assert method["verification"] == "UNVERIFIED"
        verified = call(stack, person, "POST", f"/api/v1/oncall/me/contact-methods/{method['id']}/verify")
        assert verified["success"] is True and verified["contact_method"]["verification"] == "VERIFIED", verified
        assert received(servers[person])[0]["source"] == "uns-channel-test"  # the test send reached it
        methods[person] = method["id"]
    for server in servers.values():
        with server.receiver.lock:
            server.receiver.requests.clear()
    stack.start("runworker", "runworker", UNS_LOG_LEVEL="INFO", UNS_CALLBACK_URL="")

    nid = submit(stack)
    [original, level1] = wait_received(stack, servers["ann"], "the original and level 1 at ann's", n=2)
    [level2] = wait_received(stack, servers["bob"], "level 2 at bob's")
    assert original == nid
    fired = events(rows, nid, "ESCALATED")
    assert [(p["level"], p["escalation_id"]) for p in fired] == [(1, level1), (2, level2)]
    for esc, person in ((level1, "ann"), (level2, "bob")):
        [resolved] = events(rows, esc, "ONCALL_RESOLVED")
        assert [(p["user"], p["source"], [c["id"] for c in p["contact_methods"]]) for p in resolved["people"]] == [
            (person, "layer", [methods[person]])]
        [result] = [r for r in events(rows, esc, "CHANNEL_ATTEMPT_RESULT") if r["success"]]
        assert result["metadata"]["user"] == person and result["metadata"]["contact_method"] == methods[person]
    assert ids(servers["cid"]) == []

    # an override: cid instead of bob on the secondary schedule for the next hour
    now = call(stack, "e2e-operator", "GET", "/api/v1/oncall/schedules/secondary/on-call")["at"]
    call(stack, "e2e-operator", "POST", "/api/v1/oncall/schedules/secondary/overrides",
         {"user": "cid", "start": now - 1, "end": now + 3600})
    assert call(stack, "e2e-operator", "GET", "/api/v1/oncall/schedules/secondary/on-call")["on_call"]["user"] == "cid"
    second = submit(stack)
    [level2_again] = wait_received(stack, servers["cid"], "level 2 of the second notification at cid's")
    wait_received(stack, servers["ann"], "the second original and its level 1 at ann's", n=4)
    assert [p["escalation_id"] for p in events(rows, second, "ESCALATED")][1] == level2_again
    [resolved] = events(rows, level2_again, "ONCALL_RESOLVED")
    assert resolved["people"][0]["user"] == "cid" and resolved["people"][0]["source"] == "override"
    assert ids(servers["bob"]) == [level2]  # bob got nothing more
    assert SECRET not in stack.logs()
