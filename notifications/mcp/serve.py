"""Run an ``MCPServer`` until it is told to stop, so its lifespan (and the worker loops it owns)
always shuts down: on SIGTERM/SIGINT for both transports, and on stdin EOF for stdio."""
import asyncio
import logging
import os
import signal

import anyio
import uvicorn
from mcp.server.stdio import stdio_server

log = logging.getLogger("uns.mcp")

# Seconds uvicorn waits for open HTTP streams (an SSE GET can stay open) before the lifespan stops.
GRACEFUL_SHUTDOWN_SECONDS = 5


class _PipeLines:
    """Lines of a pipe read on the event loop, not in a thread.

    The SDK's default stdin reader blocks a worker thread in ``readline()``, and anyio cannot
    cancel a thread: after SIGTERM the server would stop its loops and then hang until the client
    wrote a line or closed stdin. This reader is cancellable, so a signal ends the process.
    """

    LIMIT = 16 * 1024 * 1024  # one JSON-RPC message per line; asyncio's default (64 KiB) is too small

    def __init__(self, reader: asyncio.StreamReader, transport: asyncio.ReadTransport):
        self._reader = reader
        self._transport = transport

    @classmethod
    async def open(cls, fd: int = 0) -> "_PipeLines | None":
        """Lines of ``fd``, or None when it is not a pipe, socket or terminal (a regular file)."""
        reader = asyncio.StreamReader(limit=cls.LIMIT)
        pipe = os.fdopen(os.dup(fd), "rb", buffering=0)
        try:
            transport, _ = await asyncio.get_running_loop().connect_read_pipe(
                lambda: asyncio.StreamReaderProtocol(reader), pipe)
        except ValueError:
            pipe.close()
            return None
        return cls(reader, transport)

    def close(self) -> None:
        self._transport.close()

    def __aiter__(self):
        return self

    async def __anext__(self) -> str:
        line = await self._reader.readline()
        if not line:
            raise StopAsyncIteration
        return line.decode("utf-8", errors="replace")


async def _serve_stdio(server) -> None:
    async with anyio.create_task_group() as tg:

        async def stop_on_signal():
            with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
                async for signum in signals:
                    log.info("mcp server got %s; shutting down", signal.Signals(signum).name)
                    tg.cancel_scope.cancel()
                    return

        tg.start_soon(stop_on_signal)
        # MCPServer.run_stdio_async, with a cancellable stdin (the SDK still claims stdout, so
        # stray prints go to stderr, not the wire).
        lowlevel = server._lowlevel_server
        stdin = await _PipeLines.open()
        try:
            async with stdio_server(stdin=stdin) as (read_stream, write_stream):
                await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())
        finally:
            if stdin is not None:
                stdin.close()
        tg.cancel_scope.cancel()  # the client closed stdin


def run_stdio(server) -> None:
    """Serve over stdin/stdout until stdin closes or a signal arrives."""
    anyio.run(_serve_stdio, server, backend="asyncio")


def run_http(server, *, host: str, port: int) -> None:
    """Serve streamable HTTP at ``http://host:port/mcp`` with uvicorn, which maps SIGTERM/SIGINT to
    a graceful shutdown that runs the app's lifespan exit."""
    app = server.streamable_http_app(host=host)
    config = uvicorn.Config(app, host=host, port=port, lifespan="on", log_level="info",
                            timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_SECONDS)
    # uvicorn re-raises the signal it handled once its graceful shutdown (lifespan exit included)
    # is over, so the process would die by SIGTERM after a clean stop. Handlers that ignore the
    # re-raise let the command return and exit 0.
    previous = {sig: signal.signal(sig, _already_handled) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        uvicorn.Server(config).run()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _already_handled(signum, frame) -> None:
    log.debug("mcp server: %s after graceful shutdown", signal.Signals(signum).name)
