"""Session transcripts: JSONL files as a second source of memory, read and searched as User:/Assistant: lines."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from helpers import eventually

from memdex.memory_core import MemoryEngine, PathError
from memdex.memory_core.index import indexer as indexer_module
from memdex.memory_core.limits import MAX_READ_LINES as MAX_LINES
from memdex.memory_core.text.transcripts import chunk_transcript, parse_transcript, readable_excerpt

pytestmark = pytest.mark.both_stores

Engine = Callable[..., MemoryEngine]


def user(text: Any) -> str:
    return json.dumps({"role": "user", "content": text})


def assistant(text: Any) -> str:
    return json.dumps({"role": "assistant", "content": text})


def envelope(role: str, content: Any) -> str:
    """A message in OpenClaw's shape."""
    return json.dumps({"type": "message", "id": "m1", "message": {"role": role, "content": content}})


def jsonl(*lines: str) -> str:
    return "".join(line + "\n" for line in lines)


@pytest.fixture
def with_sessions(make_engine: Engine, sessions_dir: Path) -> Engine:
    """Build an engine with transcripts enabled; keyword arguments go to the [sessions] section."""

    def make(*, background_sync: bool = False, **sessions: Any) -> MemoryEngine:
        return make_engine(
            background_sync=background_sync,
            sessions={"enabled": True, "dir": sessions_dir, **sessions},
            watch={"debounce_ms": 200},
        )

    return make


async def search(engine: MemoryEngine, query: str) -> list[tuple[str, str]]:
    return [(hit.path, hit.source) for hit in (await engine.search(query)).results]


def append(path: Path, *lines: str) -> None:
    with path.open("a", encoding="utf-8") as handle:
        handle.write(jsonl(*lines))


def age(path: Path, seconds: float) -> None:
    """Set the file's mtime ``seconds`` into the past, as if its writer had closed it then."""
    past = time.time() - seconds
    os.utime(path, (past, past))


# Parsing ---------------------------------------------------------------------------------------


def test_string_content_and_text_parts_become_user_and_assistant_lines() -> None:
    """A string is taken whole; of a list of parts only the text parts count, joined with a space."""
    transcript = parse_transcript(
        jsonl(
            user("Which database did we pick?"),
            assistant(
                [
                    {"type": "text", "text": "We picked"},
                    {"type": "tool_use", "id": "t1", "name": "search", "input": {"q": "db"}},
                    {"type": "image", "source": {"type": "base64", "data": "AAAA"}},
                    {"type": "text", "text": "Postgres."},
                ]
            ),
        )
    )
    assert transcript.lines == ["User: Which database did we pick?", "Assistant: We picked Postgres."]
    assert transcript.line_map == [1, 2]
    assert transcript.total_lines == 2


def test_the_openclaw_envelope_is_read_like_a_bare_message() -> None:
    """``{"type": "message", "message": {role, content}}`` gives the same line as the bare message."""
    transcript = parse_transcript(
        jsonl(
            json.dumps({"type": "session", "version": 3, "id": "abc", "cwd": "/tmp"}),
            envelope("user", [{"type": "text", "text": "Remember the launch date."}]),
            envelope("assistant", "It is June 3rd."),
        )
    )
    assert transcript.lines == ["User: Remember the launch date.", "Assistant: It is June 3rd."]
    assert transcript.line_map == [2, 3]


def test_tool_system_invalid_and_blank_lines_are_skipped_and_the_line_map_points_at_jsonl_lines() -> None:
    """Only user and assistant text is kept; every kept line maps to the JSONL line it came from."""
    text = jsonl(
        json.dumps({"role": "system", "content": "You are a helpful agent."}),  # 1
        user("first question"),  # 2
        "",  # 3: blank
        "{not json",  # 4
        json.dumps({"role": "tool", "content": "tool output", "tool_call_id": "t1"}),  # 5
        envelope("toolResult", [{"type": "text", "text": "result text"}]),  # 6
        user([{"type": "tool_result", "tool_use_id": "t1", "content": "42"}]),  # 7: a tool result only
        json.dumps({"role": "assistant", "content": None, "tool_calls": [{"id": "t2"}]}),  # 8: a tool call only
        json.dumps(["a", "list"]),  # 9: JSON, but not a message
        assistant("   "),  # 10: nothing but whitespace
        json.dumps({"type": "custom", "customType": "note", "data": {"role": "user"}}),  # 11
        assistant("first answer"),  # 12
        '{"role": "user", "content": "half a line still being writ',  # 13: no newline yet, invalid
    ).rstrip("\n")
    transcript = parse_transcript(text)
    assert transcript.lines == ["User: first question", "Assistant: first answer"]
    assert transcript.line_map == [2, 12]
    assert transcript.total_lines == 13


