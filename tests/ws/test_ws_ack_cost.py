"""What one ACK over ``/ws/respond/`` costs the database, counted statement by statement.

The consumer's database work runs on executor threads, each with its own connection object, so
``connection.execute_wrapper`` (per connection object) cannot see it from the test's thread: the
count wraps ``CursorWrapper._execute_with_wrappers``, the method every ``execute`` and
``executemany`` of every connection passes through. A statement outside an atomic block is a
transaction of its own; the statements of one outermost atomic block are one transaction.

The bound: the credential re-check (token by digest with the user joined and its capabilities,
one statement) and what ``Runtime.acknowledge`` runs (the conditional UPDATE returning the row,
event INSERT, ack audit INSERT, people-audit INSERT, in one transaction; no read before or
after), all in one database
call; the answer is built from the row without another query.
"""
import threading

import pytest
from django.db.backends import utils

from notifications import ws_auth
from notifications.models import AckAuditRecord, Event

from .helpers import RECEIVE_TIMEOUT, receive, socket, sync
from .test_ws_respond import delivered

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True)]

CHECK_STATEMENTS = 1  # access.token_principal: token by digest, user joined, its capabilities
# Runtime.acknowledge: UPDATE ... RETURNING, event, the event's chart rollup (series), ack audit record,
# people-audit record
ACK_STATEMENTS = 5


class Counter:
    """Statements ``(sql, thread, transaction key)`` run by any thread while ``on``, and the
    database calls (``ws_auth.database_call``: a thread hop and a pooled connection each) made."""

    def __init__(self):
        self.on = False
        self.statements: list[tuple[str, int, tuple]] = []
        self.calls = 0
        self._blocks: list[object] = []
        self._lock = threading.Lock()

    def record(self, cursor, sql):
        if str(sql).startswith("BEGIN"):
            return  # SQLite's BEGIN IMMEDIATE (PostgreSQL's BEGIN is implicit): the transaction, not a statement
        db = cursor.db
        with self._lock:
            if db.in_atomic_block:
                outer = db.atomic_blocks[0]
                if not any(b is outer for b in self._blocks):
                    self._blocks.append(outer)
                key = ("atomic", next(i for i, b in enumerate(self._blocks) if b is outer))
            else:
                key = ("autocommit", len(self.statements))
            self.statements.append((str(sql), threading.get_ident(), key))

    def mark(self) -> tuple[int, int]:
        return len(self.statements), self.calls

    def since(self, mark: tuple[int, int]) -> tuple[list, int]:
        """The statements and the database calls since ``mark``."""
        return self.statements[mark[0]:], self.calls - mark[1]


@pytest.fixture
def counted(monkeypatch):
    counter = Counter()
    original = utils.CursorWrapper._execute_with_wrappers
    database_call = ws_auth.database_call

    def counting(self, sql, params, many, executor):
        if counter.on:
            counter.record(self, sql)
        return original(self, sql, params, many, executor)

    def counting_call(fn):
        if counter.on:
            counter.calls += 1
        return database_call(fn)

    monkeypatch.setattr(utils.CursorWrapper, "_execute_with_wrappers", counting)
    monkeypatch.setattr(ws_auth, "database_call", counting_call)
    return counter


@pytest.fixture
def principal(make_principal):
    """``(user, token)`` of a responder."""
    return make_principal("ws-cost", ("responder",))


async def ask(comm, timeout=RECEIVE_TIMEOUT, **message):
    await comm.send_json_to(message)
    return await receive(comm, timeout)


async def test_one_ack_is_one_database_call_of_five_statements_in_two_transactions(layer, ws_rt, clock, channel,
                                                                                           principal, counted):
    _, token = principal
    nids = [await sync(delivered, ws_rt, clock) for _ in range(3)]
    async with socket("/ws/respond/", token=token) as comm:
        for nid in nids:
            counted.on = True
            mark = counted.mark()
            reply = await ask(comm, action="ack", request_id=nid, notification_id=nid)
            statements, calls = counted.since(mark)
            counted.on = False
            assert reply["ok"] is True and reply["notification"]["ack_status"] == "ACKED", reply
            assert calls == 1, statements  # the check, the ACK and the answer's read share one thread hop
            assert len(statements) == CHECK_STATEMENTS + ACK_STATEMENTS, [s[:40] for s, _, _ in statements]
            assert len({thread for _, thread, _ in statements}) == 1
            transactions = {key for _, _, key in statements}
            writing = {key for key in transactions if key[0] == "atomic"}
            assert len(writing) == 1, statements  # one transaction per transition
            assert len(transactions) == CHECK_STATEMENTS + 1, statements  # the check's read + the transition
    assert await sync(lambda: Event.objects.filter(notification_id__in=nids, kind="ACKED").count()) == 3
    assert await sync(lambda: AckAuditRecord.objects.filter(notification_id__in=nids).count()) == 3


async def test_a_revoked_token_costs_one_statement_and_writes_nothing(layer, ws_rt, clock, channel,
                                                                      principal, counted):
    from knox.models import AuthToken

    user, token = principal
    nid = await sync(delivered, ws_rt, clock)
    async with socket("/ws/respond/", token=token) as comm:
        await sync(lambda: AuthToken.objects.filter(user=user).delete())
        counted.on = True
        reply = await ask(comm, action="ack", request_id="late", notification_id=nid)
        counted.on = False
        assert reply["ok"] is False and reply["problem"]["status"] == 401
    assert len(counted.statements) == 1, counted.statements  # the token lookup, which found nothing
    assert await sync(lambda: Event.objects.filter(notification_id=nid, kind="ACKED").count()) == 0


@pytest.mark.postgres
async def test_a_socket_waiting_on_a_row_lock_does_not_hold_up_another_socket(layer, ws_rt, clock, channel,
                                                                              principal):
    """Socket A's ACK blocks on a row lock held by another connection; socket B's ACK of another
    notification is answered meanwhile (with one thread-sensitive thread per process it queued
    behind A's), and A's completes once the lock is released."""
    from django.db import connection, transaction

    from notifications.models import Notification

    _, token = principal
    blocked, free = [await sync(delivered, ws_rt, clock) for _ in range(2)]
    locked, release = threading.Event(), threading.Event()

    def hold_lock():
        try:
            with transaction.atomic():
                Notification.objects.select_for_update().get(id=blocked)
                locked.set()
                release.wait(60)
        finally:
            connection.close()

    holder = threading.Thread(target=hold_lock, daemon=True)
    holder.start()
    try:
        assert locked.wait(30)
        async with socket("/ws/respond/", token=token) as a, socket("/ws/respond/", token=token) as b:
            await a.send_json_to({"action": "ack", "request_id": "a", "notification_id": blocked})
            reply = await ask(b, timeout=30, action="ack", request_id="b", notification_id=free)
            assert reply["ok"] is True and reply["notification"]["ack_status"] == "ACKED", reply
            assert await a.receive_nothing(timeout=0.2)  # still waiting on the lock
            release.set()
            reply = await receive(a, 30)
            assert reply["request_id"] == "a" and reply["ok"] is True, reply
    finally:
        release.set()
        holder.join(30)
