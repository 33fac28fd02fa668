"""Memory files as MCP resources, and change notifications in both protocol eras."""

from __future__ import annotations

import json
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client._memory import InMemoryTransport
from mcp.shared.exceptions import MCPError

from memdex.memory_core import MemoryEngine
from memdex.server import build_server

pytestmark = pytest.mark.both_stores


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


async def test_a_utf16_memory_file_reads_as_its_text(workspace: Path, make_engine: Callable[..., MemoryEngine]) -> None:
    """Saved by Windows PowerShell 5 (UTF-16 with a byte-order mark): its text, not its bytes read as UTF-8."""
    (workspace / "MEMORY.md").write_bytes("# Memory\r\n\r\n- Keeps bees in M\u00fcnster.\r\n".encode("utf-16"))
    async with Client(build_server(make_engine())) as client:
        result = await client.read_resource("memory://MEMORY.md")
    assert result.contents[0].text == "# Memory\r\n\r\n- Keeps bees in M\u00fcnster.\r\n"


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


class LegacyClient:
    """An in-process pre-2026 client that records the URIs of resource-updated notifications."""

    def __init__(self, engine: MemoryEngine, server: Any = None) -> None:
        self.uris: list[str] = []
        self.appended = 0
        self.arrived = anyio.Event()
        self.client = Client(  # a time limit on requests: an append must not wait on other clients
            server or build_server(engine), mode="legacy", message_handler=self._on_message, read_timeout_seconds=10
        )

    async def _on_message(self, message: Any) -> None:
        params = getattr(getattr(message, "root", message), "params", None)
        if getattr(params, "uri", None):
            self.uris.append(str(params.uri))
            self.arrived.set()

    async def wait_for(self, uri: str, timeout: float = 10) -> None:
        await self.wait_for_count(uri, 1, timeout)

    async def wait_for_count(self, uri: str, count: int, timeout: float = 10) -> None:
        with anyio.fail_after(timeout):
            while self.uris.count(uri) < count:
                await self.arrived.wait()
                self.arrived = anyio.Event()

    async def subscribe(self, uri: str) -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # deprecated for 2026-07-28, not for legacy
            await self.client.subscribe_resource(uri)

    async def unsubscribe(self, uri: str) -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            await self.client.unsubscribe_resource(uri)

    async def append(self, target: str) -> None:
        self.appended += 1  # a new text each time: repeating one is a no-op
        text = f"- Bought hive number {self.appended}."
        result = await self.client.call_tool("memory_append", {"text": text, "target": target})
        assert not result.is_error, result.content


def _daily_uri(engine: MemoryEngine) -> str:
    return f"memory://memory/{engine.today().isoformat()}.md"


async def test_a_repeated_legacy_subscribe_sends_one_notification_per_change(
    notes: Path, make_engine: Callable[..., MemoryEngine]
) -> None:
    """Subscribing twice on one connection is one subscription: one notification per change."""
    engine = make_engine()
    legacy = LegacyClient(engine)
    async with legacy.client:
        await engine.sync()
        await legacy.subscribe("memory://MEMORY.md")
        await legacy.subscribe("memory://MEMORY.md")
        await legacy.subscribe(_daily_uri(engine))
        await legacy.append("long_term")
        await legacy.wait_for("memory://MEMORY.md")
        await legacy.append("daily")  # sent after every MEMORY.md notification: a fence for duplicates
        await legacy.wait_for(_daily_uri(engine))
    assert legacy.uris.count("memory://MEMORY.md") == 1


async def test_legacy_unsubscribe_stops_notifications(notes: Path, make_engine: Callable[..., MemoryEngine]) -> None:
    """After resources/unsubscribe the connection hears nothing more about that URI."""
    engine = make_engine()
    legacy = LegacyClient(engine)
    async with legacy.client:
        await engine.sync()
        await legacy.subscribe("memory://MEMORY.md")
        await legacy.subscribe(_daily_uri(engine))
        await legacy.unsubscribe("memory://MEMORY.md")
        await legacy.append("long_term")
        await legacy.append("daily")
        await legacy.wait_for(_daily_uri(engine))
    assert "memory://MEMORY.md" not in legacy.uris


class StalledReader:
    """A client's read stream that stops delivering once ``stalled`` is set, like a client that hung."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.stalled = False

    async def __aenter__(self) -> StalledReader:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.inner.aclose()

    def __aiter__(self) -> StalledReader:
        return self

    async def __anext__(self) -> Any:
        if self.stalled:
            await anyio.sleep_forever()
        return await self.inner.__anext__()


class StallingTransport:
    """The SDK's in-memory transport, its read side a StalledReader."""

    def __init__(self, server: Any) -> None:
        self.inner = InMemoryTransport(server)
        self.reader: StalledReader | None = None

    async def __aenter__(self) -> tuple[StalledReader, Any]:
        read, write = await self.inner.__aenter__()
        self.reader = StalledReader(read)
        return self.reader, write

    async def __aexit__(self, *exc_info: Any) -> None:
        await self.inner.__aexit__(*exc_info)


async def test_a_client_that_stops_reading_does_not_hold_up_the_others(
    notes: Path, make_engine: Callable[..., MemoryEngine]
) -> None:
    """A subscriber that stops reading is dropped after a short wait; the others keep hearing every change."""
    engine = make_engine()
    server = build_server(engine)
    transport = StallingTransport(server)
    healthy = LegacyClient(engine, server)
    async with Client(transport, mode="legacy") as stuck, healthy.client:
        await engine.sync()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for uri in ("memory://status", "memory://MEMORY.md"):  # two: the first fits the stream's buffer
                await stuck.subscribe_resource(uri)
        assert transport.reader is not None
        transport.reader.stalled = True
        await healthy.subscribe(_daily_uri(engine))
        started = time.monotonic()
        await healthy.append("long_term")
        await healthy.append("daily")
        await healthy.wait_for(_daily_uri(engine), timeout=10)
        took = time.monotonic() - started
        await healthy.append("daily")  # the stuck client is gone: no wait at all now
        await healthy.wait_for_count(_daily_uri(engine), 2, timeout=1.5)
    assert took < 4, f"the healthy client waited {took:.1f}s behind the stuck one"