def test_whitespace_and_newlines_inside_a_message_collapse_to_single_spaces() -> None:
    """Newlines, tabs and runs of spaces in a message become one space, so a message is one line."""
    transcript = parse_transcript(
        jsonl(user("  line one\n\n  line two\r\n\tline   three  "), assistant([{"type": "text", "text": "a\nb"}]))
    )
    assert transcript.lines == ["User: line one line two line three", "Assistant: a b"]


def test_transcript_chunks_carry_the_jsonl_lines_of_the_messages_they_hold() -> None:
    """Each chunk's start/end are JSONL lines, and those lines hold exactly the chunk's messages."""
    lines = []
    for i in range(40):
        lines.append(user(f"question {i} about topic{i}"))
        lines.append(json.dumps({"role": "tool", "content": "noise"}))
        lines.append(assistant(f"answer {i} " + "detail " * 10))
    transcript = parse_transcript(jsonl(*lines))
    chunks = chunk_transcript(transcript, tokens=64, overlap=16)
    assert len(chunks) > 3
    for chunk in chunks:
        assert chunk.text == readable_excerpt(transcript, chunk.start_line, chunk.end_line)
    assert chunks[0].start_line == 1
    assert chunks[-1].end_line == 120
    assert all(c.start_line % 3 != 2 and c.end_line % 3 != 2 for c in chunks)  # never a tool line


# Search and memory_get ---------------------------------------------------------------------------


async def test_a_transcript_hit_has_source_sessions_a_virtual_path_and_jsonl_line_numbers(
    with_sessions: Engine, sessions_dir: Path, write: Callable[[str, str], Path]
) -> None:
    """The hit's path is sessions/<file>, its source "sessions", and its lines hold the matched words."""
    write("MEMORY.md", "# Memory\n\n- The deploy key is rotated monthly.\n")
    (sessions_dir / "2026-05-01-abc.jsonl").write_text(
        jsonl(
            json.dumps({"type": "session", "id": "abc"}),  # 1
            json.dumps({"role": "system", "content": "system prompt"}),  # 2
            user("What is the codename of the new vault?"),  # 3
            json.dumps({"role": "tool", "content": "lookup"}),  # 4
            assistant("The vault codename is PERIWINKLE."),  # 5
            json.dumps({"type": "compaction", "summary": "..."}),  # 6
        ),
        encoding="utf-8",
    )
    async with with_sessions() as engine:
        await engine.sync()
        answer = await engine.search("PERIWINKLE")
        assert [(h.path, h.source) for h in answer.results] == [("sessions/2026-05-01-abc.jsonl", "sessions")]
        hit = answer.results[0]
        assert (hit.start_line, hit.end_line) == (3, 5)
        assert "Assistant: The vault codename is PERIWINKLE." in hit.snippet
        lines = (sessions_dir / "2026-05-01-abc.jsonl").read_text(encoding="utf-8").splitlines()
        assert "PERIWINKLE" in lines[hit.end_line - 1]
        assert await search(engine, "deploy key rotated") == [("MEMORY.md", "memory")]


async def test_half_an_emoji_in_a_transcript_is_a_replacement_character_not_a_failed_sync(
    with_sessions: Engine, sessions_dir: Path, write: Callable[[str, str], Path]
) -> None:
    """A JavaScript writer that cuts a message inside an emoji escapes the half it keeps ("\\ud83d"), which JSON
    reads as a lone surrogate: the index refused it, and every sync failed, so nothing was searchable. A
    transcript saved as UTF-16 is read as its text, as a Markdown file is."""
    write("MEMORY.md", "# Memory\n\n- The deploy key is rotated monthly.\n")
    (sessions_dir / "cut.jsonl").write_text(jsonl(user("Ship the PERIWINKLE build \ud83d"), assistant("Done \U0001f600")))
    (sessions_dir / "utf16.jsonl").write_bytes(jsonl(user("Where is the OKAPI?")).encode("utf-16"))
    async with with_sessions() as engine:
        await engine.sync()
        [cut] = (await engine.search("PERIWINKLE")).results
        [utf16] = (await engine.search("OKAPI")).results
        memory = await search(engine, "deploy key rotated")
        excerpt = await engine.read("sessions/cut.jsonl")
    assert 'build \\ud83d"' in (sessions_dir / "cut.jsonl").read_text(encoding="utf-8")  # as the writer escaped it
    assert cut.snippet == excerpt.text == "User: Ship the PERIWINKLE build \ufffd\nAssistant: Done \U0001f600"
    assert utf16.path == "sessions/utf16.jsonl" and utf16.snippet == "User: Where is the OKAPI?"
    assert memory == [("MEMORY.md", "memory")]


