"""Build the MCP server over one or several MemoryEngines: tools, resources, the flush prompt.

With several engines (one per agent) every tool takes an optional ``agent`` naming whose memory it
works on (default: the first); each engine keeps its own workspace, index and path policy, so no
call can reach another agent's files. Annotations here are evaluated at definition time on purpose:
the ``agent`` argument's allowed names are only known when the server is built.
"""

import datetime as dt
import functools
import inspect
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from importlib.metadata import PackageNotFoundError, version
from typing import Annotated, Any, Literal, ParamSpec, TypeVar
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.server.subscriptions import InMemorySubscriptionBus
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS, CallToolResult, InputRequiredResult, Resource, TextContent, ToolAnnotations
from pydantic import AliasChoices, Field, ValidationError

from memdex import prompts
from memdex.memory_core import (
    AppendReceipt,
    EditReceipt,
    Excerpt,
    MemoryEngine,
    SearchAnswer,
    SearchFilter,
    as_memdex_error,
    shown,
)
from memdex.memory_core.limits import (
    MAX_ANSWER_CHARS,
    MAX_APPEND_BYTES,
    MAX_EDIT_BYTES,
    MAX_HEADING_CHARS,
    MAX_PATH_CHARS,
    MAX_QUERY_CHARS,
    MAX_RESULTS,
    MIN_ANSWER_CHARS,
)

from . import resources
from .arguments import explain_refusal

logger = logging.getLogger(__name__)

P = ParamSpec("P")
R = TypeVar("R")


def _compact(answer: SearchAnswer) -> CallToolResult:
    """The answer as structured content and, for clients that read text, as compact JSON.

    A search answer is mostly snippets and goes out twice (data and text); the SDK's own text is
    indented JSON, a quarter larger. Hosts refuse oversized tool results, so the text is kept tight.
    """
    text = answer.model_dump_json(by_alias=True, exclude_none=True)
    return CallToolResult(
        content=[TextContent(type="text", text=text)], structured_content=answer.model_dump(mode="json", by_alias=True)
    )


def _tool_errors(fn: Callable[P, Awaitable[R]]) -> Callable[P, Awaitable[R]]:
    """Turn every failure into a tool error the model can read and act on, never a bare crash.

    memdex errors, and the SQLite and OS errors memdex can explain, become their message; anything
    else is a bug, logged with its traceback and reported as an internal failure.
    """

    @functools.wraps(fn)
    async def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return await fn(*args, **kwargs)
        except Exception as exc:
            error = as_memdex_error(exc)
            if error is None:
                logger.exception("%s failed unexpectedly", fn.__name__)
                raise ToolError(
                    f"memdex failed internally ({type(exc).__name__}: {exc}); retry once, and if it persists "
                    "ask the user to run `memdex index --force` and check the server log"
                ) from None
            if error is not exc:
                logger.warning("%s: %s (%s: %s)", fn.__name__, error, type(exc).__name__, exc)
            raise ToolError(str(error)) from None

    return wrapper


@asynccontextmanager
async def running(engines: Mapping[str, MemoryEngine]) -> AsyncIterator[Mapping[str, MemoryEngine]]:
    """Keep the engines open inside the block."""
    async with AsyncExitStack() as stack:
        for engine in engines.values():
            await stack.enter_async_context(engine)
        yield engines


def _version() -> str:
    try:
        return version("memdex")
    except PackageNotFoundError:  # running from a source tree without installing
        return "0"


