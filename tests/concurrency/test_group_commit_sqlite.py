"""Group commit of accepts on SQLite (the embedded mode): threads of one process accepting
through the shared writer, queued on the process's write lock (``uns_project.sqlite``).

The batch tests of ``test_group_commit_intake`` (written for PostgreSQL's parallel connections)
run here too, each thread on its own SQLite connection: the first leader is held until every
other racer waits in the group commit, so the rest are written as ONE batch (one BEGIN
IMMEDIATE, one COMMIT). Beside them, 4 producers x 25 accepts each through the writer give
exactly their rows and ACCEPTED events, and a row whose statements fail with a database error
inside a batch is retried alone without failing its neighbours.
"""
import time

import pytest
from django.db import connection

from core.errors import Conflict, UnknownChannel
from notifications.models import Event, Notification
from notifications.runtime import intake

import test_group_commit_intake as _on_postgres

# The PostgreSQL module's fixture and batch tests, collected here again under this module's marks.
N, _outcome, batches = _on_postgres.N, _on_postgres._outcome, _on_postgres.batches
test_repeats_of_one_key_in_one_batch_store_one_row = _on_postgres.test_repeats_of_one_key_in_one_batch_store_one_row
test_one_dedup_key_in_one_batch_elects_one_leader = _on_postgres.test_one_dedup_key_in_one_batch_elects_one_leader
test_one_dedup_key_across_two_processes_batches_elects_one_leader = (
    _on_postgres.test_one_dedup_key_across_two_processes_batches_elects_one_leader)
test_each_request_of_a_batch_keeps_its_own_runtime = _on_postgres.test_each_request_of_a_batch_keeps_its_own_runtime

# SQLite's variant (the PostgreSQL ones are in test_group_commit_intake).
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.sqlite]


def test_four_producers_through_the_writer_store_exactly_their_rows(rt, channel, race):
    per = 25
    results, _ = race(4, lambda p: [rt.accept("alice", {"source": f"p{p}", "title": f"{p}-{i}",
                                                        "channels": ["ops-hook"]}) for i in range(per)])

    ids = [r.notification.id for rs in results for r in rs]
    assert all(r.created for rs in results for r in rs) and len(set(ids)) == 4 * per
    assert Notification.objects.count() == 4 * per
    events = list(Event.objects.values_list("notification_id", "kind"))
    assert sorted(events) == sorted((i, "ACCEPTED") for i in ids)
    titles = dict(Notification.objects.values_list("id", "notification__title"))
    for p, rs in enumerate(results):
        assert [titles[r.notification.id] for r in rs] == [f"{p}-{i}" for i in range(per)]


def test_a_bad_row_in_a_batch_fails_none_of_its_neighbours(rt, channel, race, batches, monkeypatch):
    _state, written = batches
    real_insert = intake._insert
    broken = {"left": 1}

    def insert(runtime, principal, req, *args, **kw):
        # A real database error inside the batch (its savepoint rolls back): retried alone.
        if req["title"] == "breaks once" and broken["left"] and len(connection.savepoint_ids) > 0:
            broken["left"] -= 1
            with connection.cursor() as cur:
                cur.execute("SELECT * FROM no_such_table")
        return real_insert(runtime, principal, req, *args, **kw)

    monkeypatch.setattr(intake, "_insert", insert)
    requests = ([{"source": "s", "title": "first", "channels": ["ops-hook"]}]
                + [{"source": "s", "title": f"ok {i}", "channels": ["ops-hook"]} for i in range(4)]
                + [{"source": "s", "title": "unknown channel", "channels": ["no-such-channel"]},
                   {"source": "s", "title": "keyed a", "idempotency_key": "k1", "channels": ["ops-hook"]},
                   {"source": "s", "title": "keyed b", "idempotency_key": "k1", "channels": ["ops-hook"]},
                   {"source": "s", "title": "breaks once", "channels": ["ops-hook"]},
                   {"source": "s", "title": "ok 5", "channels": ["ops-hook"]}])
    assert len(requests) == N

    def submit(i):
        deadline = time.monotonic() + 60
        while i and not intake._GROUP._writers:  # the others come once the first is the leader
            assert time.monotonic() < deadline
            time.sleep(0.005)
        return _outcome(rt, "alice", dict(requests[i]))

    results, _ = race(N, submit)

    assert written and written[0] == N - 1, written
    assert broken["left"] == 0
    by_title = {req["title"]: res for req, res in zip(requests, results)}
    assert isinstance(by_title["unknown channel"], UnknownChannel)
    keyed = [by_title["keyed a"], by_title["keyed b"]]
    assert sorted(type(r).__name__ for r in keyed) == ["AcceptResult", "Conflict"]
    created = {t: r for t, r in by_title.items() if not isinstance(r, (UnknownChannel, Conflict))}
    assert len(created) == N - 2
    for title, r in created.items():
        row = Notification.objects.get(id=r.notification.id)
        assert r.created and row.notification["title"] == title
        assert list(Event.objects.filter(notification_id=row.id).values_list("kind", flat=True)) == ["ACCEPTED"]
    assert Notification.objects.count() == N - 2