async def test_memory_get_on_a_transcript_hit_returns_the_user_and_assistant_excerpt(
    with_sessions: Engine, sessions_dir: Path
) -> None:
    """Reading a hit's lines gives the readable messages of those JSONL lines, not raw JSON."""
    (sessions_dir / "chat.jsonl").write_text(
        jsonl(
            user("Where do the backups go?"),  # 1
            json.dumps({"role": "tool", "content": "ls /backups"}),  # 2
            assistant([{"type": "text", "text": "They go to the\nTANGERINE bucket."}]),  # 3
            user("Thanks!"),  # 4
        ),
        encoding="utf-8",
    )
    async with with_sessions() as engine:
        await engine.sync()
        hit = (await engine.search("TANGERINE")).results[0]
        excerpt = await engine.read(hit.path, hit.start_line, hit.end_line - hit.start_line + 1)
        assert excerpt.text.splitlines() == [
            "User: Where do the backups go?",
            "Assistant: They go to the TANGERINE bucket.",
            "User: Thanks!",
        ]
        assert (excerpt.path, excerpt.from_, excerpt.to, excerpt.total_lines) == ("sessions/chat.jsonl", 1, 4, 4)
        assert excerpt.next_from is None

        middle = await engine.read("sessions/chat.jsonl", 2, 2)
        assert (middle.text, middle.from_, middle.to) == ("Assistant: They go to the TANGERINE bucket.", 2, 3)
        tool_only = await engine.read("sessions/chat.jsonl", 2, 1)
        assert tool_only.text == "" and tool_only.note is not None and "no user or assistant" in tool_only.note


async def test_memory_get_on_a_long_transcript_is_capped_and_continues_with_next_from(
    with_sessions: Engine, sessions_dir: Path
) -> None:
    """The 200-line cap counts JSONL lines, and nextFrom continues where the answer stopped."""
    (sessions_dir / "long.jsonl").write_text(jsonl(*(user(f"message {i}") for i in range(1, 251))), encoding="utf-8")
    async with with_sessions() as engine:
        first = await engine.read("sessions/long.jsonl")
        assert (first.from_, first.to, first.next_from, first.total_lines) == (1, MAX_LINES, MAX_LINES + 1, 250)
        assert first.text.splitlines()[-1] == f"User: message {MAX_LINES}"
        rest = await engine.read("sessions/long.jsonl", first.next_from)
        assert (rest.to, rest.next_from) == (250, None)
        assert rest.text.splitlines()[0] == f"User: message {MAX_LINES + 1}"


# The delta rule ----------------------------------------------------------------------------------


@pytest.mark.parametrize("how", ["full sync", "watcher sync"])
async def test_growth_below_delta_lines_waits_and_crossing_it_reindexes(
    with_sessions: Engine, sessions_dir: Path, how: str
) -> None:
    """Two new lines (delta 5) are not indexed yet; five are, whether a full or a targeted sync looks."""
    path = sessions_dir / "live.jsonl"
    path.write_text(jsonl(user("hello there"), assistant("hi")), encoding="utf-8")
    async with with_sessions(delta_lines=5, delta_bytes=1_000_000) as engine:
        await engine.sync()

        async def sync() -> None:
            await (engine.sync() if how == "full sync" else engine.sync_paths(["sessions/live.jsonl"]))

        append(path, user("note the CORMORANT plan"), assistant("noted"))
        await sync()
        assert await search(engine, "CORMORANT") == []
        append(path, user("one"), assistant("two"), user("three"))
        await sync()
        assert await search(engine, "CORMORANT") == [("sessions/live.jsonl", "sessions")]


async def test_growth_of_delta_bytes_reindexes_even_with_few_new_lines(
    with_sessions: Engine, sessions_dir: Path
) -> None:
    """One long new message crosses delta_bytes and is indexed at once; one short one does not."""
    path = sessions_dir / "live.jsonl"
    path.write_text(jsonl(user("hello there")), encoding="utf-8")
    async with with_sessions(delta_lines=50, delta_bytes=400) as engine:
        await engine.sync()
        append(path, assistant("short GANNET reply"))
        await engine.sync()
        assert await search(engine, "GANNET") == []
        append(path, assistant("a long reply about the PUFFIN colony " + "and more " * 60))
        await engine.sync()
        assert await search(engine, "GANNET PUFFIN") == [("sessions/live.jsonl", "sessions")]


