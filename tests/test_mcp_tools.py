"""The MCP surface through the SDK's in-process client: schemas, answers, errors, prompt."""

from __future__ import annotations

import datetime as dt
import hashlib
import sqlite3
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError

from memdex.memory_core import MemoryEngine, load_settings
from memdex.server import build_server
from memdex.server.app import _tool_errors


@pytest.fixture
def notes(tmp_path: Path) -> Path:
    workspace = tmp_path / "ws"
    (workspace / "memory").mkdir(parents=True)
    (workspace / "MEMORY.md").write_text(
        "# Memory\n\n- Prefers Postgres; POSTGRES_URL is in .env\n- Build flag YN0028 must stay off\n", encoding="utf-8"
    )
    (workspace / "memory" / "2026-02-03.md").write_text(
        "# 2026-02-03\n\n- Shipped commit a828e60 fixing the login loop\n", encoding="utf-8"
    )
    (workspace / "secret.md").write_text("not memory\n", encoding="utf-8")
    return workspace


def _engine(workspace: Path, **settings: object) -> MemoryEngine:
    return MemoryEngine(load_settings(workspace=workspace, index_path=workspace.parent / "idx.sqlite", **settings))


@asynccontextmanager
async def connected(workspace: Path) -> AsyncIterator[Client]:
    """An in-process client on a synced index (opened in the test's own task, as anyio requires)."""
    engine = _engine(workspace)
    async with Client(build_server(engine)) as client:
        await engine.sync()
        yield client


async def test_tools_are_listed_with_annotations_and_schemas(notes: Path) -> None:
    """Each tool declares its hints, a camelCase input schema and an output schema."""
    async with connected(notes) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        search, get, append = tools["memory_search"], tools["memory_get"], tools["memory_append"]
        assert search.annotations.read_only_hint is True and search.annotations.open_world_hint is False
        assert get.annotations.read_only_hint is True
        assert append.annotations.read_only_hint is False and append.annotations.destructive_hint is False
        props = search.input_schema["properties"]
        assert props["maxResults"]["default"] == 8 and props["maxResults"]["maximum"] == 50
        assert props["minScore"]["default"] == 0.35
        assert search.input_schema["required"] == ["query"]
        assert "from" in get.input_schema["properties"]
        assert set(search.output_schema["properties"]) >= {"results", "mode", "indexStatus", "provider", "model"}


@pytest.mark.parametrize(
    ("query", "path"),
    [
        ("POSTGRES_URL", "MEMORY.md"),
        ("YN0028", "MEMORY.md"),
        ("a828e60", "memory/2026-02-03.md"),
        ("which database do we prefer?", "MEMORY.md"),
    ],
)
async def test_search_finds_exact_tokens_and_questions(notes: Path, query: str, path: str) -> None:
    """Identifiers and natural-language questions both find their note, and only it."""
    async with connected(notes) as client:
        result = await client.call_tool("memory_search", {"query": query})
        assert not result.is_error
        answer = result.structured_content
        assert answer["mode"] == "keyword"
        assert [hit["path"] for hit in answer["results"]] == [path], query
        top = answer["results"][0]
        assert set(top) >= {"path", "startLine", "endLine", "score", "snippet", "source"}
        assert 0.0 <= top["score"] <= 1.0
        assert answer["indexStatus"]["state"] == "ready"


async def test_snake_case_aliases_are_accepted(notes: Path) -> None:
    """max_results works like maxResults."""
    async with connected(notes) as client:
        result = await client.call_tool("memory_search", {"query": "memory", "max_results": 1, "min_score": 0.1})
        assert not result.is_error
        assert len(result.structured_content["results"]) == 1


@pytest.mark.parametrize(
    ("arguments", "fragment"),
    [
        ({"query": "   "}, "query is empty"),
        ({"query": "x", "maxResults": 0}, "maxResults"),
        ({"query": "x", "maxResults": 51}, "maxResults"),
        ({"query": "x", "minScore": 2}, "minScore"),
    ],
)
async def test_bad_search_arguments_are_readable_tool_errors(notes: Path, arguments: dict, fragment: str) -> None:
    """Bad input comes back as an error naming the problem, not a crash."""
    async with connected(notes) as client:
        result = await client.call_tool("memory_search", arguments)
        assert result.is_error
        text = result.content[0].text
        assert fragment in text and "Traceback" not in text


