"""A whole-request deadline for httpx, which only bounds each phase (connect, each read, each
write) on its own: a receiver that trickles its answer a byte at a time, each byte inside the
read timeout, would otherwise hold a dispatch attempt (and the batch behind it) for minutes, past
its lease.

``DeadlineTransport`` is httpx's ``HTTPTransport`` whose connection pool makes its sockets
through ``DeadlineBackend``: every read and write of every connection (new or pooled) waits at
most until the deadline of the request the calling thread is making, set with
``deadline(seconds)`` around the call. Past it, a read raises ``httpcore.ReadTimeout`` and a
write ``httpcore.WriteTimeout``, which httpx raises as ``httpx.ReadTimeout`` /
``httpx.WriteTimeout``. Without a deadline set, the per-phase timeouts alone apply.
"""
import contextlib
import threading
import time

import httpcore
import httpx

_local = threading.local()


@contextlib.contextmanager
def deadline(seconds: float):
    """Bound the requests this thread makes inside the block to ``seconds`` in all (monotonic
    clock), through ``DeadlineTransport``."""
    previous = getattr(_local, "deadline", None)
    _local.deadline = time.monotonic() + seconds
    try:
        yield
    finally:
        _local.deadline = previous


def _bounded(timeout: float | None, error: type[Exception]) -> float | None:
    end = getattr(_local, "deadline", None)
    if end is None:
        return timeout
    left = end - time.monotonic()
    if left <= 0:
        raise error("the request's deadline passed")
    return left if timeout is None else min(timeout, left)


class _DeadlineStream(httpcore.NetworkStream):
    def __init__(self, stream: httpcore.NetworkStream):
        self._stream = stream

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._stream.read(max_bytes, _bounded(timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._stream.write(buffer, _bounded(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._stream.close()

    def start_tls(self, ssl_context, server_hostname=None, timeout=None) -> httpcore.NetworkStream:
        return _DeadlineStream(self._stream.start_tls(ssl_context, server_hostname,
                                                      _bounded(timeout, httpcore.ConnectTimeout)))

    def get_extra_info(self, info: str):
        return self._stream.get_extra_info(info)


class DeadlineBackend(httpcore.NetworkBackend):
    """httpcore's ``SyncBackend`` with every stream bounded by the calling thread's deadline."""

    def __init__(self, backend: httpcore.NetworkBackend | None = None):
        self._backend = backend or httpcore.SyncBackend()

    def connect_tcp(self, host, port, timeout=None, local_address=None, socket_options=None):
        return _DeadlineStream(self._backend.connect_tcp(host, port, _bounded(timeout, httpcore.ConnectTimeout),
                                                         local_address, socket_options))

    def connect_unix_socket(self, path, timeout=None, socket_options=None):
        return _DeadlineStream(self._backend.connect_unix_socket(path, _bounded(timeout, httpcore.ConnectTimeout),
                                                                 socket_options))

    def sleep(self, seconds: float) -> None:
        self._backend.sleep(seconds)


class DeadlineTransport(httpx.HTTPTransport):
    """``httpx.HTTPTransport`` (same arguments) whose pool connects through ``DeadlineBackend``.
    httpx does not take a network backend, so the pool's is replaced after construction; the
    slow-receiver tests fail if an httpx/httpcore upgrade moves it."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        pool = self._pool
        pool._network_backend = DeadlineBackend(pool._network_backend)
