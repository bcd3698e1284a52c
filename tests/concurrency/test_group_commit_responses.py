"""Group commit of responses (``group_commit.GroupCommit`` "ack", issue 20) on PostgreSQL, real
parallel connections released together by a barrier. The first responder's transaction is held
until every other racer waits behind it, so the rest are written as ONE batch (one COMMIT):

- each response gets its own answer: ACKs of distinct notifications are stored, each with one
  ACKED event and one audit row; racing actors on one notification inside the batch leave one
  response (the others get ``ack_conflict``), an unknown id gets its own ``NotFound``;
- the same actor repeating its ACK inside the batch gets the stored response back.
"""
import time

import pytest
from django.db import connection

from core.errors import Conflict, NotFound
from notifications.models import AckAuditRecord, Event, Notification
from notifications.runtime import group_commit, responses

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

N = 10


@pytest.fixture(autouse=True)
def _pool_for_the_racers():
    pool = getattr(connection, "pool", None)
    if pool is None:
        yield
        return
    size = (pool.min_size, pool.max_size)
    pool.resize(size[0], max(size[1], N + 2))
    yield
    pool.resize(*size)


@pytest.fixture
def batches(monkeypatch):
    """Hold the first response (its first ``_respond``) until N - 1 others wait; record batch sizes."""
    real_respond, real_write = responses._respond, group_commit._write
    state = {"held": False}
    written: list[int] = []

    def respond(*args, **kw):
        if not state["held"]:
            state["held"] = True
            deadline = time.monotonic() + 60
            while len(responses._ACKS._waiting) < N - 1:
                assert time.monotonic() < deadline, f"only {len(responses._ACKS._waiting)} responses queued"
                time.sleep(0.01)
        return real_respond(*args, **kw)

    def write(batch):
        written.append(len(batch))
        return real_write(batch)

    monkeypatch.setattr(responses, "_respond", respond)
    monkeypatch.setattr(group_commit, "_write", write)
    # The held writer stands in for a slow batch: the others must keep waiting for it, not start
    # writers of their own after STALL (a stuck batch's escape, tested in tests/ws/test_ws_ack_cost.py).
    monkeypatch.setattr(group_commit.GroupCommit, "STALL", 120.0)
    return written


def _awaiting_ack(rt, n):
    ids = [rt.accept("alice", {"source": "pager", "title": f"page {i}", "channels": ["ops-hook"],
                               "require_ack": True}).notification.id for i in range(n)]
    assert sorted(r.status for r in rt.dispatch()) == ["DELIVERED"] * n
    return ids


def _outcome(rt, nid, actor, **kw):
    try:
        return rt.acknowledge(nid, actor, **kw)
    except (Conflict, NotFound) as exc:
        return exc


def test_a_batch_of_responses_answers_each_with_its_own_outcome(rt, channel, race, batches):
    ids = _awaiting_ack(rt, 6)
    contested = ids[5]
    calls = ([(ids[i], "bob", False) for i in range(5)]
             + [(contested, "carol", False), (contested, "dave", True), (contested, "erin", False)]
             + [("0b7e5f4e-0000-4000-8000-000000000000", "bob", False), (ids[0], "bob", False)])
    assert len(calls) == N

    results, pids = race(N, lambda i: _outcome(rt, calls[i][0], calls[i][1], dismiss=calls[i][2]))

    assert len(set(pids)) == N and batches and batches[0] == N - 1, batches
    assert isinstance(results[8], NotFound)
    for i in range(5):
        row = Notification.objects.get(id=ids[i])
        assert (row.ack_status, row.actor) == ("ACKED", "bob")
        assert AckAuditRecord.objects.filter(notification_id=ids[i]).count() == 1
        assert Event.objects.filter(notification_id=ids[i], kind="ACKED").count() == 1
    # bob's repeat of ids[0] is answered with the stored response, in or after the batch
    assert isinstance(results[9], Notification) and (results[9].ack_status, results[9].actor) == ("ACKED", "bob")
    final = Notification.objects.get(id=contested)
    assert final.ack_status in ("ACKED", "DISMISSED")
    for (_nid, actor, _d), r in zip(calls[5:8], results[5:8]):
        if actor == final.actor:
            assert isinstance(r, Notification) and r.ack_status == final.ack_status
        else:
            assert isinstance(r, Conflict) and r.code == "ack_conflict", r
    assert AckAuditRecord.objects.filter(notification_id=contested).count() == 1
    assert Event.objects.filter(notification_id=contested, kind__in=["ACKED", "DISMISSED"]).count() == 1
