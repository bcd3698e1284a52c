"""Group commit: many requests of one process written in one transaction, one COMMIT (issue 20).

``GroupCommit.run(in_batch, alone)`` writes one request. Normally one transaction of a
``GroupCommit`` is being written at a time per process. A request that finds the writer idle is
written at once, alone, on its own thread (``alone()``: the request's own transaction, exactly as
without a group commit: a lone producer waits for nothing). Requests arriving while a batch is
being written wait; when it commits, the first of them writes every request waiting at that
moment (at most ``MAX_BATCH``, in arrival order) in ONE transaction: each ``in_batch()`` in its
own savepoint, one COMMIT, one WAL flush for all. A request that has waited ``STALL`` seconds
without being taken (the batch is stuck on a row lock another connection holds, or the machine
is slow) starts another writer with what waits, so one blocked request never holds up the rest.

- Requests of one batch run in sequence on one connection, so two sharing a key (idempotency,
  dedup, the same notification) see each other's writes as they would one after the other.
- An ``UNSError`` (the request's own problem: unknown channel, conflict, ...) rolls back only
  its savepoint and is raised to its caller alone.
- Any other error of one request (say a deadlock with another process's batch) rolls back its
  savepoint; the request is retried ``alone()`` once the batch has committed, before the next
  batch starts, so requests keep their order.
- A failure outside the savepoints (the connection went away) rolls the batch back; every
  request is then retried ``alone()`` (and fails as it would have alone).
- A failed COMMIT leaves the outcome unknown: each request gets that error, never a retry
  (a request without an idempotency key could be stored twice).
- Every request is answered only after the COMMIT that holds it (a 2xx stays a durable
  promise); the answers are released by the batch's first on_commit hook, before the live
  pushes the writes registered (``timeline.insert_events``).

What a crash loses at each point: ``bench/README.md``. The batch sizes are observed as
``uns_group_commit_batch_size{work}``.
"""
import logging
import threading
from collections import deque

from django.db import transaction

from core.errors import UNSError, database_unreachable

from . import metrics as _metrics

log = logging.getLogger("uns.group_commit")


class _Request:
    """One request waiting in (or writing) a batch, and its answer (``value`` or ``error``,
    set before ``ready``)."""

    __slots__ = ("in_batch", "alone", "value", "error", "done", "ready", "lead", "retry")

    def __init__(self, in_batch, alone):
        self.in_batch, self.alone = in_batch, alone
        self.value = self.error = None
        self.done = False
        self.ready = threading.Event()
        self.lead = False  # woken to write the next batch, not with an answer
        self.retry = False  # to be written alone after its batch

    def answer(self, fn) -> None:
        try:
            self.value = fn()
        except Exception as exc:  # the request's own answer, raised in its own thread
            self.error = exc
        self.done = True

    def outcome(self):
        if self.error is not None:
            raise self.error
        return self.value


class GroupCommit:
    """The group commit of one kind of work (``work``: the metric's label) in this process."""

    MAX_BATCH = 32  # savepoints per transaction (PostgreSQL keeps 64 subtransactions in shared memory)
    STALL = 0.05  # seconds a waiting request gives the running batches before it writes itself

    def __init__(self, work: str):
        self.work = work
        self._lock = threading.Lock()
        self._waiting: deque[_Request] = deque()
        self._writers = 0

    def run(self, in_batch, alone):
        """Write one request: ``in_batch()`` inside a batch's transaction (in its own savepoint),
        or ``alone()`` in its own transaction; returns what the one that ran returned, or raises
        its exception. Must not be called inside a transaction."""
        request = _Request(in_batch, alone)
        with self._lock:
            if self._writers:
                self._waiting.append(request)
            else:
                self._writers = 1
                request.lead = True
        while not request.lead and not request.ready.wait(self.STALL):
            with self._lock:
                if request in self._waiting:  # not taken by a batch yet: the writers are stuck
                    self._waiting.remove(request)
                    self._writers += 1
                    request.lead = True
        if request.lead:
            self._lead(request)
        return request.outcome()

    def _lead(self, first: _Request) -> None:
        batch = [first]
        try:
            with self._lock:
                while self._waiting and len(batch) < self.MAX_BATCH:
                    batch.append(self._waiting.popleft())
            _metrics.observe_group_commit(self.work, len(batch))
            for request in batch:
                request.lead = False
            if len(batch) == 1:
                first.answer(first.alone)
            else:
                _write(batch)
        finally:
            for request in batch:  # whatever happened, nobody of this batch waits on
                if not request.done:
                    request.error = RuntimeError("the group commit ended without an answer")
                    request.done = True
                request.ready.set()
            with self._lock:
                nxt = self._waiting.popleft() if self._waiting else None
                if nxt is None:
                    self._writers -= 1
            if nxt is not None:
                nxt.lead = True
                nxt.ready.set()


def _write(batch: list[_Request]) -> None:
    """``batch`` in one transaction (``GroupCommit``); every request is answered when this returns."""
    committed = []

    def release():  # the first on_commit hook: the answers go out before the live pushes
        committed.append(True)
        for request in batch:
            if not request.retry:
                request.ready.set()

    failed_before_commit = False
    try:
        with transaction.atomic():
            transaction.on_commit(release)
            try:
                for request in batch:
                    _one(request)
            except Exception:
                failed_before_commit = True
                raise
    except Exception as exc:
        if committed:  # a later on_commit hook raised: the batch is stored and answered
            log.exception("an on_commit hook of a %d-request batch raised", len(batch))
        elif failed_before_commit:  # rolled back: nothing of the batch is stored
            for request in batch:
                request.value = request.error = None
                request.done, request.retry = False, True
        else:  # the COMMIT itself failed: it may or may not have been stored
            for request in batch:
                if not request.retry:
                    request.value, request.error = None, exc
    for request in batch:
        if request.retry:
            request.answer(request.alone)


def _one(request: _Request) -> None:
    """One request of a batch in its own savepoint: its value, its own ``UNSError``, or ``retry``."""
    try:
        with transaction.atomic():
            request.value = request.in_batch()
        request.done = True
    except UNSError as exc:  # this request's own problem; its savepoint is rolled back
        request.error = exc
        request.done = True
    except Exception as exc:
        if database_unreachable(exc):
            raise  # no request is at fault: the batch is retried alone (and fails as it would)
        request.retry = True  # e.g. a deadlock with another process's batch: alone after the commit
