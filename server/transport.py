"""Run the MCP server on stdio, legacy SSE or Streamable HTTP, until the client leaves or a signal comes."""

from __future__ import annotations

import contextlib
import errno
import logging
import signal
import socket
import sys
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import anyio
import anyio.lowlevel
import uvicorn
from anyio.abc import TaskStatus
from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server
from starlette.types import ASGIApp

from memdex.memory_core import ConfigError, MemoryEngine, Settings

from .app import build_server, running
from .http_guard import BearerAuth, bracketed, check_exposure, transport_security
from .stdio_guard import AnsweredLines

logger = logging.getLogger(__name__)

GRACEFUL_SHUTDOWN = 1  # seconds open HTTP requests and streams get to finish after a signal


def http_app(settings: Settings, engines: Mapping[str, MemoryEngine]) -> ASGIApp:
    """The ASGI app for ``sse`` or ``http``, behind the Host/Origin guard and the optional token."""
    mcp = build_server(engines)
    guard = transport_security(settings.server)
    app: ASGIApp = (
        mcp.sse_app(transport_security=guard)
        if settings.server.transport == "sse"
        else mcp.streamable_http_app(
            transport_security=guard, stateless_http=settings.server.stateless, json_response=settings.server.stateless
        )
    )
    if settings.auth_token is not None:
        app = BearerAuth(app, settings.auth_token.get_secret_value())
    return app


async def serve(settings: Settings, engines: Mapping[str, MemoryEngine]) -> None:
    """Serve the engines on the configured transport until the client leaves or a signal comes.

    SIGINT or SIGTERM stops the server the way a client leaving does (stdin ends; HTTP requests and
    streams get ``GRACEFUL_SHUTDOWN`` seconds), so the engines close normally: every index is closed
    and SQLite removes its -wal and -shm files, and this returns. A second signal cancels at once.
    """
    async with anyio.create_task_group() as tg:
        if settings.server.transport == "stdio":
            with _Stdin() as stdin:
                await tg.start(_stop_on_signal, stdin.close, tg.cancel_scope)
                await _serve_stdio(build_server(engines), stdin)
        else:
            server = _http_server(settings, engines)
            sock = _listen(settings.server.host, settings.server.port)
            await tg.start(_stop_on_signal, server.stop, tg.cancel_scope)
            # The engines stay open across connections (SSE enters the lifespan once per connection).
            with sock:
                async with running(engines):
                    await server.serve(sockets=[sock])
        tg.cancel_scope.cancel()  # stop listening for signals


async def _stop_on_signal(stop: Callable[[], None], scope: anyio.CancelScope, *, task_status: TaskStatus[None]) -> None:
    """Call ``stop`` on the first SIGINT or SIGTERM, cancel ``scope`` on the next."""
    if sys.platform == "win32":  # Windows event loops take no signal handlers; Ctrl+C raises KeyboardInterrupt
        task_status.started()
        return
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        task_status.started()
        async for signum in signals:
            logger.info("memdex: %s received, shutting down", signal.Signals(signum).name)
            stop()
            stop = scope.cancel


class _Uvicorn(uvicorn.Server):
    """uvicorn without its own SIGINT/SIGTERM handlers: they would re-raise the signal once uvicorn
    has stopped, killing the process before the engines close. :func:`serve` handles signals.
    ``serving`` is logged once it listens."""

    def __init__(self, config: uvicorn.Config, serving: str) -> None:
        super().__init__(config)
        self.serving = serving

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        if self.started:
            logger.info("%s", self.serving)

    def stop(self) -> None:
        """Begin uvicorn's graceful shutdown."""
        self.should_exit = True


def _http_server(settings: Settings, engines: Mapping[str, MemoryEngine]) -> _Uvicorn:
    check_exposure(settings)
    transport, host, port = settings.server.transport, settings.server.host, settings.server.port
    if transport == "sse":
        logger.warning(
            "the HTTP+SSE transport is deprecated by the MCP protocol (since 2025-03-26); serve --transport http "
            "(Streamable HTTP, at /mcp) unless a client can only speak SSE"
        )
    config = uvicorn.Config(
        http_app(settings, engines),
        log_config=None,  # uvicorn's own config sends its access log to stdout; this way it goes to stderr
        log_level=settings.log_level.lower(),
        lifespan="on",
        timeout_graceful_shutdown=GRACEFUL_SHUTDOWN,
    )
    path = "/sse" if transport == "sse" else "/mcp"
    url = f"http://{bracketed(host)}:{port}{path}"
    return _Uvicorn(config, f"memdex serving {transport} on {url} (agents: {', '.join(engines)})")


def _listen(host: str, port: int) -> socket.socket:
    """A socket bound to ``host:port``, or a one-line error saying what to pass instead."""
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn does: restart despite TIME_WAIT
    try:
        sock.bind((host.strip("[]"), port))
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise ConfigError(f"port {port} is in use; pass --port with a free one (or stop what uses it)") from None
        raise ConfigError(
            f"cannot listen on {host}:{port} ({exc.strerror or exc}); pass --host with an address of this machine"
        ) from None
    return sock


async def _serve_stdio(mcp: MCPServer[Any], stdin: _Stdin) -> None:
    """The SDK's stdio loop, its lifespan opening and closing the engines, reading ``stdin``."""
    lowlevel = mcp._lowlevel_server  # noqa: SLF001 - MCPServer.run_stdio_async takes no stdin
    lines = AnsweredLines(stdin.lines)  # a line the SDK would drop unanswered is answered with an error
    async with stdio_server(stdin=lines) as (read, write):  # type: ignore[arg-type]  # it only iterates lines
        lines.answer_on(write)
        await lowlevel.run(read, write, lowlevel.create_initialization_options())


class _Stdin:
    """The lines of stdin, read on a daemon thread; ``close`` ends them early, like a client closing stdin.

    The SDK reads stdin on an AnyIO worker thread, which a cancellation must wait for and which
    keeps the process alive at exit until the client writes or closes stdin. A daemon thread
    blocked on the read does neither.
    """

    def __init__(self) -> None:
        self._send, self.lines = anyio.create_memory_object_stream[str]()
        self._token = anyio.lowlevel.current_token()
        threading.Thread(target=self._pump, name="memdex-stdin", daemon=True).start()

    def close(self) -> None:
        """End the lines now, as if the client had closed stdin."""
        self._send.close()

    def __enter__(self) -> _Stdin:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._send.close()
        self.lines.close()  # a line the thread is still handing over is dropped, and the thread ends

    def _pump(self) -> None:
        try:
            for line in open(0, "rb", closefd=False):  # noqa: SIM115 - left open: this thread may still block on it
                anyio.from_thread.run(self._send.send, line.decode("utf-8", errors="replace"), token=self._token)
            anyio.from_thread.run_sync(self.close, token=self._token)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, RuntimeError):
            pass  # the server stopped reading, or its event loop has ended
