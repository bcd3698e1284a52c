"""The callback outbox: ACKED / DISMISSED / TIMED_OUT events are durable callback work when the
runtime has a callback; ``deliver_callbacks`` claims them with a fencing token, retries with
backoff and gives up after 3 attempts."""
import pytest

from notifications.models import Event
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


@pytest.mark.parametrize("kind", ["ACKED", "DISMISSED", "TIMED_OUT"])
def test_response_events_join_the_outbox_when_a_callback_is_configured(make_runtime, clock, channel, kind):
    rt = make_runtime(callback=Recorder())
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


def test_no_callback_configured_means_nothing_pending(rt, clock, channel):
    nid = delivered(rt)
    rt.acknowledge(nid, "bob")
    assert only_event(nid, "ACKED").callback_pending is False
    assert not Event.objects.filter(callback_pending=True).exists()
    assert rt.deliver_callbacks() == {"delivered": 0, "failed": 0, "gave_up": 0}


def test_deliver_callbacks_delivers_once(make_runtime, clock, channel):
    cb = Recorder()
    rt = make_runtime(callback=cb)
    nid = delivered(rt)
    rt.acknowledge(nid, "bob", metadata={"note": "mine"})
    ev = only_event(nid, "ACKED")
    clock.advance(1)
    assert rt.deliver_callbacks() == {"delivered": 1, "failed": 0, "gave_up": 0}

    [body] = cb.bodies
    assert body["event_id"] == ev.id and body["kind"] == "ACKED" and body["at"] == ev.at
    assert body["payload"] == {"actor": "bob", "metadata": {"note": "mine"}}
    assert body["notification"]["id"] == nid
    assert body["notification"]["ack_status"] == "ACKED" and body["notification"]["actor"] == "bob"

    ev.refresh_from_db()
    assert (ev.callback_pending, ev.callback_token, ev.callback_attempts, ev.callback_error) == (False, None, 1, None)
    clock.advance(3600)
    assert rt.deliver_callbacks() == {"delivered": 0, "failed": 0, "gave_up": 0}
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

    assert rt.deliver_callbacks() == {"delivered": 0, "failed": 1, "gave_up": 0}
    ev.refresh_from_db()
    assert ev.callback_pending is True
    assert ev.callback_error == "RuntimeError: callback endpoint down"
    assert ev.callback_attempts == 1 and ev.callback_token is None
    first_retry = ev.callback_until
    assert first_retry == clock.now + CALLBACK_BACKOFF[0] and CALLBACK_BACKOFF[0] > 0

    clock.now = first_retry - 0.001
    assert rt.deliver_callbacks() == {"delivered": 0, "failed": 0, "gave_up": 0}
    clock.now = first_retry
    assert rt.deliver_callbacks() == {"delivered": 0, "failed": 1, "gave_up": 0}
    ev.refresh_from_db()
    second_retry = ev.callback_until
    assert ev.callback_attempts == 2 and ev.callback_pending is True
    assert second_retry == clock.now + CALLBACK_BACKOFF[1]
    assert CALLBACK_BACKOFF[1] > CALLBACK_BACKOFF[0]  # the backoff grows

    clock.now = second_retry
    assert rt.deliver_callbacks() == {"delivered": 0, "failed": 0, "gave_up": 1}
    ev.refresh_from_db()
    assert ev.callback_attempts == MAX_CALLBACK_ATTEMPTS == 3
    assert ev.callback_pending is False
    assert ev.callback_error == "RuntimeError: callback endpoint down"

    clock.advance(86_400)
    assert rt.deliver_callbacks() == {"delivered": 0, "failed": 0, "gave_up": 0}
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