class MemdexServer(MCPServer[Any]):
    """An MCPServer whose resource list includes every memory file, as it is now, whose refusals of tool
    arguments are one line each, like memdex's own errors, and whose withheld tools say why they are off."""

    def __init__(self, engines: Mapping[str, MemoryEngine], prefixes: Mapping[str, str], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.engines = engines
        self.prefixes = prefixes
        self.withheld: dict[str, str] = {}  # a tool not offered here, and the reason a call to it gets

    async def list_resources(self) -> list[Resource]:
        listed = await super().list_resources()
        for name, engine in self.engines.items():
            listed += await resources.file_resources(engine, self.prefixes[name])
        return listed

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        if name in self.withheld:  # a client that listed tools elsewhere (or a prompt) may still call it
            raise ToolError(f"Error executing tool {name}: {self.withheld[name]}")
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:  # the SDK checked the arguments against the schema: its refusal is a pydantic dump
            refused = exc.__cause__
            if isinstance(exc, UnexpectedToolError) or not isinstance(refused, ValidationError):
                raise
            schema = next(tool.input_schema for tool in await self.list_tools() if tool.name == name)
            raise ToolError(f"Error executing tool {name}: {explain_refusal(schema, refused)}") from refused


def _client(ctx: Context[Any, Any]) -> str:
    """The connected client's name (its initialize clientInfo), for the history."""
    try:
        params = ctx.session.client_params
    except ValueError:  # no request: an in-process call
        return "unknown"
    return params.client_info.name if params is not None else "unknown"


def _without(fn: Callable[..., Any], parameter: str) -> Callable[..., Any]:
    """``fn`` as the SDK sees it, minus one optional parameter (its default then always applies)."""
    signature = inspect.signature(fn)
    fn.__signature__ = signature.replace(  # type: ignore[attr-defined]
        parameters=[p for p in signature.parameters.values() if p.name != parameter]
    )
    return fn


def build_server(engines: MemoryEngine | Mapping[str, MemoryEngine]) -> MCPServer[Any]:
    """An MCPServer whose lifespan keeps the engines running while any session uses them."""
    if isinstance(engines, MemoryEngine):
        engines = {"default": engines}
    names = list(engines)
    several = len(names) > 1
    first = engines[names[0]]
    settings = first.settings
    AgentName = Literal[tuple(names)]  # type: ignore[valid-type]  # noqa: N806 - a type built at run time

    def pick(agent: str | None) -> MemoryEngine:
        return engines[agent or names[0]]

    def per_agent(fn: Callable[..., Any]) -> Callable[..., Any]:
        return fn if several else _without(fn, "agent")

    agent_field = Field(description=f"whose memory: one of {', '.join(names)} (default {names[0]})")

    instructions = prompts.load("instructions.md")
    if several:
        instructions += (
            f"\n\nThis server holds the separate memories of several agents: {', '.join(names)}. "
            f"Pass agent=<name> to every tool (default {names[0]}); one agent's notes are never visible to another."
        )
    prefixes = {name: f"{name}/" if several else "" for name in names}
    bus = InMemorySubscriptionBus()
    mcp = MemdexServer(
        engines,
        prefixes,
        name="memdex",
        title="memdex memory",
        instructions=instructions,
        version=_version(),
        lifespan=lambda _: running(engines),
        log_level=settings.log_level,
        subscriptions=bus,
    )
    legacy = resources.register_subscriptions(mcp)
    for name, engine in engines.items():
        resources.register(mcp, engine, bus, legacy, prefixes[name])

    @mcp.tool(
        name="memory_search",
        title="Search memory",
        description=prompts.load("tools/memory_search.md"),
        annotations=ToolAnnotations(read_only_hint=True, open_world_hint=False),
    )
    @per_agent
    @_tool_errors
    async def memory_search(
        query: Annotated[
            str,
            Field(min_length=1, max_length=MAX_QUERY_CHARS, description="what to look for: words, a question or exact IDs"),
        ],
        max_results: Annotated[
            int,
            Field(ge=1, le=MAX_RESULTS, validation_alias=AliasChoices("maxResults", "max_results"),
                  description="how many results to return"),
        ] = settings.query.max_results,
        min_score: Annotated[
            float,
            Field(ge=0.0, le=1.0, validation_alias=AliasChoices("minScore", "min_score"),
                  description="drop results whose vector and keyword scores are both below this (keyword-only answers are not cut)"),
        ] = settings.query.min_score,
        max_chars: Annotated[
            int,
            Field(ge=MIN_ANSWER_CHARS, le=MAX_ANSWER_CHARS, validation_alias=AliasChoices("maxChars", "max_chars"),
                  description="the snippets' total size in characters, best result first"),
        ] = settings.query.max_chars,
        after: Annotated[
            str | None, Field(description="only daily logs dated on or after this day (YYYY-MM-DD)")
        ] = None,
        before: Annotated[
            str | None, Field(description="only daily logs dated on or before this day (YYYY-MM-DD)")
        ] = None,
        path_prefix: Annotated[
            str | None,
            Field(max_length=MAX_PATH_CHARS, validation_alias=AliasChoices("pathPrefix", "path_prefix"),
                  description="only files under this folder or this file, e.g. memory/projects"),
        ] = None,
        source: Annotated[
            Literal["memory", "sessions"] | None,
            Field(description="only notes ('memory') or only session transcripts ('sessions')"),
        ] = None,
        explain: Annotated[
            bool, Field(description="add to each result why it ranks there and how its lines were chosen")
        ] = False,
        agent: Annotated[AgentName | None, agent_field] = None,
    ) -> Annotated[CallToolResult, SearchAnswer]:
        where = SearchFilter.parse(after, before, path_prefix, source)
        answer = await pick(agent).search(
            query, max_results, min_score, max_chars=max_chars, where=where, explain=explain
        )
        return _compact(answer)

    @mcp.tool(
        name="memory_get",
        title="Read memory lines",
        description=prompts.memory_get_text(settings.replica),
        annotations=ToolAnnotations(read_only_hint=True, open_world_hint=False),
    )
    @per_agent
    @_tool_errors
    async def memory_get(
        path: Annotated[
            str,
            Field(min_length=1, max_length=MAX_PATH_CHARS, description="a memory file path as memory_search returned it"),
        ],
        from_: Annotated[
            int, Field(ge=1, validation_alias=AliasChoices("from", "from_"), description="first line to read (1-based)")
        ] = 1,
        lines: Annotated[int | None, Field(ge=1, description="how many lines to read; omit to read to the end")] = None,
        agent: Annotated[AgentName | None, agent_field] = None,
    ) -> Excerpt:
        return await pick(agent).read(path, from_, lines)

    if refusal := first.write_refusal("memory_append"):
        mcp.withheld["memory_append"] = refusal
    else:

        @mcp.tool(
            name="memory_append",
            title="Append to memory",
            description=prompts.load("tools/memory_append.md"),
            annotations=ToolAnnotations(  # idempotent: a repeat of a recent entry writes nothing
                read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False
            ),
        )
        @per_agent
        @_tool_errors
        async def memory_append(
            text: Annotated[str, Field(min_length=1, description=f"the note to store (Markdown, at most {MAX_APPEND_BYTES // 1024} KB)")],
            target: Annotated[
                Literal["daily", "long_term"],
                Field(description="'daily' = today's memory/YYYY-MM-DD.md; 'long_term' = MEMORY.md"),
            ] = "daily",
            heading: Annotated[
                str | None,
                Field(description=f"optional '## ' heading placed above the note (one line, at most {MAX_HEADING_CHARS} characters)"),
            ] = None,
            agent: Annotated[AgentName | None, agent_field] = None,
            ctx: Context[Any, Any] | None = None,
        ) -> AppendReceipt:
            return await pick(agent).append(text, target, heading, client=_client(ctx) if ctx else "unknown")

    if refusal := first.write_refusal("memory_edit"):
        mcp.withheld["memory_edit"] = refusal
    else:

        @mcp.tool(
            name="memory_edit",
            title="Edit memory",
            description=prompts.load("tools/memory_edit.md"),
            annotations=ToolAnnotations(  # it replaces text, and a repeat finds the text gone
                read_only_hint=False, destructive_hint=True, idempotent_hint=False, open_world_hint=False
            ),
        )
        @per_agent
        @_tool_errors
        async def memory_edit(
            path: Annotated[
                str,
                Field(min_length=1, max_length=MAX_PATH_CHARS, description="a memory file path as memory_search returned it"),
            ],
            old_text: Annotated[
                str,
                Field(min_length=1, validation_alias=AliasChoices("oldText", "old_text"),
                      description=f"the exact text to replace, as memory_get shows it (at most {MAX_EDIT_BYTES // 1024} KB)"),
            ],
            new_text: Annotated[
                str,
                Field(validation_alias=AliasChoices("newText", "new_text"),
                      description="the text to put in its place; empty deletes it"),
            ] = "",
            expected_hash: Annotated[
                str | None,
                Field(max_length=64, validation_alias=AliasChoices("expectedHash", "expected_hash"),
                      description="the file's hash as memory_get or memory_search returned it; refused if it changed since"),
            ] = None,
            agent: Annotated[AgentName | None, agent_field] = None,
            ctx: Context[Any, Any] | None = None,
        ) -> EditReceipt:
            client = _client(ctx) if ctx else "unknown"
            return await pick(agent).edit(path, old_text, new_text, expected_hash, client=client, by_agent=True)

    if not first.write_refusal("memory_consolidate"):

        @mcp.prompt(
            name="memory_consolidate",
            title="Consolidate daily logs into MEMORY.md",
            description="Give the model the daily logs not yet consolidated and MEMORY.md with its hash, and ask it to "
            "promote durable facts, replace stale ones with memory_edit (newest wins) and keep MEMORY.md short.",
        )
        @per_agent
        async def memory_consolidate(agent: Annotated[AgentName | None, agent_field] = None) -> str:
            engine = pick(agent)
            try:
                material = await engine.consolidation()
            except Exception as exc:
                error = as_memdex_error(exc)
                if error is None:
                    raise
                raise MCPError(INVALID_PARAMS, str(error)) from None
            return prompts.render_consolidate(material, dt.datetime.now(dt.UTC), engine.settings.zone)

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
        now = dt.datetime.now(dt.UTC)
        day = _date(date) if date else now.astimezone(zone).date()
        return prompts.render_flush(day, now, zone)

    return mcp


def _zone(name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise MCPError(INVALID_PARAMS, f"unknown timezone {shown(name)}; use an IANA name such as 'America/New_York'") from None


def _date(text: str) -> dt.date:
    try:
        return dt.date.fromisoformat(text.strip())
    except ValueError:
        raise MCPError(INVALID_PARAMS, f"date must look like 2026-01-31 (got {shown(text)})") from None
