"""Run the MCP server on stdio, legacy SSE or Streamable HTTP, until the client leaves or a signal comes."""

from __future__ import annotations

import contextlib
import hmac
import json
import logging
import signal
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
from starlette.types import ASGIApp, Receive, Scope, Send

from memdex.memory_core import MemoryEngine, Settings

from .app import build_server, running

logger = logging.getLogger(__name__)

GRACEFUL_SHUTDOWN = 1  # seconds open HTTP requests and streams get to finish after a signal


class BearerAuth:
    """ASGI middleware: every HTTP request must carry ``Authorization: Bearer <token>``."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self.expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            given = dict(scope["headers"]).get(b"authorization", b"")
            if not hmac.compare_digest(given, self.expected):
                body = json.dumps({"error": "unauthorized", "error_description": "missing or wrong bearer token"})
                await send(
                    {
                        "type": "http.response.start",
                        "status": 401,
                        "headers": [
                            (b"content-type", b"application/json"),
                            (b"www-authenticate", b'Bearer realm="memdex"'),
                        ],
                    }
                )
                await send({"type": "http.response.body", "body": body.encode()})
                return
        await self.app(scope, receive, send)


def http_app(settings: Settings, engines: Mapping[str, MemoryEngine]) -> ASGIApp:
    """The ASGI app for ``sse`` or ``http``, with the SDK's Host/Origin guard and optional token."""
    mcp = build_server(engines)
    host = settings.server.host
    app: ASGIApp = mcp.sse_app(host=host) if settings.server.transport == "sse" else mcp.streamable_http_app(host=host)
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
            await tg.start(_stop_on_signal, server.stop, tg.cancel_scope)
            # The engines stay open across connections (SSE enters the lifespan once per connection).
            async with running(engines):
                await server.serve()
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
    has stopped, killing the process before the engines close. :func:`serve` handles signals."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield

    def stop(self) -> None:
        """Begin uvicorn's graceful shutdown."""
        self.should_exit = True


def _http_server(settings: Settings, engines: Mapping[str, MemoryEngine]) -> _Uvicorn:
    transport, host, port = settings.server.transport, settings.server.host, settings.server.port
    if settings.auth_token is None and host not in ("127.0.0.1", "localhost", "::1"):
        logger.warning("serving on %s without --auth-token: anyone who can reach it can read this memory", host)
    config = uvicorn.Config(
        http_app(settings, engines),
        host=host,
        port=port,
        log_level=settings.log_level.lower(),
        lifespan="on",
        timeout_graceful_shutdown=GRACEFUL_SHUTDOWN,
    )
    path = "/sse" if transport == "sse" else "/mcp"
    logger.info("memdex serving %s on http://%s:%d%s (agents: %s)", transport, host, port, path, ", ".join(engines))
    return _Uvicorn(config)


async def _serve_stdio(mcp: MCPServer[Any], stdin: _Stdin) -> None:
    """The SDK's stdio loop, its lifespan opening and closing the engines, reading ``stdin``."""
    lowlevel = mcp._lowlevel_server  # noqa: SLF001 - MCPServer.run_stdio_async takes no stdin
    async with stdio_server(stdin=stdin.lines) as (read, write):  # type: ignore[arg-type]  # it only iterates lines
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
