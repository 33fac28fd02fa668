"""memory_edit and its history: exact replacement, refusals the model can act on, atomic writes, undo.

Real files, real SQLite, real subprocesses (a second writer, a CLI, a process killed mid-edit).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import resource
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import anyio
import pytest
from helpers import eventually
from mcp import Client

from memdex.memory_core import InputError, MemoryEngine, PathError
from memdex.memory_core.workspace.appender import append_entry
from memdex.memory_core.workspace.files import Workspace
from memdex.memory_core.workspace.history import Change, History
from memdex.memory_core.workspace.memory_file import TEMP_NAME
from memdex.server import build_server

MakeEngine = Callable[..., MemoryEngine]
Write = Callable[[str, str], Path]

MEMORY = "# Memory\n\n- The staging server is alpha.example.com\n- Deploys go out on Tuesdays\n"


async def _true(value: bool) -> bool:
    return value


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


@pytest.fixture
def memory(workspace: Path) -> Path:
    path = workspace / "MEMORY.md"
    path.write_bytes(MEMORY.encode("utf-8"))
    return path


# Edits ------------------------------------------------------------------------------------------


async def test_an_edit_replaces_the_text_is_searchable_at_once_and_is_recorded(
    make_engine: MakeEngine, memory: Path
) -> None:
    async with make_engine() as engine:
        await engine.sync()
        changed: list[str] = []

        async def listener(paths: list[str]) -> None:
            changed.extend(paths)

        engine.add_change_listener(listener)
        read = await engine.read("MEMORY.md")
        receipt = await engine.edit("MEMORY.md", "alpha.example.com", "beta.example.com", read.hash, client="tester")
        assert memory.read_text(encoding="utf-8") == MEMORY.replace("alpha", "beta")
        assert (receipt.path, receipt.start_line, receipt.end_line, receipt.hash) == ("MEMORY.md", 3, 3, sha(memory))
        hits = (await engine.search("beta.example.com")).results
        assert [h.path for h in hits] == ["MEMORY.md"] and hits[0].hash == sha(memory)
        assert (await engine.search("alpha")).results == []  # the history holds it; search never shows it
        await eventually(lambda: _true("MEMORY.md" in changed), "the change feed reports MEMORY.md")
        [entry] = await engine.history_entries()
        assert (entry.id, entry.tool, entry.client) == (receipt.id, "edit", "tester")
        assert (entry.change.old, entry.change.new) == ("alpha.example.com", "beta.example.com")
        assert (entry.change.before, entry.change.after) == (read.hash, receipt.hash)


async def test_a_keyword_search_reads_its_hits_hashes_with_its_candidates(
    make_engine: MakeEngine, workspace: Path, write: Write
) -> None:
    """Each memory hit carries its file's hash as indexed, read in the trip to a reader the keyword side makes
    (a trip of its own cost about 0.5 ms of a 20 ms search at 100k chunks)."""
    for day in ("10", "11", "12"):
        write(f"memory/2026-01-{day}.md", f"# 2026-01-{day}\n\n- deploy notes for day {day}\n")
    async with make_engine() as engine:
        await engine.sync()
        read, reads = engine.index.read, []

        async def counted(fn: Callable[..., object], *args: object) -> object:
            reads.append(fn)
            return await read(fn, *args)

        engine.index.read = counted  # type: ignore[method-assign]
        hits = (await engine.search("deploy notes")).results
    assert reads and engine.index.ops.file_hashes not in reads
    assert sorted(hit.path for hit in hits) == [f"memory/2026-01-{day}.md" for day in ("10", "11", "12")]
    assert all(hit.hash == sha(workspace / hit.path) for hit in hits)


@pytest.mark.parametrize(
    ("old", "expected"),
    [
        ("gamma.example.com", "the old text is not in MEMORY.md; copy it exactly from memory_get"),
        ("- ", "the old text is in MEMORY.md 2 times; add neighbouring lines to it so it matches once"),
        ("", "old text is empty"),
        ("- Deploys go out on Tuesd\udce4ys", "old text is not Unicode text"),
    ],
)
async def test_missing_or_repeated_text_is_refused_in_one_line_and_nothing_changes(
    make_engine: MakeEngine, memory: Path, old: str, expected: str
) -> None:
    async with make_engine() as engine:
        with pytest.raises(InputError) as refused:
            await engine.edit("MEMORY.md", old, "x")
    assert expected in str(refused.value) and "\n" not in str(refused.value)
    assert memory.read_text(encoding="utf-8") == MEMORY
    assert not (memory.parent / ".memdex" / "history.jsonl").exists()


async def test_new_text_that_is_not_unicode_is_refused_not_a_traceback(make_engine: MakeEngine, memory: Path) -> None:
    """``memdex edit --new`` given Latin-1 bytes on the command line: Python holds them as lone surrogates."""
    async with make_engine() as engine:
        with pytest.raises(InputError, match="^new text is not Unicode text .*; pass plain text$"):
            await engine.edit("MEMORY.md", "Tuesdays", "Mittw\udcf6ch")
    assert memory.read_text(encoding="utf-8") == MEMORY


async def test_a_person_saving_in_an_editor_after_the_agent_read_makes_the_stale_edit_refused(
    make_engine: MakeEngine, memory: Path
) -> None:
    async with make_engine() as engine:
        read = await engine.read("MEMORY.md")
        person = MEMORY.replace("Tuesdays", "Wednesdays") + "- Added by hand\n"
        memory.write_text(person, encoding="utf-8")  # the person's editor saves
        with pytest.raises(InputError, match=r"MEMORY.md changed since you read it .*read it again with memory_get"):
            await engine.edit("MEMORY.md", "alpha.example.com", "beta.example.com", read.hash)
        assert memory.read_text(encoding="utf-8") == person  # nothing lost
        full = hashlib.sha256(memory.read_bytes()).hexdigest()  # the whole SHA-256 is accepted too
        await engine.edit("MEMORY.md", "alpha.example.com", "beta.example.com", full.upper())
    assert memory.read_text(encoding="utf-8") == person.replace("alpha", "beta")


async def test_daily_logs_are_append_only_unless_configured(make_engine: MakeEngine, write: Write) -> None:
    log = write("memory/2026-01-31.md", "# 2026-01-31\n\n- Met Ana\n")
    async with make_engine() as engine:
        with pytest.raises(InputError, match=r"memory/2026-01-31.md is a daily log, which is append-only"):
            await engine.edit("memory/2026-01-31.md", "Ana", "Anna")
    assert "Ana\n" in log.read_text(encoding="utf-8")
    async with make_engine(edits={"daily_logs": True}) as engine:
        await engine.edit("memory/2026-01-31.md", "Ana", "Anna")
    assert "Anna\n" in log.read_text(encoding="utf-8")


async def test_locked_files_are_refused_by_front_matter_or_configuration(make_engine: MakeEngine, write: Write) -> None:
    marked = write("memory/policy.md", "---\ntitle: Policy\nmemdex: locked\n---\n\n- Never deploy on Fridays\n")
    listed = write("memory/projects/keys.md", "- Key owner is Ana\n")
    async with make_engine(edits={"locked": ["memory/projects/*"]}) as engine:
        with pytest.raises(InputError, match=r"memory/policy.md is locked \('memdex: locked' in its front matter\)"):
            await engine.edit("memory/policy.md", "Fridays", "Mondays")
        with pytest.raises(InputError, match=r"memory/projects/keys.md is locked \(edits.locked\)"):
            await engine.edit("memory/projects/keys.md", "Ana", "Bo")
        write("memory/open.md", "---\ntitle: memdex: locked\n---\n- x\n")  # not the marker line itself
        await engine.edit("memory/open.md", "- x", "- y")
    assert "Fridays" in marked.read_text(encoding="utf-8") and "Ana" in listed.read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("path", "fragment"),
    [
        ("../outside.md", "is outside the memory files"),
        ("notes.txt", "is not a Markdown file"),
        ("memory/link.md", "symlink"),
        ("memory/linked/x.md", "symlink"),
        (".memdex/history.jsonl", "is not a Markdown file"),
        ("memory/.hidden.md", "hidden or ignored"),
    ],
)
async def test_paths_are_confined_as_for_appends(
    make_engine: MakeEngine, workspace: Path, memory: Path, path: str, fragment: str
) -> None:
    outside = workspace.parent / "outside.md"
    outside.write_text("- alpha.example.com\n", encoding="utf-8")
    (workspace / "memory" / "link.md").symlink_to(outside)
    (workspace.parent / "elsewhere").mkdir()
    (workspace.parent / "elsewhere" / "x.md").write_text("- alpha.example.com\n", encoding="utf-8")
    (workspace / "memory" / "linked").symlink_to(workspace.parent / "elsewhere")
    (workspace / "memory" / ".hidden.md").write_text("- alpha.example.com\n", encoding="utf-8")
    async with make_engine() as engine:
        await engine.edit("MEMORY.md", "Tuesdays", "Thursdays")  # the history file exists now
        with pytest.raises(PathError, match=fragment):
            await engine.edit(path, "alpha.example.com", "pwned")
    assert outside.read_text(encoding="utf-8") == "- alpha.example.com\n"
    assert (workspace.parent / "elsewhere" / "x.md").read_text(encoding="utf-8") == "- alpha.example.com\n"


async def test_crlf_files_match_lf_text_spanning_lines_and_keep_their_endings(make_engine: MakeEngine, workspace: Path) -> None:
    path = workspace / "MEMORY.md"
    path.write_bytes(b"# Memory\r\n\r\n- one\r\n- two\r\n- three\r\n")
    async with make_engine() as engine:
        excerpt = await engine.read("MEMORY.md")
        assert "- one\n- two" in excerpt.text  # what the model copies: lines without their \r
        receipt = await engine.edit("MEMORY.md", "- one\n- two\n", "- uno\n- dos\n- tres\n", excerpt.hash)
    assert path.read_bytes() == b"# Memory\r\n\r\n- uno\r\n- dos\r\n- tres\r\n- three\r\n"
    assert (receipt.start_line, receipt.end_line) == (3, 5)


async def test_an_append_to_a_crlf_file_keeps_its_line_endings_and_a_bom_is_no_text(
    make_engine: MakeEngine, workspace: Path
) -> None:
    """A MEMORY.md kept by a Windows editor: a byte-order mark, then CRLF lines. An append wrote its lines with
    ``\\n`` alone, so the file mixed both; and the mark was the first character of what memory_get and the snippets
    showed, so the file's first line was no heading."""
    path = workspace / "MEMORY.md"
    path.write_bytes(b"\xef\xbb\xbf# Memoria\r\n\r\n- Alquiler: 1.150 EUR al mes.\r\n")
    async with make_engine(embedding={"provider": "none"}) as engine:
        receipt = await engine.append("- Seguro del coche: vence el 3 de marzo.\n- Matr\u00edcula 1234-BCD.", "long_term", "Coche")
        excerpt = await engine.read("MEMORY.md")
        hits = (await engine.search("alquiler seguro")).results
        appended = path.read_bytes()
        await engine.undo((await engine.history_entries("MEMORY.md"))[-1].id)  # the history holds the bytes written
    assert appended == (
        b"\xef\xbb\xbf# Memoria\r\n\r\n- Alquiler: 1.150 EUR al mes.\r\n\r\n## Coche\r\n\r\n"
        b"- Seguro del coche: vence el 3 de marzo.\r\n- Matr\xc3\xadcula 1234-BCD.\r\n"
    )
    assert (receipt.start_line, receipt.end_line) == (5, 8)
    assert excerpt.text.startswith("# Memoria\n") and hits[0].snippet.startswith("# Memoria\n")
    assert path.read_bytes() == b"\xef\xbb\xbf# Memoria\r\n\r\n- Alquiler: 1.150 EUR al mes.\r\n"


