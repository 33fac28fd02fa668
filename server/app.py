"""Build the MCP server over a MemoryEngine: tools, the flush prompt and instructions."""

from __future__ import annotations

import datetime as dt
import functools
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from importlib.metadata import PackageNotFoundError, version
from typing import Annotated, Any, Literal, ParamSpec, TypeVar
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from mcp.server.mcpserver import MCPServer
from mcp.server.subscriptions import InMemorySubscriptionBus
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS, Resource, ToolAnnotations
from pydantic import AliasChoices, Field

import prompts
from memory_core import AppendReceipt, Excerpt, MemoryEngine, SearchAnswer
from memory_core.errors import MemdexError

from . import resources

logger = logging.getLogger(__name__)

P = ParamSpec("P")
R = TypeVar("R")


def _tool_errors(fn: Callable[P, Awaitable[R]]) -> Callable[P, Awaitable[R]]:
    """Turn every failure into a tool error the model can read and act on, never a bare crash."""

    @functools.wraps(fn)
    async def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return await fn(*args, **kwargs)
        except MemdexError as exc:
            raise ToolError(str(exc)) from None
        except Exception as exc:
            logger.exception("%s failed unexpectedly", fn.__name__)
            raise ToolError(
                f"memdex failed internally ({type(exc).__name__}: {exc}); retry once, and if it persists "
                "ask the user to run `memdex index --force` and check the server log"
            ) from None

    return wrapper


def _version() -> str:
    try:
        return version("memdex")
    except PackageNotFoundError:  # running from a source tree without installing
        return "0"


class MemdexServer(MCPServer[MemoryEngine]):
    """An MCPServer whose resource list includes every memory file, as it is now."""

    def __init__(self, engine: MemoryEngine, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.engine = engine

    async def list_resources(self) -> list[Resource]:
        return [*await super().list_resources(), *await resources.file_resources(self.engine)]


def build_server(engine: MemoryEngine) -> MCPServer[MemoryEngine]:
    """An MCPServer whose lifespan keeps ``engine`` running while any session uses it."""
    settings = engine.settings

    @asynccontextmanager
    async def lifespan(_: MCPServer[MemoryEngine]) -> AsyncIterator[MemoryEngine]:
        async with engine:
            yield engine

    bus = InMemorySubscriptionBus()
    mcp = MemdexServer(
        engine,
        name="memdex",
        title="memdex memory",
        instructions=prompts.load("instructions.md"),
        version=_version(),
        lifespan=lifespan,
        log_level=settings.log_level,
        subscriptions=bus,
    )
    resources.register(mcp, engine, bus)

    @mcp.tool(
        name="memory_search",
        title="Search memory",
        description=prompts.load("tools/memory_search.md"),
        annotations=ToolAnnotations(read_only_hint=True, open_world_hint=False),
    )
    @_tool_errors
    async def memory_search(
        query: Annotated[str, Field(min_length=1, description="what to look for: words, a question or exact IDs")],
        max_results: Annotated[
            int,
            Field(ge=1, le=50, validation_alias=AliasChoices("maxResults", "max_results"),
                  description="how many results to return"),
        ] = settings.query.max_results,
        min_score: Annotated[
            float,
            Field(ge=0.0, le=1.0, validation_alias=AliasChoices("minScore", "min_score"),
                  description="drop hybrid results scoring below this (not applied to keyword-only results)"),
        ] = settings.query.min_score,
    ) -> SearchAnswer:
        return await engine.search(query, max_results, min_score)

    @mcp.tool(
        name="memory_get",
        title="Read memory lines",
        description=prompts.load("tools/memory_get.md"),
        annotations=ToolAnnotations(read_only_hint=True, open_world_hint=False),
    )
    @_tool_errors
    async def memory_get(
        path: Annotated[str, Field(min_length=1, description="a memory file path as memory_search returned it")],
        from_: Annotated[
            int, Field(ge=1, validation_alias=AliasChoices("from", "from_"), description="first line to read (1-based)")
        ] = 1,
        lines: Annotated[int | None, Field(ge=1, description="how many lines to read; omit to read to the end")] = None,
    ) -> Excerpt:
        return await engine.read(path, from_, lines)

    if not settings.read_only:

        @mcp.tool(
            name="memory_append",
            title="Append to memory",
            description=prompts.load("tools/memory_append.md"),
            annotations=ToolAnnotations(
                read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False
            ),
        )
        @_tool_errors
        async def memory_append(
            text: Annotated[str, Field(min_length=1, description="the note to store (Markdown, at most 16 KB)")],
            target: Annotated[
                Literal["daily", "long_term"],
                Field(description="'daily' = today's memory/YYYY-MM-DD.md; 'long_term' = MEMORY.md"),
            ] = "daily",
            heading: Annotated[str | None, Field(description="optional '## ' heading placed above the note")] = None,
        ) -> AppendReceipt:
            return await engine.append(text, target, heading)

    @mcp.prompt(
        name="memory_flush",
        title="Flush memory before compaction",
        description="Ask the model to store durable memories in today's daily log before the context is compacted.",
    )
    def memory_flush(
        date: Annotated[str | None, Field(description="the daily log's date, YYYY-MM-DD (default: today)")] = None,
        timezone: Annotated[str | None, Field(description="IANA time zone, e.g. Europe/Paris (default: server's)")] = None,
    ) -> str:
        zone = _zone(timezone) if timezone else settings.zone
        now = dt.datetime.now(dt.timezone.utc)
        day = _date(date) if date else now.astimezone(zone).date()
        return prompts.render_flush(day, now, zone)

    return mcp


def _zone(name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise MCPError(INVALID_PARAMS, f"unknown timezone {name!r}; use an IANA name such as 'America/New_York'") from None


def _date(text: str) -> dt.date:
    try:
        return dt.date.fromisoformat(text.strip())
    except ValueError:
        raise MCPError(INVALID_PARAMS, f"date must look like 2026-01-31 (got {text!r})") from None
