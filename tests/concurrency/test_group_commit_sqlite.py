"""Group commit of accepts on SQLite (the embedded mode): threads of one process accepting
through the shared writer, queued on the process's write lock (``uns_project.sqlite``).

The batch tests of ``test_group_commit_intake`` (written for PostgreSQL's parallel connections)
run here too, each thread on its own SQLite connection: the first leader is held until every
other racer waits in the group commit, so the rest are written as ONE batch (one BEGIN
IMMEDIATE, one COMMIT). Beside them, 4 producers x 25 accepts each through the writer give
exactly their rows and ACCEPTED events, and a row whose statements fail with a database error
inside a batch is retried alone without failing its neighbours.
"""
import pytest

from notifications.models import Event, Notification

import test_group_commit_intake as _on_postgres

# The PostgreSQL module's fixture and batch tests, collected here again under this module's marks.
N, _outcome, batches = _on_postgres.N, _on_postgres._outcome, _on_postgres.batches
test_repeats_of_one_key_in_one_batch_store_one_row = _on_postgres.test_repeats_of_one_key_in_one_batch_store_one_row
test_one_dedup_key_in_one_batch_elects_one_leader = _on_postgres.test_one_dedup_key_in_one_batch_elects_one_leader
test_one_dedup_key_across_two_processes_batches_elects_one_leader = (
    _on_postgres.test_one_dedup_key_across_two_processes_batches_elects_one_leader)
test_each_request_of_a_batch_keeps_its_own_runtime = _on_postgres.test_each_request_of_a_batch_keeps_its_own_runtime
# A bad row of a batch (an unknown channel, an idempotency conflict, a database error in its
# savepoint) fails none of its neighbours.
test_a_batch_answers_each_request_with_its_own_outcome = _on_postgres.test_a_batch_answers_each_request_with_its_own_outcome

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

