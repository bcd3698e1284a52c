"""A dispatch pass is a sliding window: one slow receiver does not stall
the other channels of the batch. A real local HTTP receiver and the real webhook adapter: the
``slow-hook`` receiver blocks on a ``threading.Event``, the ``fast-hook`` one answers at once.
While the slow calls are blocked, the fast channel's notifications are DELIVERED in the database
(their settle is committed, not held for the batch's end) and the slow channel holds no more
than its share of the adapter threads; once released, the slow ones settle too."""
import threading

import pytest
from django.db import connections

from notifications.adapters.registry import default_adapters
from notifications.models import Channel, Notification
from notifications.runtime import Runtime
from notifications.runtime import dispatch as dispatch_mod
from notifications.runtime.dispatch import window
from notifications.runtime.worker import StopSignal
from channel_servers import start_http, stop_http
from rthelpers import kinds, request

pytestmark = pytest.mark.django_db(transaction=True)

WAIT = 30.0  # bound on every wait for another thread (seconds)


class _Receiver:
    """``channel_servers.start_http`` with POST /slow held until ``release`` is set (``slow_arrived``
    is released at each, ``slow_calls`` counts them); POST /fast answers 200 at once."""

    def __init__(self):
        self.server = start_http()
        self.release = threading.Event()
        self.server.receiver.hold["/slow"] = self.release
        self.slow_arrived = self.server.receiver.held
        self.url = f"http://127.0.0.1:{self.server.port}"

    @property
    def slow_calls(self) -> int:
        return self.server.receiver.held_calls

    def close(self):
        self.release.set()
        stop_http(self.server)


@pytest.fixture
def receiver():
    r = _Receiver()
    yield r
    r.close()


def _slow_and_fast(clock, receiver) -> Runtime:
    """The ``slow-hook`` and ``fast-hook`` channels on ``receiver`` and a Runtime with 4 adapter
    threads delivering through the real webhook adapter."""
    for name in ("slow", "fast"):
        Channel.objects.create(name=f"{name}-hook", kind="webhook",
                               config={"url": f"{receiver.url}/{name}", "timeout": 25})
    return Runtime(clock=clock, adapters=default_adapters(clock), callback=None, concurrency=4, rng=lambda: 0.5)


def _accept(rt, name: str, n: int) -> list[str]:
    """``n`` notifications to the ``<name>-hook`` channel; their ids."""
    return [rt.accept("alice", request(title=f"{name} {i}", channels=[f"{name}-hook"])).notification.id
            for i in range(n)]


def _statuses(ids):
    return dict(Notification.objects.filter(id__in=ids).values_list("id", "status"))


def _dispatch_in_thread(rt, box, stop: bool = True) -> threading.Thread:
    """A dispatch pass in its own thread and connection: with a stop signal that is never set,
    as the worker loops run it, or (``stop=False``) ``Runtime.dispatch()``, which has none."""
    def run():
        try:
            box["reports"] = dispatch_mod.dispatch(rt, stop=StopSignal(WAIT)) if stop else rt.dispatch()
        finally:
            connections.close_all()

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


def _join_attempt_threads(before: set) -> None:
    """Wait for the pass's adapter threads (``uns-attempt-*``), so none holds the database when
    the test's teardown flushes it (the receiver's keep-alive threads are left to ``close``)."""
    for th in set(threading.enumerate()) - before:
        if th.name.startswith("uns-attempt"):
            th.join(WAIT)
            assert not th.is_alive()


def _start_pass(rt, receiver, slow_calls: int, stop: bool = True) -> tuple[threading.Thread, set, dict]:
    """A pass started in its own thread (``_dispatch_in_thread``), returned once the slow
    receiver holds ``slow_calls`` requests: ``(thread, threads before it, its result box)``."""
    box, before = {}, set(threading.enumerate())
    t = _dispatch_in_thread(rt, box, stop)
    for _ in range(slow_calls):
        assert receiver.slow_arrived.acquire(timeout=WAIT)
    return t, before, box


def _end_of_pass(t: threading.Thread, before: set, box: dict, ids: list[str]) -> None:
    """Wait for the pass in ``t`` and its adapter threads; every one of ``ids`` was reported DELIVERED."""
    t.join(WAIT)
    assert not t.is_alive()
    _join_attempt_threads(before)
    assert {r.id: r.status for r in box["reports"]} == dict.fromkeys(ids, "DELIVERED")


@pytest.fixture
def settled(monkeypatch):
    """``settled(ids) -> Event``: set once every id was in a committed ``settle_batch`` chunk."""
    real, seen, waits, lock = window.settle_batch, set(), [], threading.Lock()

    def settle_batch(runtime, claims):
        reports = real(runtime, claims)
        with lock:
            seen.update(c.id for c in claims)
            for ids, event in waits:
                if ids <= seen:
                    event.set()
        return reports

    def wait_for(ids):
        event = threading.Event()
        with lock:
            waits.append((set(ids), event))
            if set(ids) <= seen:
                event.set()
        return event

    monkeypatch.setattr(window, "settle_batch", settle_batch)
    return wait_for


