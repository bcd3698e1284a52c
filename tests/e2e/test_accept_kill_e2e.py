"""A web process SIGKILLed while 16 producers submit (issue 20: the group commit keeps a 202 a
durable promise). Real ``uns_serve`` on the run's database (on PostgreSQL its requests run on the
database threads, so accepts arriving together are written as one batch, ``group_commit.GroupCommit``);
the producers keep posting until the process is killed mid-stream. Every request that got a 2xx
names a row that is stored with its ACCEPTED event; requests cut off got no answer, or an error.
(Whether the kill fell inside an open batch is not visible from outside: with 16 producers on
one process the writer is rarely idle, and each run kills it at another point.)
"""
import threading

import httpx
import pytest

from .stack import Stack, wait_for
from .workerkit import Rows

pytestmark = pytest.mark.e2e

CHANNEL = "kill-hook"
PRODUCERS = 16


@pytest.fixture
def stack(tmp_path):
    s = Stack(tmp_path, "http://127.0.0.1:9/hook", secret="kill-secret")
    try:
        s.prepare({"e2e-producer": "producer"}, CHANNEL)
        yield s
    finally:
        s.close()


def test_sigkill_of_the_web_process_mid_batch_loses_no_accepted_request(stack):
    server = stack.serve(UNS_EMBEDDED_WORKER="false", UNS_LOG_LEVEL="WARNING")
    accepted: list[str] = []
    lock = threading.Lock()
    stop = threading.Event()
    headers = {"Authorization": f"Bearer {stack.tokens['e2e-producer']}"}

    def produce(p):
        with httpx.Client(base_url=stack.base_url, headers=headers, timeout=10) as client:
            i = 0
            while not stop.is_set():
                i += 1
                try:
                    r = client.post("/api/v1/notifications",
                                    json={"source": "kill", "title": f"p{p} #{i}", "channels": [CHANNEL]})
                except httpx.HTTPError:  # the process is gone: this request got no answer
                    return
                if 200 <= r.status_code < 300:
                    with lock:
                        accepted.append(r.json()["id"])

    threads = [threading.Thread(target=produce, args=(p,), name=f"producer-{p}") for p in range(PRODUCERS)]
    for t in threads:
        t.start()
    try:
        # Mid-stream: well past the first batches, producers still posting.
        wait_for(lambda: len(accepted) >= 150, "150 accepted requests", timeout=120)
        server.popen.kill()  # SIGKILL: no shutdown, no flush, a batch may be between INSERT and COMMIT
        server.popen.wait(30)
    finally:
        stop.set()
        for t in threads:
            t.join(30)
    assert not any(t.is_alive() for t in threads)

    rows = Rows(stack.database_url)
    stored = set(rows.notifications())
    with_accepted = {r[0] for r in rows._query("SELECT notification_id FROM uns_events WHERE kind = %s",
                                               ("ACCEPTED",))}
    ids = set(accepted)
    assert len(ids) == len(accepted) >= 150
    assert ids <= stored, f"{len(ids - stored)} accepted request(s) lost"
    assert ids <= with_accepted
    # Every stored row has its ACCEPTED event (they commit together); rows the kill cut off
    # after their COMMIT but before the answer may exist without a 2xx, never the reverse.
    assert stored == with_accepted
    assert server.popen.returncode == -9
