"""Webhook delivery by real processes: ``uns_serve`` (no embedded worker) takes the
notification over HTTP, a ``runworker`` delivers it to a local receiver whose URL carries
``user:password@`` and ``?token=``, and the receiver answers ``429 Retry-After: 1``, then
``503 Retry-After: <HTTP-date>``, then 200.

- Retry-After: each attempt arrives no earlier than the previous answer asked (wall clock, lower
  bounds only), although the policy's backoff is 50 ms and its 3 attempts would otherwise be
  spent in 0.1 s;
- redaction: the whole output of every process (the server, the worker at DEBUG, the one-shot
  commands) carries neither the URL's password, nor its token, nor the signing secret, while
  the worker's httpx request line is there, masked.
"""
import base64
import time
from email.utils import formatdate, parsedate_to_datetime

import pytest

from .stack import Stack
from .workerkit import ScriptedReceiver

pytestmark = pytest.mark.e2e

CHANNEL = "cred-hook"
PASSWORD = "pw-e2e-7f3a91c2"
QUERY_TOKEN = "qt-e2e-5b8d24e6"
SIGNING = "whsec_ZTJlLXNpZ25pbmcta2V5LXNlY3JldA=="
PRINCIPALS = {"e2e-producer": "producer", "e2e-operator": "operator"}


@pytest.fixture
def receiver():
    r = ScriptedReceiver([
        lambda: (429, {"Retry-After": "1"}),
        lambda: (503, {"Retry-After": formatdate(time.time() + 2, usegmt=True)}),  # whole seconds: >= 1 s on
    ])
    yield r
    r.close()


@pytest.fixture
def stack(tmp_path, receiver):
    url = f"http://hookuser:{PASSWORD}@127.0.0.1:{receiver.port}/hook?token={QUERY_TOKEN}&team=ops"
    s = Stack(tmp_path, url, secret=SIGNING)
    try:
        s.prepare(PRINCIPALS, CHANNEL)
        s.serve(UNS_EMBEDDED_WORKER="false", UNS_LOG_LEVEL="DEBUG")
        s.start("runworker", "runworker", UNS_LOG_LEVEL="DEBUG", UNS_CALLBACK_URL="")
        yield s
    finally:
        s.close()


def test_retry_after_is_honoured_and_no_log_line_carries_a_channel_secret(stack, receiver):
    with stack.client("e2e-producer") as client:
        answer = client.post("/api/v1/notifications", json={"source": "e2e", "title": "rate limited",
                                                            "channels": [CHANNEL]})
    assert answer.status_code == 202, answer.text
    nid = answer.json()["id"]
    done = stack.wait_state(nid, "DELIVERED", lambda d: d["status"] == "DELIVERED", "e2e-operator")
    assert done["attempts"] == 3  # the policy's max_attempts: the waits spent none of them early

    first, second, third = receiver.seen()
    assert {r["id"] for r in (first, second, third)} == {nid}
    # the URL's credentials reach the receiver (Basic auth, the query), so they were really in use
    assert first["headers"]["Authorization"] == "Basic " + base64.b64encode(f"hookuser:{PASSWORD}".encode()).decode()
    assert first["path"] == f"/hook?token={QUERY_TOKEN}&team=ops"
    # no earlier than asked: 1 s after the 429's answer, and not before the 503's HTTP-date
    assert second["arrived"] >= first["answered"] + 1.0
    not_before = parsedate_to_datetime(second["answer"]["headers"]["Retry-After"]).timestamp()
    assert third["arrived"] >= not_before

    results = [e for e in done["timeline"] if e["kind"] == "CHANNEL_ATTEMPT_RESULT"]
    asked = [e["payload"]["metadata"].get("retry_after_seconds") for e in results]
    assert asked[0] == 1.0 and asked[1] > 0 and asked[2] is None

    for proc in list(stack.processes):
        proc.terminate()
    logs = {p.name: p.output() for p in stack.processes}
    logs["commands"] = "\n".join(stack.commands_output)
    for name, text in logs.items():
        for needle in (PASSWORD, QUERY_TOKEN, SIGNING, SIGNING.removeprefix("whsec_")):
            assert needle not in text, f"{needle[:6]}... in the {name} log"
    assert f"HTTP Request: POST http://***@127.0.0.1:{receiver.port}/hook?token=***&team=ops" in logs["runworker"]



def test_the_suite_wide_log_sweep_finds_a_leaked_channel_secret(tmp_path):
    """The end-of-session check (``tests/e2e/conftest.py``) really looks: a log with a URL
    password, a secret query value or a signing secret is reported; masked ones are not."""
    from .stack import LogSweep

    sweep = LogSweep()
    sweep.add_channel(f"http://u:{PASSWORD}@h/x?token={QUERY_TOKEN}&team=ops", SIGNING)
    assert sweep.secrets == {PASSWORD, QUERY_TOKEN, SIGNING}  # "ops" is no secret (and too short)
    clean, leaky = tmp_path / "clean.log", tmp_path / "leaky.log"
    clean.write_text("POST http://***@h/x?token=***&team=ops\n")
    leaky.write_text(f"POST http://u:{PASSWORD}@h/x\n")
    sweep.logs += [clean, leaky]
    sweep.outputs.append(f"signed with {SIGNING}")
    assert sweep.leaks() == [f"{leaky}: {PASSWORD[:4]}...", f"command output 0: {SIGNING[:4]}..."]