def test_a_blocked_receiver_does_not_stall_the_other_channels_of_the_batch(clock, receiver, settled):
    rt = _slow_and_fast(clock, receiver)
    # The slow rows are due first, so they come first in the batch (claim order).
    slow = _accept(rt, "slow", 4)
    clock.advance(1)
    fast = _accept(rt, "fast", 6)

    fast_settled = settled(fast)
    try:
        t, before, box = _start_pass(rt, receiver, 2)
        # The slow receiver holds two calls and answers none; the fast channel's notifications
        # are settled meanwhile (the pass then writes nothing until a slow call answers, so this
        # thread may read: SQLite's shared-cache test database has no concurrent reader).
        assert fast_settled.wait(WAIT), "the fast channel's deliveries were not settled while the slow ones ran"
        assert set(_statuses(fast).values()) == {"DELIVERED"}
        assert not receiver.release.is_set() and t.is_alive()
        # The four slow rows came first: only the per-channel cap (ceil(4 / 2) threads while
        # another channel has work) left threads for the fast ones; once those were done, the
        # slow channel could take the free threads too.
        assert 2 <= receiver.slow_calls <= 4
        assert set(_statuses(slow).values()) == {"PENDING"}
        for nid in fast:
            assert kinds(nid)[-2:] == ["CHANNEL_ATTEMPT_RESULT", "DELIVERY_RESULT"]
    finally:
        receiver.release.set()
    _end_of_pass(t, before, box, slow + fast)
    assert receiver.slow_calls == 4
    assert set(_statuses(slow + fast).values()) == {"DELIVERED"}
    for nid in slow:
        assert kinds(nid) == ["ACCEPTED", "ATTEMPT_STARTED", "CHANNEL_ATTEMPT_STARTED", "CHANNEL_ATTEMPT_RESULT",
                              "DELIVERY_RESULT"]


def test_one_channel_alone_uses_every_thread(clock, receiver):
    """The per-channel cap only applies while another channel has work in the pass. The pass is
    ``Runtime.dispatch()``'s, without a stop signal: the same window as the worker's."""
    rt = _slow_and_fast(clock, receiver)  # only the slow channel has work
    ids = _accept(rt, "slow", 6)
    try:
        t, before, box = _start_pass(rt, receiver, 4, stop=False)
        assert receiver.slow_calls == 4
    finally:
        receiver.release.set()
    _end_of_pass(t, before, box, ids)


def _fast_rows_pass_blocked_slow_ones(clock, receiver, settled, slow_rows: int, fast_rows: int,
                                      why: str) -> list[str]:
    """``slow_rows`` notifications to the blocked slow receiver, a pass started until it holds all
    of them, then ``fast_rows`` to the fast one: these are DELIVERED while every slow call is
    still blocked (else ``why``); once released, the pass delivers all. Returns every id."""
    rt = _slow_and_fast(clock, receiver)
    slow = _accept(rt, "slow", slow_rows)
    try:
        t, before, box = _start_pass(rt, receiver, slow_rows)
        fast = _accept(rt, "fast", fast_rows)
        assert settled(fast).wait(WAIT), why
        assert set(_statuses(fast).values()) == {"DELIVERED"}
        assert set(_statuses(slow).values()) == {"PENDING"} and t.is_alive()
    finally:
        receiver.release.set()
    _end_of_pass(t, before, box, slow + fast)
    return slow + fast


def test_rows_accepted_while_a_slow_receiver_holds_the_pass_are_claimed_into_it(clock, receiver, settled):
    """With only slow attempts left in the window (half its threads free), it claims another
    batch: notifications accepted for a fast channel meanwhile are DELIVERED while the slow
    calls are still blocked, instead of waiting for the pass to end after the slow timeout."""
    ids = _fast_rows_pass_blocked_slow_ones(clock, receiver, settled, 2, 3,
                                            "rows accepted during a slow pass waited for it to end")
    for nid in ids:
        assert kinds(nid) == ["ACCEPTED", "ATTEMPT_STARTED", "CHANNEL_ATTEMPT_STARTED", "CHANNEL_ATTEMPT_RESULT",
                              "DELIVERY_RESULT"]


def test_fewer_than_half_the_threads_free_still_claim_once_the_running_attempts_are_slow(clock, receiver, settled):
    """3 of 4 threads held by a slow receiver (one thread free, fewer than half): once no attempt
    has answered for ``SLOW_AFTER`` seconds the window claims with that one thread, so rows
    accepted meanwhile for a fast channel are delivered while the slow calls are still blocked
    (trial finding: 9 attempts on a 30 s receiver in a 16-thread window held a critical page on
    another channel 8 s)."""
    _fast_rows_pass_blocked_slow_ones(clock, receiver, settled, 3, 2,
                                      "rows for a fast channel waited for a thread held by a slow receiver")
