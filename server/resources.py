"""Memory files as MCP resources, and change notifications for the clients that follow them.

``memory://{+path}`` reads any Markdown memory file inside the workspace (the SDK's traversal
protection stays on, so files of extra folders outside the workspace, and session transcripts, are
reachable through the tools only);
``memory://status`` is the index status as JSON. When a sync indexes a changed memory file (an
append, a watcher event, any sync), subscribers hear about it in both protocol eras:
``subscriptions/listen`` streams (2026-07-28) through the subscription bus, and connections that
called the older ``resources/subscribe`` directly.
"""

from __future__ import annotations

import json
import logging
from collections import defaultdict
from typing import Any

import anyio
from mcp.server.connection import Connection
from mcp.server.context import ServerRequestContext
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceNotFoundError
from mcp.server.subscriptions import ResourceUpdated, SubscriptionBus
from mcp.types import EmptyResult, Resource, SubscribeRequestParams, UnsubscribeRequestParams

from memdex.memory_core import MemdexError, MemoryEngine, decode_text

logger = logging.getLogger(__name__)

SCHEME = "memory://"
SEND_TIMEOUT = 2.0  # seconds a client may take to accept one notification before its subscriptions end
_STATE_KEY = "memdex.legacy_subscriptions"


def file_uri(rel: str, prefix: str = "") -> str:
    return f"{SCHEME}{prefix}{rel}"


class LegacySubscribers:
    """Pre-2026-07-28 ``resources/subscribe`` subscriptions, one set of URIs per client connection.

    The SDK builds a new ``ServerSession`` for every request, so subscriptions are kept on the
    connection behind it: subscribing twice is one subscription, unsubscribing ends it, and closing
    the connection drops it. A client that does not take a notification within ``SEND_TIMEOUT``
    loses its subscriptions instead of holding up everyone else's notifications.
    """

    def __init__(self) -> None:
        self._by_uri: dict[str, set[Connection]] = defaultdict(set)

    async def subscribe(self, ctx: ServerRequestContext[Any], params: SubscribeRequestParams) -> EmptyResult:
        connection = _connection(ctx)
        if _STATE_KEY not in connection.state:  # first subscription: forget it all when the client goes
            connection.state[_STATE_KEY] = True
            connection.exit_stack.callback(self.forget, connection)
        self._by_uri[str(params.uri)].add(connection)
        return EmptyResult()

    async def unsubscribe(self, ctx: ServerRequestContext[Any], params: UnsubscribeRequestParams) -> EmptyResult:
        self._by_uri[str(params.uri)].discard(_connection(ctx))
        return EmptyResult()

    def forget(self, connection: Connection) -> None:
        """End every subscription of one connection."""
        for connections in self._by_uri.values():
            connections.discard(connection)

    async def notify(self, uri: str) -> None:
        """Tell every connection subscribed to ``uri``, all at once, each within ``SEND_TIMEOUT``."""
        async with anyio.create_task_group() as tg:
            for connection in list(self._by_uri.get(uri, ())):
                tg.start_soon(self._send, connection, uri)

    async def _send(self, connection: Connection, uri: str) -> None:
        with anyio.move_on_after(SEND_TIMEOUT) as scope:
            await connection.send_resource_updated(uri)  # a closed stream is dropped quietly by the SDK
        if scope.cancelled_caught:
            logger.warning("a client took over %.0fs to accept a notification; ending its subscriptions", SEND_TIMEOUT)
            self.forget(connection)


def _connection(ctx: ServerRequestContext[Any]) -> Connection:
    """The client connection a request came on, which outlives the request's ``ServerSession``."""
    return ctx.session._connection  # noqa: SLF001 - ServerRequestContext exposes no public connection handle


async def file_resources(engine: MemoryEngine, prefix: str = "") -> list[Resource]:
    """A resource entry for every memory file inside the workspace."""
    files = await anyio.to_thread.run_sync(engine.workspace.discover)
    return [
        Resource(uri=file_uri(f.rel, prefix), name=f"{prefix}{f.rel}", mime_type="text/markdown")
        for f in files
        if f.source == "memory" and not f.rel.startswith("../")
    ]


def register_subscriptions(mcp: MCPServer[Any]) -> LegacySubscribers:
    """Serve the pre-2026-07-28 resources/subscribe and resources/unsubscribe requests."""
    legacy = LegacySubscribers()
    lowlevel = mcp._lowlevel_server  # noqa: SLF001 - MCPServer has no public hook for resources/subscribe
    lowlevel.add_request_handler("resources/subscribe", SubscribeRequestParams, legacy.subscribe)
    lowlevel.add_request_handler("resources/unsubscribe", UnsubscribeRequestParams, legacy.unsubscribe)
    return legacy


def register(
    mcp: MCPServer[Any], engine: MemoryEngine, bus: SubscriptionBus, legacy: LegacySubscribers, prefix: str = ""
) -> None:
    """Add one engine's resources (URIs start with ``memory://<prefix>``) and publish its changes."""
    status_uri = f"{SCHEME}{prefix}status"

    @mcp.resource(
        f"{SCHEME}{prefix}{{+path}}",
        name=f"{prefix}memory-file",
        title="Memory file",
        description="A memory file (MEMORY.md, memory/**/*.md) as it is on disk.",
        mime_type="text/markdown",
    )
    async def memory_file(path: str) -> str:
        def read() -> str:
            file = engine.workspace.resolve(path)
            if file.source != "memory":  # transcripts are read through memory_get, as readable excerpts
                raise ResourceNotFoundError(f"{path} is a session transcript; read it with memory_get")
            return decode_text(file.read_bytes())  # never through a symlink

        try:
            return await anyio.to_thread.run_sync(read)
        except MemdexError as exc:
            raise ResourceNotFoundError(str(exc)) from None

    @mcp.resource(
        status_uri,
        name=f"{prefix}memory-status",
        title="Memory index status",
        description="Files, chunks, provider, search mode, last sync and errors of the memory index.",
        mime_type="application/json",
    )
    async def memory_status() -> str:
        status = await engine.status()
        return json.dumps(
            {"workspace": str(engine.workspace.root), **status.model_dump(mode="json", by_alias=True)}, indent=2
        )

    async def publish(paths: list[str]) -> None:
        for uri in [status_uri, *(file_uri(rel, prefix) for rel in paths)]:
            await bus.publish(ResourceUpdated(uri=uri))
            await legacy.notify(uri)

    engine.add_change_listener(publish)
