"""The callback outbox: ACKED / DISMISSED / TIMED_OUT events are always durable callback work
(whatever the writing runtime's configuration); ``deliver_callbacks`` claims them with a fencing
token (the attempt counted before I/O), retries with backoff and the provider's Retry-After,
never makes more than 3 attempts, does not retry a permanent failure, and writes CALLBACK_FAILED
when it gives up. A worker with no destination closes the rows unsent, recorded."""
import pytest

from notifications.adapters.base import DeliveryResult
from notifications.models import Event
from notifications.runtime import callbacks
from notifications.runtime.callbacks import CALLBACK_BACKOFF, MAX_CALLBACK_ATTEMPTS
from rthelpers import only_event, request, row, timeline

pytestmark = pytest.mark.django_db


class Recorder:
    """A callback that records bodies and runs a scripted step per call (None = succeed)."""

    def __init__(self, *steps):
        self.bodies = []
        self.steps = list(steps)

    def __call__(self, body):
        self.bodies.append(body)
        step = self.steps.pop(0) if self.steps else None
        if step is not None:
            step(body)


def boom(body):
    raise RuntimeError("callback endpoint down")


def delivered(rt, **fields):
    n = rt.accept("alice", request(require_ack=True, **fields)).notification
    rt.dispatch()
    return n.id


NONE = {"delivered": 0, "failed": 0, "gave_up": 0, "skipped": 0}


def counted(**kw):
    return {**NONE, **kw}


@pytest.mark.parametrize("kind", ["ACKED", "DISMISSED", "TIMED_OUT"])
@pytest.mark.parametrize("configured", [True, False])
def test_response_events_join_the_outbox_whatever_the_writer_configures(make_runtime, clock, channel, kind,
                                                                         configured):
    rt = make_runtime(callback=Recorder() if configured else None)
    nid = delivered(rt)
    clock.advance(12)
    if kind == "TIMED_OUT":
        clock.now = row(nid).deadline
        rt.expire()
    else:
        rt.acknowledge(nid, "bob", dismiss=kind == "DISMISSED")
    ev = only_event(nid, kind)
    assert ev.callback_pending is True
    assert ev.callback_until == ev.at == clock.now
    assert (ev.callback_attempts, ev.callback_token, ev.callback_error) == (0, None, None)
    others = [e for e in timeline(nid) if e.kind != kind]
    assert others and not any(e.callback_pending for e in others)


def test_a_web_process_without_a_destination_enqueues_and_the_worker_with_one_sends(make_runtime, clock, channel):
    web = make_runtime(callback=None)  # e.g. daphne without UNS_CALLBACK_URL
    nid = delivered(web)
    web.acknowledge(nid, "bob")
    cb = Recorder()
    worker = make_runtime(callback=cb)
    assert worker.deliver_callbacks() == counted(delivered=1)
    assert [b["notification"]["id"] for b in cb.bodies] == [nid]


def test_a_worker_without_a_destination_records_the_rows_unsent(rt, clock, channel):
    nid = delivered(rt)
    rt.acknowledge(nid, "bob")
    assert rt.deliver_callbacks() == counted(skipped=1)
    ev = only_event(nid, "ACKED")
    assert (ev.callback_pending, ev.callback_attempts, ev.callback_error) == (False, 0, callbacks.NO_DESTINATION)
    assert "CALLBACK_FAILED" not in [e.kind for e in timeline(nid)]  # nothing was attempted
    assert rt.deliver_callbacks() == NONE


def test_deliver_callbacks_delivers_once(make_runtime, clock, channel):
    cb = Recorder()
    rt = make_runtime(callback=cb)
    nid = delivered(rt)
    rt.acknowledge(nid, "bob", metadata={"note": "mine"})
    ev = only_event(nid, "ACKED")
    clock.advance(1)
    assert rt.deliver_callbacks() == counted(delivered=1)

    [body] = cb.bodies
    assert body["event_id"] == ev.id and body["kind"] == "ACKED" and body["at"] == ev.at
    assert body["payload"] == {"actor": "bob", "metadata": {"note": "mine"}}
    assert body["notification"]["id"] == nid
    assert body["notification"]["ack_status"] == "ACKED" and body["notification"]["actor"] == "bob"

    ev.refresh_from_db()
    assert (ev.callback_pending, ev.callback_token, ev.callback_attempts, ev.callback_error) == (False, None, 1, None)
    clock.advance(3600)
    assert rt.deliver_callbacks() == NONE
    assert len(cb.bodies) == 1


def test_claim_fences_with_a_token_and_a_lease(make_runtime, clock, channel):
    seen = {}

    def inspect(body):
        ev = Event.objects.get(id=body["event_id"])
        seen.update(token=ev.callback_token, until=ev.callback_until, attempts=ev.callback_attempts,
                    pending=ev.callback_pending)

    rt = make_runtime(callback=Recorder(inspect))
    nid = delivered(rt)
    rt.acknowledge(nid, "bob")
    clock.advance(2)
    rt.deliver_callbacks()
    assert len(seen["token"]) == 36
    assert seen["until"] == clock.now + 60
    assert (seen["attempts"], seen["pending"]) == (1, True)


