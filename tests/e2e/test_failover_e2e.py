"""Failover by real processes: a policy loaded and activated with ``manage.py
uns_policy load --activate`` names ``fallback-hook`` as the fallback of ``primary-hook``; the
primary's real receiver answers 410 (permanent), so the ``runworker`` delivers to the fallback's
real receiver in the same attempt, and the timeline (over HTTP) tells which channel failed,
which fallback was tried and its result."""
import json

import pytest

from policies.content import BUILTIN_DEFAULTS

from .stack import Stack
from .workerkit import ScriptedReceiver, SlowReceiver

pytestmark = pytest.mark.e2e

PRIMARY, FALLBACK = "primary-hook", "fallback-hook"
PRINCIPALS = {"e2e-producer": "producer", "e2e-operator": "operator"}


def test_a_permanent_failure_is_delivered_by_the_fallback_channel(tmp_path):
    primary = ScriptedReceiver([lambda: (410, {})])
    fallback = SlowReceiver()
    stack = Stack(tmp_path, f"http://127.0.0.1:{primary.port}/hook", secret="whsec_ZmFpbG92ZXIta2V5")
    try:
        stack.prepare(PRINCIPALS, PRIMARY)
        stack.manage("uns_channel", "--skip-checks", "create", FALLBACK, "--kind", "webhook", "--url", fallback.url)
        policy = tmp_path / "failover.json"
        policy.write_text(json.dumps({"policy_id": "failover-e2e", "content": {
            "schema_version": 1, "priority": 10, "defaults": BUILTIN_DEFAULTS,
            "rules": [{"name": "nightly", "match": {"source": "nightly"},
                       "set": {"fallback_channels": {PRIMARY: [FALLBACK]}}}]}}))
        stack.manage("uns_policy", "--skip-checks", "load", str(policy), "--activate")
        stack.serve(UNS_EMBEDDED_WORKER="false")
        stack.start("runworker", "runworker")
        with stack.client("e2e-producer") as client:
            answer = client.post("/api/v1/notifications", json={"source": "nightly", "title": "report",
                                                                "channels": [PRIMARY]})
        assert answer.status_code == 202, answer.text
        nid = answer.json()["id"]
        done = stack.wait_state(nid, "DELIVERED", lambda d: d["status"] == "DELIVERED", "e2e-operator")
        assert done["attempts"] == 1 and done["dead_letter"] is False
        assert [r["id"] for r in primary.seen()] == [nid] and fallback.answered_ids() == {nid}
        with stack.client("e2e-operator") as client:
            events = client.get(f"/api/v1/notifications/{nid}/timeline").json()["items"]
        steps = [(e["kind"], e["payload"].get("channel")) for e in events
                 if e["kind"] in ("CHANNEL_ATTEMPT_STARTED", "CHANNEL_ATTEMPT_RESULT", "CHANNEL_FAILED_OVER")]
        assert steps == [("CHANNEL_ATTEMPT_STARTED", PRIMARY), ("CHANNEL_ATTEMPT_RESULT", PRIMARY),
                         ("CHANNEL_FAILED_OVER", PRIMARY),
                         ("CHANNEL_ATTEMPT_STARTED", FALLBACK), ("CHANNEL_ATTEMPT_RESULT", FALLBACK)]
        over = next(e["payload"] for e in events if e["kind"] == "CHANNEL_FAILED_OVER")
        assert (over["fallback"], over["reason"], over["error"]) == (FALLBACK, "permanent_failure",
                                                                f"HTTP 410 from 127.0.0.1:{primary.port}")
        results = [e["payload"] for e in events if e["kind"] == "CHANNEL_ATTEMPT_RESULT"]
        assert [r["success"] for r in results] == [False, True]
    finally:
        stack.close()
        primary.close()
        fallback.close()