async def test_a_quiet_transcript_is_indexed_whatever_its_growth(with_sessions: Engine, sessions_dir: Path) -> None:
    """A transcript not written to for a while counts as closed: a one-line growth is indexed."""
    path = sessions_dir / "done.jsonl"
    path.write_text(jsonl(user("hello there")), encoding="utf-8")
    async with with_sessions(delta_lines=50) as engine:
        await engine.sync()
        append(path, assistant("the last word is KITTIWAKE"))
        await engine.sync()
        assert await search(engine, "KITTIWAKE") == []
        age(path, 120)
        await engine.sync()
        assert await search(engine, "KITTIWAKE") == [("sessions/done.jsonl", "sessions")]


async def test_a_deferred_transcript_is_indexed_by_itself_once_it_goes_quiet(
    with_sessions: Engine, sessions_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After a small growth is deferred, the engine looks again once the writer stopped, unprompted."""
    monkeypatch.setattr(indexer_module, "TRANSCRIPT_QUIET_SECONDS", 1.5)
    path = sessions_dir / "closing.jsonl"
    path.write_text(jsonl(user("hello there")), encoding="utf-8")
    async with with_sessions(delta_lines=50) as engine:
        await engine.sync()
        append(path, assistant("goodbye from the SHEARWATER"))
        await engine.sync_paths(["sessions/closing.jsonl"])
        assert await search(engine, "SHEARWATER") == []
        await eventually(
            lambda: _found(engine, "SHEARWATER", "sessions/closing.jsonl"), "the quiet transcript indexed"
        )


async def test_a_truncated_or_rewritten_transcript_is_reindexed_at_once(
    with_sessions: Engine, sessions_dir: Path
) -> None:
    """A transcript that shrank, or was rewritten at the same size, is re-indexed whatever the delta."""
    path = sessions_dir / "redo.jsonl"
    path.write_text(jsonl(user("the old ALBATROSS plan"), assistant("a long answer " * 10)), encoding="utf-8")
    async with with_sessions(delta_lines=50) as engine:
        await engine.sync()
        assert await search(engine, "ALBATROSS") == [("sessions/redo.jsonl", "sessions")]

        path.write_text(jsonl(user("the new PETREL plan")), encoding="utf-8")
        await engine.sync()
        assert await search(engine, "PETREL") == [("sessions/redo.jsonl", "sessions")]
        assert await search(engine, "ALBATROSS") == []

        path.write_text(jsonl(user("the new SKUA12 plan")), encoding="utf-8")  # the same size
        await engine.sync_paths(["sessions/redo.jsonl"])
        assert await search(engine, "SKUA12") == [("sessions/redo.jsonl", "sessions")]
        assert await search(engine, "PETREL") == []


async def test_a_renamed_transcript_is_found_under_its_new_path_at_once(
    with_sessions: Engine, sessions_dir: Path
) -> None:
    """Renaming a transcript (e.g. when a session is archived) moves its hits to the new path."""
    (sessions_dir / "current.jsonl").write_text(jsonl(user("the MURRELET decision")), encoding="utf-8")
    async with with_sessions(delta_lines=50) as engine:
        await engine.sync()
        (sessions_dir / "archive").mkdir()
        (sessions_dir / "current.jsonl").rename(sessions_dir / "archive" / "2026-05-01.jsonl")
        await engine.sync()
        assert await search(engine, "MURRELET") == [("sessions/archive/2026-05-01.jsonl", "sessions")]


# Path policy -------------------------------------------------------------------------------------

HOSTILE = {
    "dot-dot back to the workspace": "sessions/../MEMORY.md",
    "dot-dot out of the sessions folder": "sessions/../../outside.jsonl",
    "dot-dot inside then out": "sessions/sub/../../outside.jsonl",
    "not a transcript": "sessions/x.md",
    "raw json of another suffix": "sessions/x.json",
    "a symlinked transcript": "sessions/link.jsonl",
    "a transcript in a symlinked folder": "sessions/linkdir/inner.jsonl",
    "a hidden transcript": "sessions/.hidden.jsonl",
    "a transcript in a hidden folder": "sessions/.trash/old.jsonl",
    "a missing transcript": "sessions/missing.jsonl",
    "NUL byte": "sessions/x\x00.jsonl",
    "the folder itself": "sessions",
    "absolute path to a transcript": "{sessions_dir}/real.jsonl",
}


@pytest.mark.parametrize("raw", HOSTILE.values(), ids=HOSTILE.keys())
async def test_memory_get_refuses_paths_that_are_not_plain_transcripts_of_the_sessions_folder(
    with_sessions: Engine, sessions_dir: Path, tmp_path: Path, write: Callable[[str, str], Path], raw: str
) -> None:
    """Traversal, symlinks, hidden entries and other suffixes are refused; a plain transcript reads."""
    write("MEMORY.md", "# Memory\n")
    write("x.md", "not memory\n")
    outside = tmp_path / "agent" / "outside.jsonl"
    outside.write_text(jsonl(user("the SECRETWORD outside")), encoding="utf-8")
    (sessions_dir / "real.jsonl").write_text(jsonl(user("a real one")), encoding="utf-8")
    (sessions_dir / "x.md").write_text("markdown in the sessions folder\n", encoding="utf-8")
    (sessions_dir / "x.json").write_text(user("json") + "\n", encoding="utf-8")
    (sessions_dir / "link.jsonl").symlink_to(outside)
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "inner.jsonl").write_text(jsonl(user("the SECRETWORD inner")), encoding="utf-8")
    (sessions_dir / "linkdir").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    (sessions_dir / ".hidden.jsonl").write_text(jsonl(user("the SECRETWORD hidden")), encoding="utf-8")
    (sessions_dir / ".trash").mkdir()
    (sessions_dir / ".trash" / "old.jsonl").write_text(jsonl(user("the SECRETWORD trash")), encoding="utf-8")
    async with with_sessions() as engine:
        assert (await engine.read("sessions/real.jsonl")).text == "User: a real one"
        with pytest.raises(PathError):
            await engine.read(raw.format(sessions_dir=sessions_dir))
        await engine.sync()
        assert await search(engine, "SECRETWORD") == []
        assert (await engine.status()).files == 2  # MEMORY.md and sessions/real.jsonl


async def test_with_sessions_disabled_transcripts_are_not_indexed_and_their_paths_are_refused(
    make_engine: Engine, with_sessions: Engine, sessions_dir: Path
) -> None:
    """Turning the source off drops indexed transcripts, and sessions/... paths no longer read."""
    (sessions_dir / "chat.jsonl").write_text(jsonl(user("the GUILLEMOT question")), encoding="utf-8")
    async with with_sessions() as engine:
        await engine.sync()
        assert await search(engine, "GUILLEMOT") == [("sessions/chat.jsonl", "sessions")]
    async with make_engine(sessions={"enabled": False, "dir": sessions_dir}) as engine:
        await engine.sync()
        assert await search(engine, "GUILLEMOT") == []
        assert (await engine.status()).files == 0
        with pytest.raises(PathError):
            await engine.read("sessions/chat.jsonl")


# Watching ----------------------------------------------------------------------------------------


async def test_the_watcher_picks_up_a_new_transcript_in_a_sessions_folder_outside_the_workspace(
    with_sessions: Engine, sessions_dir: Path
) -> None:
    """Transcripts written while the server runs, also in a new sub-folder, are found without a sync call."""
    async with with_sessions(background_sync=True) as engine:
        await eventually(lambda: _ready(engine), "the first sync")
        (sessions_dir / "2026-05-02-new.jsonl").write_text(
            jsonl(user("what is the AUKLET budget?"), assistant("Twelve.")), encoding="utf-8"
        )
        await eventually(lambda: _found(engine, "AUKLET", "sessions/2026-05-02-new.jsonl"), "the new transcript")
        (sessions_dir / "agent-2").mkdir()
        (sessions_dir / "agent-2" / "s.jsonl").write_text(jsonl(user("the DOVEKIE memo")), encoding="utf-8")
        (sessions_dir / "agent-2" / "notes.md").write_text("the DOVEKIE notes\n", encoding="utf-8")
        await eventually(lambda: _found(engine, "DOVEKIE", "sessions/agent-2/s.jsonl"), "a transcript in a new folder")
        assert await search(engine, "DOVEKIE") == [("sessions/agent-2/s.jsonl", "sessions")]


async def _ready(engine: MemoryEngine) -> bool:
    return (await engine.status()).state == "ready"


async def _found(engine: MemoryEngine, query: str, path: str) -> bool:
    return (path, "sessions") in await search(engine, query)
