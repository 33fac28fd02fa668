"""Run the MCP server on stdio, legacy SSE or Streamable HTTP."""

from __future__ import annotations

import hmac
import json
import logging
from collections.abc import Mapping
from contextlib import AsyncExitStack

import uvicorn
from starlette.types import ASGIApp, Receive, Scope, Send

from memory_core import MemoryEngine, Settings

from .app import build_server

logger = logging.getLogger(__name__)


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
    """Serve the engines on the configured transport until the client or a signal stops it."""
    transport = settings.server.transport
    if transport == "stdio":
        await build_server(engines).run_stdio_async()
        return
    host, port = settings.server.host, settings.server.port
    if settings.auth_token is None and host not in ("127.0.0.1", "localhost", "::1"):
        logger.warning("serving on %s without --auth-token: anyone who can reach it can read this memory", host)
    config = uvicorn.Config(
        http_app(settings, engines), host=host, port=port, log_level=settings.log_level.lower(), lifespan="on"
    )
    path = "/sse" if transport == "sse" else "/mcp"
    logger.info("memdex serving %s on http://%s:%d%s (agents: %s)", transport, host, port, path, ", ".join(engines))
    async with AsyncExitStack() as stack:  # one engine per agent for every connection (SSE enters the lifespan per connection)
        for engine in engines.values():
            await stack.enter_async_context(engine)
        await uvicorn.Server(config).serve()