async def test_a_utf16_file_is_read_and_searched_and_refuses_writes_that_would_garble_it(
    make_engine: MakeEngine, workspace: Path
) -> None:
    """A MEMORY.md saved by Windows PowerShell 5 (``>`` writes UTF-16 with a byte-order mark, CRLF lines) read as
    UTF-8 was NUL-riddled nonsense that no search found, and an append added UTF-8 bytes that its editor showed
    as garbage. It is read as UTF-16 now, also as it grows; a write to it is refused with the fix."""
    path = workspace / "MEMORY.md"
    lines = ["# Notes", "", "- Billing runs on PostgreSQL 17.", "- Caf\u00e9 opens at 9."]
    lines += [f"- \u4e0a\u6d77 office, desk {n}" for n in range(1, 200)]  # 上 (U+4E0A) is the bytes 0a 4e: no newline
    before = "".join(f"{line}\r\n" for line in lines).encode("utf-16")
    path.write_bytes(before)
    (workspace / "memory" / "2026-11-02.md").write_bytes(b"\xfe\xff" + "- Ran the Munich backup\n".encode("utf-16-be"))
    async with make_engine(embedding={"provider": "none"}) as engine:
        await engine.sync()
        excerpt = await engine.read("MEMORY.md")
        [hit] = (await engine.search("postgresql billing")).results
        [log] = (await engine.search("munich backup")).results
        with pytest.raises(InputError, match=r"MEMORY.md is saved as UTF-16 .* save MEMORY.md as UTF-8"):
            await engine.append("- Deploys freeze on Fridays.", "long_term")
        with pytest.raises(InputError, match="UTF-16"):
            await engine.edit("MEMORY.md", "- Caf\u00e9 opens at 9.", "- Caf\u00e9 opens at 8.", excerpt.hash)
        assert path.read_bytes() == before
        with path.open("ab") as handle:  # PowerShell's `>>`: more UTF-16, no second byte-order mark
            handle.write("- Deploys freeze on Fridays.\r\n".encode("utf-16-le"))
        await engine.sync_paths(["MEMORY.md"])  # as the watcher does: a file that only grew re-chunks its end
        [grown] = (await engine.search("deploys fridays")).results
    assert excerpt.text.startswith("\n".join(lines[:9]) + "\n") and excerpt.total_lines == 203
    assert (hit.path, hit.start_line, hit.hash) == ("MEMORY.md", 1, excerpt.hash)
    assert "- Billing runs on PostgreSQL 17." in hit.snippet and "\x00" not in hit.snippet
    assert log.path == "memory/2026-11-02.md" and "- Ran the Munich backup" in log.snippet
    assert grown.end_line == 204 and grown.snippet.endswith("- \u4e0a\u6d77 office, desk 199\n- Deploys freeze on Fridays.")


