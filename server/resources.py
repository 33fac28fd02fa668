"""Memory files as MCP resources, and change notifications for the clients that follow them.

``memory://{+path}`` reads any Markdown memory file inside the workspace (the SDK's traversal
protection stays on, so files of extra folders outside the workspace, and session transcripts, are
reachable through the tools only);
``memory://status`` is the index status as JSON. When a memory file changes — through the watcher
or memory_append — subscribers hear about it in both protocol eras: ``subscriptions/listen``
streams (2026-07-28) through the subscription bus, and sessions that called the older
``resources/subscribe`` directly.
"""

from __future__ import annotations

import json
import logging
from collections import defaultdict
from typing import Any

import anyio
from mcp.server.context import ServerRequestContext
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceNotFoundError
from mcp.server.session import ServerSession
from mcp.server.subscriptions import ResourceUpdated, SubscriptionBus
from mcp.types import EmptyResult, Resource, SubscribeRequestParams, UnsubscribeRequestParams

from memory_core import MemdexError, MemoryEngine

logger = logging.getLogger(__name__)

SCHEME = "memory://"


def file_uri(rel: str, prefix: str = "") -> str:
    return f"{SCHEME}{prefix}{rel}"


class LegacySubscribers:
    """Sessions on pre-2026-07-28 protocol versions that subscribed to a URI."""

    def __init__(self) -> None:
        self._by_uri: dict[str, set[ServerSession]] = defaultdict(set)

    async def subscribe(self, ctx: ServerRequestContext[Any], params: SubscribeRequestParams) -> EmptyResult:
        self._by_uri[str(params.uri)].add(ctx.session)
        return EmptyResult()

    async def unsubscribe(self, ctx: ServerRequestContext[Any], params: UnsubscribeRequestParams) -> EmptyResult:
        self._by_uri[str(params.uri)].discard(ctx.session)
        return EmptyResult()

    async def notify(self, uri: str) -> None:
        for session in list(self._by_uri.get(uri, ())):
            try:
                await session.send_resource_updated(uri)
            except Exception:  # a closed session: forget it
                self._by_uri[uri].discard(session)


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
            return file.path.read_text(encoding="utf-8", errors="replace")

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