@pytest.mark.parametrize(
    ("tool", "arguments", "expected"),
    [
        ("memory_search", {"query": "x", "maxResults": "abc"}, "maxResults must be an integer from 1 to 50 (got 'abc')"),
        ("memory_search", {"query": "x", "maxChars": 5}, "maxChars must be an integer from 200 to 12000 (got 5)"),
        ("memory_search", {"query": "x", "max_chars": 5}, "max_chars must be an integer from 200 to 12000 (got 5)"),
        ("memory_search", {}, "query is missing; pass what to look for"),
        ("memory_search", {"query": "x", "source": "web"}, "source must be 'memory' or 'sessions', or omitted (got 'web')"),
        ("memory_get", {"path": "MEMORY.md", "from": 0}, "from must be an integer of 1 or more (got 0)"),
        ("memory_get", {"path": "MEMORY.md", "lines": "all"}, "lines must be an integer of 1 or more, or omitted"),
        ("memory_append", {"text": ""}, "text must be a non-empty string (got '')"),
        ("memory_append", {"text": "x", "target": "weekly"}, "target must be 'daily' or 'long_term' (got 'weekly')"),
    ],
)
async def test_arguments_the_schema_refuses_are_one_line_naming_the_argument(
    notes: Path, tool: str, arguments: dict, expected: str
) -> None:
    """The SDK's schema check answers first; its refusal reads like memdex's own errors, not pydantic's dump."""
    async with connected(notes) as client:
        result = await client.call_tool(tool, arguments)
    text = result.content[0].text
    assert result.is_error and expected in text, text
    assert "\n" not in text and "pydantic" not in text and "type=" not in text


async def test_the_schema_keeps_its_bounds_for_the_client(notes: Path) -> None:
    """One-line refusals do not cost the client the schema's minimum and maximum."""
    async with connected(notes) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    max_chars = tools["memory_search"].input_schema["properties"]["maxChars"]
    assert (max_chars["minimum"], max_chars["maximum"], max_chars["type"]) == (200, 12_000, "integer")
    assert tools["memory_get"].input_schema["properties"]["from"]["minimum"] == 1


@pytest.mark.parametrize(
    ("path", "fragment"),
    [
        ("../etc/passwd", "not a Markdown file"),
        ("../../etc/passwd.md", "outside the memory files"),
        ("/etc/hostname.md", "outside the memory files"),
        ("secret.md", "outside the memory files"),
        ("memory/missing.md", "no memory file"),
        ("memory/a\x00.md", "NUL"),
    ],
)
async def test_memory_get_refuses_hostile_paths(notes: Path, path: str, fragment: str) -> None:
    """Traversal, absolute, non-memory, missing and NUL paths are refused with a reason."""
    async with connected(notes) as client:
        result = await client.call_tool("memory_get", {"path": path})
        assert result.is_error
        assert fragment in result.content[0].text


async def test_memory_get_refuses_a_symlink_escape(notes: Path) -> None:
    """A symlink inside memory/ is not followed, even to a Markdown file."""
    async with connected(notes) as client:
        outside = notes.parent / "outside.md"
        outside.write_text("private\n", encoding="utf-8")
        (notes / "memory" / "link.md").symlink_to(outside)
        result = await client.call_tool("memory_get", {"path": "memory/link.md"})
        assert result.is_error and "symlink" in result.content[0].text


async def test_memory_get_reads_lines_and_reports_totals(notes: Path) -> None:
    """from/lines select exact lines of the file on disk."""
    async with connected(notes) as client:
        result = await client.call_tool("memory_get", {"path": "MEMORY.md", "from": 3, "lines": 2})
        assert result.structured_content == {
            "path": "MEMORY.md",
            "text": "- Prefers Postgres; POSTGRES_URL is in .env\n- Build flag YN0028 must stay off",
            "from": 3,
            "to": 4,
            "totalLines": 4,
            "nextFrom": None,
            "note": None,
            "hash": hashlib.sha256((notes / "MEMORY.md").read_bytes()).hexdigest()[:16],  # the whole file's
        }