async def test_other_bytes_stay_as_they_were_invalid_utf8_and_cjk_included(make_engine: MakeEngine, workspace: Path) -> None:
    path = workspace / "MEMORY.md"
    before = b"# Memory\n\n- caf\xe9 in Latin-1 \xff\xfe\n- \xe6\x9c\x8d\xe5\x8a\xa1\xe5\x99\xa8\xe5\x9c\xa8\xe4\xb8\x8a\xe6\xb5\xb7\n- tail \x80\n"
    path.write_bytes(before)
    os.chmod(path, 0o640)
    async with make_engine() as engine:
        await engine.edit("MEMORY.md", "服务器在上海", "服务器在北京")
    after = path.read_bytes()
    assert after == before.replace("服务器在上海".encode(), "服务器在北京".encode())
    assert path.stat().st_mode & 0o777 == 0o640


async def test_a_1_mb_file_is_edited_in_the_middle_byte_exact(make_engine: MakeEngine, workspace: Path) -> None:
    path = workspace / "MEMORY.md"
    lines = [f"- note {i:06d} about the project\n" for i in range(32_000)]
    before = "".join(lines).encode("utf-8")
    assert len(before) > 1_000_000
    path.write_bytes(before)
    async with make_engine() as engine:
        started = time.perf_counter()
        receipt = await engine.edit("MEMORY.md", "- note 016000 about the project\n", "- note 016000 was corrected\n")
        seconds = time.perf_counter() - started
    assert path.read_bytes() == before.replace(b"- note 016000 about the project\n", b"- note 016000 was corrected\n")
    assert receipt.start_line == 16_001
    assert seconds < 5, f"a 1 MB edit took {seconds:.2f}s"


