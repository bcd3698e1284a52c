"""A worker killed with SIGKILL mid-dispatch (DESIGN.md write-path rule 2, architecture
"Delivery and recovery"): a real ``manage.py runworker --once`` process claims the row, reaches a
webhook that never answers, and is killed. After the 60 s lease expires (a clock 61 s ahead, no
sleeping) another worker reclaims the row, flags that the provider effect may repeat, and
delivers it.

The subprocess talks to this test's database, which it can see because ``transaction=True``
tests commit for real.
"""
import os
import signal
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from django.db import connection

from notifications.adapters.webhook import WebhookAdapter
from notifications.models import Channel, Event, Notification
from notifications.runtime import Runtime

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

ROOT = Path(__file__).resolve().parents[2]


class Receiver:
    """A threaded local HTTP server. ``hang=True``: read each POST, then never answer (until
    ``close``). Otherwise answer 200. ``requests`` holds (path, headers) of every POST."""

    def __init__(self, hang):
        self.requests, self.got_request, self.unblock = [], threading.Event(), threading.Event()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                self.rfile.read(int(self.headers.get("content-length", 0)))
                receiver.requests.append((self.path, {k.lower(): v for k, v in self.headers.items()}))
                receiver.got_request.set()
                if hang:
                    receiver.unblock.wait(120)
                    return
                self.send_response(200)
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.unblock.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def hanging():
    r = Receiver(hang=True)
    yield r
    r.close()


@pytest.fixture
def answering():
    r = Receiver(hang=False)
    yield r
    r.close()


def _database_url() -> str:
    s = connection.settings_dict
    return f"postgres://{s['USER']}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}"


def _wait_for(predicate, timeout, what, proc=None):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        if proc is not None and proc.poll() is not None:
            out, err = proc.communicate()
            pytest.fail(f"runworker exited ({proc.returncode}) before {what}:\n{out}\n{err}")
        time.sleep(0.05)
    pytest.fail(f"timed out waiting for {what}")


def test_worker_sigkilled_mid_dispatch_is_reclaimed_after_lease_expiry_and_delivered(hanging, answering):
    Channel.objects.create(name="slow-hook", kind="webhook", config={"url": hanging.url, "timeout": 300})
    # Real time: the subprocess worker runs on the wall clock.
    accepted = Runtime(clock=time.time, callback=None).accept("alice", {"source": "pager", "title": "disk full",
                                                                        "channels": ["slow-hook"]})
    nid = accepted.notification.id

    env = {**os.environ, "DATABASE_URL": _database_url(), "UNS_LOG_LEVEL": "WARNING", "UNS_CALLBACK_URL": ""}
    proc = subprocess.Popen([sys.executable, "manage.py", "runworker", "--once"], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _wait_for(lambda: Event.objects.filter(notification_id=nid, kind="CHANNEL_ATTEMPT_STARTED").exists(),
                  60, "CHANNEL_ATTEMPT_STARTED to be committed", proc)
        assert hanging.got_request.wait(30), "the worker never reached the webhook"
        claimed = Notification.objects.get(id=nid)
        assert claimed.status == "PENDING" and claimed.lease_token is not None
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
        assert proc.returncode == -signal.SIGKILL
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(30)
        proc.stdout.close()
        proc.stderr.close()

    # The killed worker left its claim behind and settled nothing.
    stale = Notification.objects.get(id=nid)
    assert (stale.status, stale.lease_token, stale.attempts) == ("PENDING", claimed.lease_token, 1)
    assert not Event.objects.filter(notification_id=nid, kind__in=["CHANNEL_ATTEMPT_RESULT", "DELIVERY_RESULT"]).exists()

    # Before the lease expires nobody may take it over.
    Channel.objects.filter(name="slow-hook").update(config={"url": answering.url, "timeout": 10})
    early = Runtime(clock=lambda: stale.lease_until - 1.0, adapters={"webhook": WebhookAdapter()}, callback=None)
    assert early.dispatch() == []

    # 61 s after the claim (the lease is 60 s) a worker with a working webhook reclaims it.
    later = stale.lease_until - 60.0 + 61.0
    recovery = Runtime(clock=lambda: later, adapters={"webhook": WebhookAdapter()}, callback=None, concurrency=1)
    reports = recovery.dispatch()
    assert [(r.id, r.status, r.attempt) for r in reports] == [(nid, "DELIVERED", 2)]

    row = Notification.objects.get(id=nid)
    assert (row.status, row.attempts, row.lease_token, row.delivered_at) == ("DELIVERED", 2, None, later)
    events = list(Event.objects.filter(notification_id=nid).order_by("at", "id"))
    started = [e.payload for e in events if e.kind == "ATTEMPT_STARTED"]
    assert [(p["attempt"], p["recovery_may_repeat_provider_effect"]) for p in started] == [(1, False), (2, True)]
    channel_started = [e.payload["lease_token"] for e in events if e.kind == "CHANNEL_ATTEMPT_STARTED"]
    assert channel_started[0] == claimed.lease_token and len(channel_started) == 2
    results = [e.payload for e in events if e.kind == "CHANNEL_ATTEMPT_RESULT"]
    assert [(p["lease_token"], p["success"]) for p in results] == [(channel_started[1], True)]
    assert [e.payload["status"] for e in events if e.kind == "DELIVERY_RESULT"] == ["DELIVERED"]
    # The repeated provider call carries the same idempotency key as the one that hung, so the
    # receiver can recognise the repeat.
    assert len(hanging.requests) == 1 and len(answering.requests) == 1
    hung_headers, answered_headers = hanging.requests[0][1], answering.requests[0][1]
    assert hung_headers["idempotency-key"] == answered_headers["idempotency-key"] == f"{nid}:1"