def test_stale_callback_worker_cannot_overwrite_a_newer_result(make_runtime, clock, channel):
    second = Recorder()
    worker_b = make_runtime(callback=second)
    b_counts = {}

    def stall_then_fail(body):
        clock.advance(61)  # A's claim lease expires during its call
        b_counts.update(worker_b.deliver_callbacks())  # B re-claims and delivers
        raise RuntimeError("A's late failure")

    rt = make_runtime(callback=Recorder(stall_then_fail))
    nid = delivered(rt)
    rt.acknowledge(nid, "bob")
    rt.deliver_callbacks()

    assert b_counts["delivered"] == 1 and len(second.bodies) == 1
    ev = only_event(nid, "ACKED")
    # A's failure write named its own token, which B had replaced: B's result stands
    assert (ev.callback_pending, ev.callback_error, ev.callback_token, ev.callback_attempts) == (False, None, None, 2)


def test_failure_retries_with_backoff_then_gives_up_after_three_attempts(make_runtime, clock, channel):
    cb = Recorder(boom, boom, boom)
    rt = make_runtime(callback=cb)
    nid = delivered(rt)
    rt.acknowledge(nid, "bob")
    ev = only_event(nid, "ACKED")

    assert rt.deliver_callbacks() == counted(failed=1)
    ev.refresh_from_db()
    assert ev.callback_pending is True
    assert ev.callback_error == "RuntimeError: callback endpoint down"
    assert ev.callback_attempts == 1 and ev.callback_token is None
    first_retry = ev.callback_until
    assert first_retry == clock.now + CALLBACK_BACKOFF[0] and CALLBACK_BACKOFF[0] > 0

    clock.now = first_retry - 0.001
    assert rt.deliver_callbacks() == NONE
    clock.now = first_retry
    assert rt.deliver_callbacks() == counted(failed=1)
    ev.refresh_from_db()
    second_retry = ev.callback_until
    assert ev.callback_attempts == 2 and ev.callback_pending is True
    assert second_retry == clock.now + CALLBACK_BACKOFF[1]
    assert CALLBACK_BACKOFF[1] > CALLBACK_BACKOFF[0]  # the backoff grows

    clock.now = second_retry
    assert rt.deliver_callbacks() == counted(gave_up=1)
    ev.refresh_from_db()
    assert ev.callback_attempts == MAX_CALLBACK_ATTEMPTS == 3
    assert ev.callback_pending is False
    assert ev.callback_error == "RuntimeError: callback endpoint down"
    gave_up = only_event(nid, "CALLBACK_FAILED")
    assert gave_up.payload == {"event_id": ev.id, "event_kind": "ACKED", "attempts": 3,
                               "reason": "attempts_exhausted", "error": "RuntimeError: callback endpoint down",
                               "status_code": None}
    assert gave_up.callback_pending is False

    clock.advance(86_400)
    assert rt.deliver_callbacks() == NONE
    assert len(cb.bodies) == 3


def test_success_after_a_failure_clears_the_error(make_runtime, clock, channel):
    cb = Recorder(boom)
    rt = make_runtime(callback=cb)
    nid = delivered(rt)
    clock.now = row(nid).deadline
    rt.expire()
    rt.deliver_callbacks()
    ev = only_event(nid, "TIMED_OUT")
    ev.refresh_from_db()
    clock.now = ev.callback_until
    assert rt.deliver_callbacks()["delivered"] == 1
    ev.refresh_from_db()
    assert (ev.callback_pending, ev.callback_error, ev.callback_attempts) == (False, None, 2)
    assert [b["kind"] for b in cb.bodies] == ["TIMED_OUT", "TIMED_OUT"]
    assert cb.bodies[0]["payload"] == {"actor": "uns-timeout-worker", "metadata": {"escalation_required": True}}


def test_due_callbacks_are_delivered_oldest_first_up_to_the_limit(make_runtime, clock, channel):
    cb = Recorder()
    rt = make_runtime(callback=cb)
    ids = []
    for _ in range(3):
        nid = delivered(rt)
        rt.acknowledge(nid, "bob")
        ids.append(nid)
        clock.advance(1)
    assert rt.deliver_callbacks(limit=2)["delivered"] == 2
    assert [b["notification"]["id"] for b in cb.bodies] == ids[:2]
    assert rt.deliver_callbacks(limit=2)["delivered"] == 1
    assert [b["notification"]["id"] for b in cb.bodies] == ids