@contextlib.contextmanager
def _file_size_limit(limit: int) -> Iterator[None]:
    """No file of this process grows past ``limit`` bytes: a write that would is cut short, the next refused (EFBIG),
    as a full disk cuts it. Only a sync test's main thread may ignore the signal the kernel sends then."""
    handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, handler)


def test_an_append_the_disk_cannot_take_leaves_no_half_note(workspace: Path) -> None:
    """A write cut short (a full disk, a file size limit) left "- A long note about" at the end of MEMORY.md."""
    memory = workspace / "MEMORY.md"
    memory.write_text(MEMORY, encoding="utf-8")
    file = Workspace(workspace).long_term_file()
    with _file_size_limit(len(MEMORY) + 20), pytest.raises(OSError, match="File too large: 'MEMORY.md'"):
        append_entry(file, "- A long note about the deploy freeze on Fridays, and why.\n")
    assert memory.read_text(encoding="utf-8") == MEMORY
    append_entry(file, "- Deploys freeze on Fridays.\n")
    assert memory.read_text(encoding="utf-8") == MEMORY + "\n- Deploys freeze on Fridays.\n"


def test_a_history_line_cut_short_loses_no_later_entry(workspace: Path) -> None:
    """A line cut by a crash or a full disk swallowed the next entry, written on to the end of it."""
    history = History(workspace)
    change = Change("MEMORY.md", 0, "", "- note\n", "a" * 16, "b" * 16, 1, 1)
    first = history.record(change, "append", "cli", "2026-12-07T06:00:00+00:00")
    before = history.path.read_bytes()
    with _file_size_limit(len(before) + 20), pytest.raises(OSError):
        history.record(change, "append", "cli", "2026-12-07T06:01:00+00:00")
    assert history.path.read_bytes() == before
    with history.path.open("ab") as handle:
        handle.write(b'{"id": "cut by a cra')
    last = history.record(change, "append", "cli", "2026-12-07T06:02:00+00:00")
    assert [entry.id for entry in history.entries()] == [first.id, last.id]