async def test_append_is_searchable_at_once(notes: Path) -> None:
    """A note appended to today's log is found by the very next search."""
    async with connected(notes) as client:
        result = await client.call_tool("memory_append", {"text": "Agreed the launch codename is BLUEHERON.", "heading": "Launch"})
        assert not result.is_error
        receipt = result.structured_content
        today = dt.date.today().isoformat()
        assert receipt["path"] == f"memory/{today}.md" and receipt["created"] is True
        content = (notes / "memory" / f"{today}.md").read_text(encoding="utf-8")
        assert content.startswith(f"# {today}\n\n## Launch\n\nAgreed the launch codename is BLUEHERON.")
        found = await client.call_tool("memory_search", {"query": "BLUEHERON"})
        assert found.structured_content["results"][0]["path"] == f"memory/{today}.md"


async def test_append_to_long_term_memory_keeps_existing_text(notes: Path) -> None:
    """long_term appends to MEMORY.md without touching what was there."""
    async with connected(notes) as client:
        before = (notes / "MEMORY.md").read_bytes()
        result = await client.call_tool("memory_append", {"text": "- Likes terse answers", "target": "long_term"})
        assert not result.is_error
        after = (notes / "MEMORY.md").read_bytes()
        assert after.startswith(before) and after.endswith(b"- Likes terse answers\n")


async def test_append_declares_itself_idempotent_and_a_repeat_writes_nothing(notes: Path) -> None:
    """idempotentHint is true because it is: the same call again leaves every file as it was."""
    async with connected(notes) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert tools["memory_append"].annotations.idempotent_hint is True
        for target in ("daily", "long_term"):
            call = {"text": "- Prefers tabs over spaces", "target": target, "heading": "Style"}
            first = await client.call_tool("memory_append", call)
            files = {path: path.read_bytes() for path in notes.rglob("*.md")}
            again = await client.call_tool("memory_append", call)
            assert not first.is_error and not again.is_error
            assert {path: path.read_bytes() for path in notes.rglob("*.md")} == files
            assert again.structured_content["path"] == first.structured_content["path"]


async def test_read_only_server_has_no_append_tool_and_says_why_when_it_is_called(notes: Path) -> None:
    """--read-only removes memory_append and memory_edit; a client that calls one anyway learns why, not 'Unknown tool'."""
    before = {path: path.read_bytes() for path in notes.rglob("*.md")}
    async with Client(build_server(_engine(notes, read_only=True))) as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
        refused = await client.call_tool("memory_append", {"text": "a note"})
        edit = await client.call_tool("memory_edit", {"path": "MEMORY.md", "oldText": "Postgres", "newText": "MySQL"})
    assert names == {"memory_search", "memory_get"}
    assert edit.is_error and "memory_edit is off and nothing was written" in edit.content[0].text
    assert refused.is_error and "read-only" in refused.content[0].text and "nothing was written" in refused.content[0].text
    assert "Unknown tool" not in refused.content[0].text
    assert {path: path.read_bytes() for path in notes.rglob("*.md")} == before


async def test_flush_prompt_names_the_date_and_ends_with_the_time(notes: Path) -> None:
    """Every YYYY-MM-DD becomes the date; the message ends with a Current time line."""
    async with connected(notes) as client:
        prompt = await client.get_prompt("memory_flush", {"date": "2026-05-04", "timezone": "Asia/Tokyo"})
        text = prompt.messages[0].content.text
        assert "memory/2026-05-04.md" in text and "YYYY-MM-DD" not in text
        assert "NO_REPLY" in text and "memory_append" in text
        last = text.splitlines()[-1]
        assert last.startswith("Current time: ") and "(Asia/Tokyo)" in last and last.endswith("UTC")


async def test_flush_prompt_defaults_to_today(notes: Path) -> None:
    """Without arguments the prompt targets today's log."""
    async with connected(notes) as client:
        prompt = await client.get_prompt("memory_flush", {})
        assert f"memory/{dt.date.today().isoformat()}.md" in prompt.messages[0].content.text


@pytest.mark.parametrize("arguments", [{"date": "May 4"}, {"timezone": "Mars/Olympus"}])
async def test_flush_prompt_rejects_bad_arguments(notes: Path, arguments: dict) -> None:
    """A malformed date or unknown zone is an invalid-params error with the reason."""
    async with connected(notes) as client:
        with pytest.raises(MCPError, match="date must look like|unknown timezone"):
            await client.get_prompt("memory_flush", arguments)