def test_a_permanent_failure_is_not_retried_and_gives_up_at_once(make_runtime, clock, channel):
    bodies = []

    def call(body):
        bodies.append(body)
        return DeliveryResult(False, retryable=False, error="HTTP 410", metadata={"status_code": 410})

    rt = make_runtime(callback=call)
    nid = delivered(rt)
    rt.acknowledge(nid, "bob")
    assert rt.deliver_callbacks() == counted(gave_up=1)
    ev = only_event(nid, "ACKED")
    assert (ev.callback_pending, ev.callback_attempts, ev.callback_error) == (False, 1, "HTTP 410")
    failed = only_event(nid, "CALLBACK_FAILED")
    assert failed.payload["reason"] == "permanent_failure" and failed.payload["status_code"] == 410
    clock.advance(86_400)
    assert rt.deliver_callbacks() == NONE and len(bodies) == 1


@pytest.mark.parametrize("asked, expected", [(100.0, 100.0), (1.0, CALLBACK_BACKOFF[0]), (10**6, 3600.0)])
def test_retry_after_sets_the_earliest_next_attempt_capped_like_the_channels(make_runtime, clock, channel,
                                                                             asked, expected):
    rt = make_runtime(callback=lambda body: DeliveryResult(False, retryable=True, error="HTTP 429",
                                                           metadata={"status_code": 429}, retry_after=asked),
                      retry_after_max_seconds=3600.0)
    nid = delivered(rt)
    rt.acknowledge(nid, "bob")
    assert rt.deliver_callbacks() == counted(failed=1)
    ev = only_event(nid, "ACKED")
    assert ev.callback_until == clock.now + expected  # max(backoff, min(Retry-After, cap))
    clock.now = ev.callback_until - 0.001
    assert rt.deliver_callbacks() == NONE


class Killed(BaseException):
    """The worker dying mid-callback: nothing after the call runs (not an ``Exception``)."""


def test_a_worker_lost_mid_callback_never_pushes_attempts_past_three(make_runtime, clock, channel):
    calls = []

    def die(body):
        calls.append(body["event_id"])
        raise Killed()

    rt = make_runtime(callback=die)
    nid = delivered(rt)
    rt.acknowledge(nid, "bob")
    ev = only_event(nid, "ACKED")
    for n in range(1, 4):
        with pytest.raises(Killed):
            rt.deliver_callbacks()
        ev.refresh_from_db()
        assert ev.callback_attempts == n and ev.callback_pending  # counted by the committed claim
        assert rt.deliver_callbacks() == NONE  # its lease holds: nobody else takes it
        clock.advance(rt.lease_seconds)
    assert rt.deliver_callbacks() == counted(gave_up=1)  # the third attempt was lost: give up, no fourth
    ev.refresh_from_db()
    assert (ev.callback_pending, ev.callback_attempts, ev.callback_token) == (False, 3, None)
    assert ev.callback_error == callbacks.WORKER_LOST
    assert only_event(nid, "CALLBACK_FAILED").payload["reason"] == "worker_lost"
    clock.advance(86_400)
    assert rt.deliver_callbacks() == NONE and len(calls) == 3


def test_the_http_callback_is_the_webhook_sender_signed_and_classified(make_runtime, clock, channel, settings):
    import base64
    import hashlib
    import hmac

    from channel_servers import start_http, stop_http
    from notifications.adapters.webhook import WebhookAdapter

    server = start_http()
    try:
        server.receiver.statuses.extend([503, 404])
        settings.UNS_CALLBACK_URL = f"http://127.0.0.1:{server.port}/cb"
        settings.UNS_CALLBACK_SECRET = "cb-Secret-9d1"
        sender = WebhookAdapter(clock=clock)
        rt = make_runtime(adapters={"webhook": sender}, callback=...)
        assert rt.callback.sender is sender  # the runtime's pooled webhook client
        assert "cb-Secret-9d1" not in repr(rt.callback)
        nid = delivered(make_runtime())
        rt.acknowledge(nid, "bob")
        assert rt.deliver_callbacks() == counted(failed=1)  # 503: retryable
        clock.now = only_event(nid, "ACKED").callback_until
        assert rt.deliver_callbacks() == counted(gave_up=1)  # 404: permanent
        first, second = server.receiver.requests
        ev = only_event(nid, "ACKED")
        for seen in (first, second):
            h = {k.lower(): v for k, v in seen["headers"].items()}
            assert h["webhook-id"] == ev.id and h["user-agent"] == "UNS-callback/1"
            raw = callbacks.canonical_json(seen["json"])
            mac = hmac.new(b"cb-Secret-9d1", f"{h['webhook-id']}.{h['webhook-timestamp']}.".encode() + raw,
                           hashlib.sha256)
            assert h["webhook-signature"] == "v1," + base64.b64encode(mac.digest()).decode()
        assert first["json"]["kind"] == "ACKED" and first["path"] == "/cb"
        assert only_event(nid, "CALLBACK_FAILED").payload["status_code"] == 404
    finally:
        stop_http(server)


def test_no_url_configured_means_no_http_callback(settings):
    settings.UNS_CALLBACK_URL = ""
    assert callbacks.configured_callback({}) is None
    settings.UNS_CALLBACK_URL = "ftp://example.com/x"
    with pytest.raises(ValueError):
        callbacks.configured_callback({})