# History and undo -------------------------------------------------------------------------------


async def test_undo_reverses_an_edit_and_undoing_the_undo_redoes_it(make_engine: MakeEngine, memory: Path) -> None:
    async with make_engine() as engine:
        edit = await engine.edit("MEMORY.md", "- Deploys go out on Tuesdays\n", "")
        deleted = memory.read_bytes()
        assert b"Tuesdays" not in deleted
        undo = await engine.undo(edit.id)
        assert memory.read_text(encoding="utf-8") == MEMORY
        assert (await engine.search("Tuesdays")).results[0].path == "MEMORY.md"  # indexed again
        with pytest.raises(InputError, match=rf"{edit.id} is already undone \(by {undo.id}\); `memdex undo {undo.id}` redoes it"):
            await engine.undo(edit.id)
        await engine.undo(undo.id)
        assert memory.read_bytes() == deleted
        tools = [(e.tool, e.undoes) for e in await engine.history_entries("MEMORY.md")]
        assert tools == [("edit", None), ("undo", edit.id), ("undo", undo.id)]


async def test_undo_refuses_when_the_file_changed_since_and_says_what_changed(make_engine: MakeEngine, memory: Path) -> None:
    async with make_engine() as engine:
        first = await engine.edit("MEMORY.md", "alpha", "beta")
        second = await engine.edit("MEMORY.md", "Tuesdays", "Fridays")
        with pytest.raises(InputError, match=rf"later writes \({second.id}\) changed it; undo them first, newest first \({second.id}\)"):
            await engine.undo(first.id)
        memory.write_text(memory.read_text(encoding="utf-8") + "- by hand\n", encoding="utf-8")
        with pytest.raises(InputError, match=rf"MEMORY.md changed since {second.id} outside memdex"):
            await engine.undo(second.id)
        with pytest.raises(InputError, match="no history entry 'nope'"):
            await engine.undo("nope")
    assert memory.read_text(encoding="utf-8").endswith("- by hand\n")


async def test_appends_are_recorded_and_undone(make_engine: MakeEngine, memory: Path) -> None:
    async with make_engine() as engine:
        receipt = await engine.append("- Ana joined the team", target="long_term", client="tester")
        [entry] = await engine.history_entries()
        assert (entry.tool, entry.client, entry.change.new, entry.change.after) == (
            "append", "tester", "\n- Ana joined the team\n", receipt.hash,
        )
        assert receipt.hash == sha(memory)
        await engine.undo(entry.id)
    assert memory.read_text(encoding="utf-8") == MEMORY


# Concurrency and crashes ------------------------------------------------------------------------

_WRITER = """
import sys
from pathlib import Path
from memdex.memory_core.workspace.appender import append_entry, format_entry
from memdex.memory_core.workspace.editor import replace_text
from memdex.memory_core.workspace.files import Workspace
ws, kind, count = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
file = Workspace(ws).resolve("MEMORY.md")
for i in range(count):
    if kind == "append":
        append_entry(file, format_entry(f"- appended {i:04d}", None))
    elif kind == "edit":
        replace_text(file, f"[slot {i:04d}]", f"[done {i:04d}]", None)
    else:  # flip: replace A with B and back, forever, until killed
        replace_text(file, "STATE-A" if i % 2 == 0 else "STATE-B", "STATE-B" if i % 2 == 0 else "STATE-A", None)
"""


