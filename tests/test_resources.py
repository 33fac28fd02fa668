"""Memory files as MCP resources, and change notifications in both protocol eras."""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from memory_core import MemoryEngine
from server import build_server


@pytest.fixture
def notes(workspace: Path, write: Callable[[str, str], Path]) -> Path:
    write("MEMORY.md", "# Memory\n\n- Keeps bees.\n")
    write("memory/2026-04-01.md", "# 2026-04-01\n\n- Harvested honey.\n")
    write("notes.md", "# Not memory\n")
    return workspace


def running(make_engine: Callable[..., MemoryEngine]) -> MemoryEngine:
    return make_engine(background_sync=True, watch={"debounce_ms": 200})


async def test_resources_list_every_memory_file_and_the_status(
    notes: Path, make_engine: Callable[..., MemoryEngine]
) -> None:
    """resources/list shows each memory file (and nothing else) plus memory://status; the template is listed."""
    async with Client(build_server(running(make_engine))) as client:
        listed = {str(r.uri): r for r in (await client.list_resources()).resources}
        templates = [t.uri_template for t in (await client.list_resource_templates()).resource_templates]
    assert set(listed) == {"memory://MEMORY.md", "memory://memory/2026-04-01.md", "memory://status"}
    assert listed["memory://MEMORY.md"].mime_type == "text/markdown"
    assert templates == ["memory://{+path}"]


async def test_a_memory_file_reads_as_markdown(notes: Path, make_engine: Callable[..., MemoryEngine]) -> None:
    async with Client(build_server(running(make_engine))) as client:
        result = await client.read_resource("memory://memory/2026-04-01.md")
    (content,) = result.contents
    assert content.text == "# 2026-04-01\n\n- Harvested honey.\n"
    assert content.mime_type == "text/markdown"


@pytest.mark.parametrize("uri", ["memory://notes.md", "memory://../outside.md", "memory://memory/missing.md"])
async def test_non_memory_or_missing_files_are_not_resources(
    notes: Path, make_engine: Callable[..., MemoryEngine], uri: str
) -> None:
    """Files outside the memory set, traversal and missing files are refused."""
    async with Client(build_server(running(make_engine))) as client:
        with pytest.raises(MCPError):
            await client.read_resource(uri)


async def test_status_resource_reports_the_index(notes: Path, make_engine: Callable[..., MemoryEngine]) -> None:
    engine = running(make_engine)
    async with Client(build_server(engine)) as client:
        await engine.sync()
        (content,) = (await client.read_resource("memory://status")).contents
    status = json.loads(content.text)
    assert (status["files"], status["chunks"], status["mode"], status["state"]) == (2, 2, "keyword", "ready")
    assert status["lastSync"] and status["workspace"] == str(notes)


async def test_listen_streams_a_resource_update_when_a_file_changes(
    notes: Path, make_engine: Callable[..., MemoryEngine], write: Callable[[str, str], Path]
) -> None:
    """2026-07-28 clients: a subscriptions/listen stream gets an event when the watched file is edited."""
    uri = "memory://memory/2026-04-01.md"
    engine = running(make_engine)
    async with Client(build_server(engine)) as client:
        await engine.sync()
        async with client.listen(resource_subscriptions=[uri]) as subscription:
            write("memory/2026-04-01.md", "# 2026-04-01\n\n- Harvested honey. Sold ten jars.\n")
            with anyio.fail_after(10):
                event = await subscription.__anext__()
    assert getattr(event, "uri", None) == uri


async def test_legacy_subscribers_are_notified_of_appends(
    notes: Path, make_engine: Callable[..., MemoryEngine]
) -> None:
    """Pre-2026 clients that called resources/subscribe get notifications/resources/updated."""
    received: list[str] = []
    got = anyio.Event()

    async def on_message(message: Any) -> None:
        params = getattr(getattr(message, "root", message), "params", None)
        if getattr(params, "uri", None):
            received.append(str(params.uri))
            got.set()

    engine = running(make_engine)
    async with Client(build_server(engine), mode="legacy", message_handler=on_message) as client:
        await engine.sync()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # subscribe_resource is deprecated for 2026-07-28, not for legacy
            await client.subscribe_resource("memory://MEMORY.md")
        result = await client.call_tool("memory_append", {"text": "- Bought a second hive.", "target": "long_term"})
        assert not result.is_error
        with anyio.fail_after(10):
            await got.wait()
    assert "memory://MEMORY.md" in received


async def test_session_transcripts_are_not_listed_or_served_as_resources(
    notes: Path, make_engine: Callable[..., MemoryEngine], write: Callable[[str, str], Path]
) -> None:
    """Transcripts are JSONL, not Markdown: the tools serve them as readable excerpts instead."""
    write("sessions/chat.jsonl", '{"role": "user", "content": "hello there"}\n')
    engine = make_engine(background_sync=False, sessions={"enabled": True, "dir": "sessions"})
    async with Client(build_server(engine)) as client:
        uris = {str(r.uri) for r in (await client.list_resources()).resources}
        with pytest.raises(MCPError, match="session transcript"):
            await client.read_resource("memory://sessions/chat.jsonl")
        got = await client.call_tool("memory_get", {"path": "sessions/chat.jsonl"})
    assert not any("sessions" in uri for uri in uris)
    assert got.structured_content["text"] == "User: hello there"