async def test_search_and_handshake_never_wait_for_indexing(tmp_path: Path) -> None:
    """With the writer held, the client connects and searches; the answer says 'indexing'."""
    workspace = tmp_path / "big"
    (workspace / "memory").mkdir(parents=True)
    for i in range(600):
        (workspace / "memory" / f"note-{i:04}.md").write_text(f"# Note {i}\n\nfact number {i} about zebras\n")
    engine = _engine(workspace)
    async with Client(build_server(engine)) as client:
        async with engine.index._write_limiter:  # the sync cannot write while we hold this
            with anyio.fail_after(10):
                result = await client.call_tool("memory_search", {"query": "zebras"})
            assert not result.is_error
            status = result.structured_content["indexStatus"]
            assert status["state"] == "indexing"
            assert status["files"] < 600
            assert "still being built" in result.structured_content["warning"]


async def test_sqlite_errors_reach_the_model_explained_and_bugs_stay_internal(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A locked index becomes its explanation; only an unknown exception is 'failed internally' (and logged)."""
    path = tmp_path / "idx.sqlite"
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("CREATE TABLE t(x)")
    holder.execute("BEGIN EXCLUSIVE")
    probe = MCPServer("probe")

    @probe.tool()
    @_tool_errors
    async def write() -> str:
        sqlite3.connect(path, timeout=0).execute("INSERT INTO t VALUES (1)")
        return "written"

    @probe.tool()
    @_tool_errors
    async def bug() -> str:
        raise KeyError("no such key")

    async with Client(probe) as client:
        busy = await client.call_tool("write", {})
        broken = await client.call_tool("bug", {})
    assert busy.is_error and "another memdex process is writing the index" in busy.content[0].text
    assert "internally" not in busy.content[0].text
    assert broken.is_error and "memdex failed internally (KeyError" in broken.content[0].text
    assert any(record.exc_info for record in caplog.records if "bug failed unexpectedly" in record.message)


async def test_a_query_of_common_words_only_says_so_instead_of_matching_everything(notes: Path) -> None:
    """'the a of' is in every note: it is not searched, and the answer says which words were ignored."""
    async with connected(notes) as client:
        result = await client.call_tool("memory_search", {"query": "the a of"})
        answer = result.structured_content
        assert answer is not None and answer["results"] == []
        assert "only common words (the, a, of)" in answer["warning"]
        cjk = (await client.call_tool("memory_search", {"query": "什么"})).structured_content
        assert cjk is not None and cjk["results"] == [] and "only common words (什么)" in cjk["warning"]


async def test_scores_in_a_small_folder_tell_a_strong_match_from_a_passing_mention(tmp_path: Path) -> None:
    """Three notes all hold 'postgresql', so FTS5's IDF for it is 1e-6 (a cap at 1.0 tied them all): the note
    about it scores highest, a short note next, a long note that names it once in passing lowest, all below 1."""
    workspace = tmp_path / "ws"
    (workspace / "memory").mkdir(parents=True)
    (workspace / "MEMORY.md").write_text(
        "# People\n\n- Bob owns the PostgreSQL cluster, PostgreSQL upgrades and PostgreSQL tuning.\n", encoding="utf-8"
    )
    (workspace / "memory" / "2026-11-20.md").write_text("# 2026-11-20\n\n- Met Bob about PostgreSQL.\n", encoding="utf-8")
    filler = "the cafeteria menu, the weather, a long commute, office plants, new chairs and printers that jam, "
    (workspace / "memory" / "2026-11-21.md").write_text(
        f"# 2026-11-21\n\n- Deployed billing v2. Other notes: {filler * 4}and also PostgreSQL.\n", encoding="utf-8"
    )
    async with connected(workspace) as client:
        answer = (await client.call_tool("memory_search", {"query": "postgresql"})).structured_content
    assert answer is not None and answer["mode"] == "keyword"
    hits = [(hit["path"], hit["score"]) for hit in answer["results"]]
    assert [path for path, _ in hits] == ["MEMORY.md", "memory/2026-11-20.md", "memory/2026-11-21.md"], hits
    scores = [score for _, score in hits]
    assert 1.0 > scores[0] > scores[1] > scores[2] > 0.5, hits