def _writer(workspace: Path, kind: str, count: int) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", _WRITER, str(workspace), kind, str(count)], stderr=subprocess.PIPE)


def test_an_appending_process_and_an_editing_process_lose_nothing(workspace: Path) -> None:
    """Edits rename a new file over the old one; an append waiting on the old file's lock must not land in
    the unlinked copy. Both processes run at once, 300 writes each: every append and every edit is there."""
    path = workspace / "MEMORY.md"
    path.write_text("# Memory\n\n" + "".join(f"[slot {i:04d}]\n" for i in range(300)), encoding="utf-8")
    writers = [_writer(workspace, "append", 300), _writer(workspace, "edit", 300)]
    for process in writers:
        _, err = process.communicate(timeout=120)
        assert process.returncode == 0, err.decode()
    text = path.read_text(encoding="utf-8")
    assert all(f"[done {i:04d}]" in text for i in range(300)) and "[slot" not in text
    assert all(text.count(f"- appended {i:04d}\n") == 1 for i in range(300))


async def test_two_agents_editing_at_once_one_wins_and_the_other_is_told(tmp_path: Path, memory: Path) -> None:
    """Two clients read the same hash and edit at once: one edit lands, the other is refused as stale."""
    workspace = memory.parent
    before = sha(memory)
    commands = [
        [sys.executable, "-m", "memdex.server.cli", "edit", "MEMORY.md", "--old", "alpha.example.com", "--new", new,
         "--hash", before, "--workspace", str(workspace), "--index", str(tmp_path / f"idx-{n}.sqlite")]
        for n, new in enumerate(["one.example.com", "two.example.com"])
    ]
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMDEX_")} | {"MEMDEX_EMBEDDING__PROVIDER": "none"}
    runs = [subprocess.Popen(c, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for c in commands]
    results = [(p.wait(timeout=60), *p.communicate()) for p in runs]
    codes = sorted(code for code, _, _ in results)
    assert codes == [0, 2], results
    loser = next(err for code, _, err in results if code == 2)
    assert loser.startswith("memdex: MEMORY.md changed since you read it") and loser.count("\n") == 1
    winner = next(out for code, out, _ in results if code == 0)
    new = "one" if "one" in memory.read_text(encoding="utf-8") else "two"
    assert memory.read_text(encoding="utf-8") == MEMORY.replace("alpha", new) and winner.startswith("edited MEMORY.md:3-3")


async def test_a_process_killed_mid_edit_leaves_the_old_or_new_file_and_the_next_start_sweeps(
    make_engine: MakeEngine, workspace: Path
) -> None:
    path = workspace / "MEMORY.md"
    filler = "".join(f"- filler line {i:07d}\n" for i in range(250_000))  # ~6 MB: the kill lands mid-write
    state_a = f"# Memory\n\nSTATE-A\n{filler}".encode()
    state_b = state_a.replace(b"STATE-A", b"STATE-B")
    path.write_bytes(state_a)
    left: list[str] = []
    for _ in range(20):
        writer = _writer(workspace, "flip", 1_000_000)
        deadline = time.monotonic() + 20
        while not _temp_files(workspace) and time.monotonic() < deadline:
            pass  # kill the moment an edit's temporary file appears: mid-write, or just before its rename
        writer.send_signal(signal.SIGKILL)
        writer.communicate()
        assert path.read_bytes() in (state_a, state_b)  # never torn
        if left := _temp_files(workspace):
            break
    assert left, "no kill landed mid-write in 20 tries; the sweep was not exercised"
    async with make_engine():
        pass
    assert not _temp_files(workspace)
    assert path.read_bytes() in (state_a, state_b)


def _temp_files(folder: Path) -> list[str]:
    return [name for name in os.listdir(folder) if TEMP_NAME.fullmatch(name)]


# Over MCP and on the command line ----------------------------------------------------------------


async def test_memory_edit_over_mcp_uses_the_hash_memory_get_and_search_return(make_engine: MakeEngine, memory: Path) -> None:
    engine = make_engine()
    async with Client(build_server(engine)) as client:
        await engine.sync()
        tool = next(t for t in (await client.list_tools()).tools if t.name == "memory_edit")
        assert tool.annotations.destructive_hint is True and tool.annotations.idempotent_hint is False
        assert tool.input_schema["required"] == ["path", "oldText"]
        got = (await client.call_tool("memory_get", {"path": "MEMORY.md"})).structured_content
        hit = (await client.call_tool("memory_search", {"query": "staging server"})).structured_content["results"][0]
        assert got["hash"] == hit["hash"] == sha(memory)
        edited = await client.call_tool(
            "memory_edit", {"path": "MEMORY.md", "oldText": "alpha", "newText": "beta", "expectedHash": hit["hash"]}
        )
        assert not edited.is_error and edited.structured_content["hash"] == sha(memory)
        assert edited.structured_content["pending"] is False
        stale = await client.call_tool(
            "memory_edit", {"path": "MEMORY.md", "oldText": "Tuesdays", "newText": "Fridays", "expectedHash": got["hash"]}
        )
        assert stale.is_error and "changed since you read it" in stale.content[0].text
        assert "Traceback" not in stale.content[0].text and "\n" not in stale.content[0].text
    [entry] = await _entries(make_engine)
    assert entry.client == "mcp"  # the in-process client's clientInfo name


async def test_two_agents_editing_at_once_over_mcp_one_wins_and_the_other_is_told(
    make_engine: MakeEngine, tmp_path: Path, memory: Path
) -> None:
    """Two MCP clients of two servers on one workspace edit the same line at the same time, both with the
    hash they read: exactly one edit lands, the other answer says the file changed since it was read."""
    engines = [make_engine(index_path=tmp_path / f"agent-{n}.sqlite") for n in range(2)]
    async with Client(build_server(engines[0])) as one, Client(build_server(engines[1])) as two:
        read = (await one.call_tool("memory_get", {"path": "MEMORY.md"})).structured_content["hash"]
        answers: dict[str, object] = {}

        async def edit(client: Client, name: str) -> None:
            arguments = {"path": "MEMORY.md", "oldText": "alpha", "newText": name, "expectedHash": read}
            answers[name] = await client.call_tool("memory_edit", arguments)

        async with anyio.create_task_group() as group:
            group.start_soon(edit, one, "one")
            group.start_soon(edit, two, "two")
    errors = {name: result.is_error for name, result in answers.items()}  # type: ignore[attr-defined]
    assert sorted(errors.values()) == [False, True], errors
    winner = next(name for name, failed in errors.items() if not failed)
    loser = next(name for name, failed in errors.items() if failed)
    assert "MEMORY.md changed since you read it" in answers[loser].content[0].text  # type: ignore[attr-defined]
    assert memory.read_text(encoding="utf-8") == MEMORY.replace("alpha", winner)


async def _entries(make_engine: MakeEngine) -> list:
    async with make_engine() as engine:
        return await engine.history_entries()


def _memdex(workspace: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMDEX_")} | {"MEMDEX_EMBEDDING__PROVIDER": "none"}
    command = [sys.executable, "-m", "memdex.server.cli", *args, "--workspace", str(workspace),
               "--index", str(workspace.parent / "cli.sqlite")]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=60)


def test_edit_history_and_undo_on_the_command_line(memory: Path) -> None:
    workspace = memory.parent
    edited = _memdex(workspace, "edit", "MEMORY.md", "--old", "alpha", "--new", "beta", "--hash", sha(memory))
    assert edited.returncode == 0, edited.stderr
    entry_id = edited.stdout.split("memdex undo ")[1].split("`")[0]
    listed = _memdex(workspace, "history")
    assert listed.returncode == 0 and f"{entry_id}  " in listed.stdout and "- alpha" in listed.stdout, listed
    assert "+ beta" in listed.stdout and "(cli)" in listed.stdout
    refused = _memdex(workspace, "edit", "MEMORY.md", "--old", "- ", "--new", "x")
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1 and "2 times" in refused.stderr
    undone = _memdex(workspace, "undo", entry_id)
    assert undone.returncode == 0, undone.stderr
    assert memory.read_text(encoding="utf-8") == MEMORY
    again = _memdex(workspace, "undo", entry_id)
    assert again.returncode == 2 and "already undone" in again.stderr
