"""Reading exact lines of memory files, and append-only writes that stay correct under concurrency."""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Callable
from pathlib import Path

import anyio
import anyio.to_thread
import pytest

from memdex.memory_core import MemoryEngine
from memdex.memory_core.errors import InputError, PathError
from memdex.memory_core.limits import MAX_APPEND_BYTES, MAX_HEADING_CHARS, MAX_READ_CHARS, MAX_READ_LINES
from memdex.memory_core.models import Excerpt
from memdex.memory_core.textutil import split_lines
from memdex.memory_core.workspace import appender, seen
from memdex.memory_core.workspace.appender import append_entry, format_entry
from memdex.memory_core.workspace.files import Workspace
from memdex.memory_core.workspace.reader import read_excerpt

pytestmark = pytest.mark.both_stores

Write = Callable[[str, str], Path]


def excerpt(workspace: Path, rel: str, from_line: int = 1, lines: int | None = None) -> Excerpt:
    return read_excerpt(Workspace(workspace).resolve(rel), from_line, lines)


def read_all(workspace: Path, rel: str, lines: int | None = None) -> tuple[list[str], list[Excerpt]]:
    """Follow nextFrom to the end; returns every line read and each answer."""
    answers: list[Excerpt] = []
    out: list[str] = []
    next_from: int | None = 1
    while next_from is not None:
        answer = excerpt(workspace, rel, next_from, lines)
        answers.append(answer)
        out += answer.text.split("\n")
        next_from = answer.next_from
        assert len(answers) < 1000
    return out, answers


# read_excerpt ----------------------------------------------------------------------------------


@pytest.fixture
def ten_lines(write: Write) -> str:
    write("memory/ten.md", "".join(f"line {i}\n" for i in range(1, 11)))
    return "memory/ten.md"


def test_from_and_lines_select_exactly_those_lines(workspace: Path, ten_lines: str) -> None:
    answer = excerpt(workspace, ten_lines, 3, 4)
    assert answer.text == "line 3\nline 4\nline 5\nline 6"
    assert (answer.from_, answer.to, answer.total_lines, answer.next_from, answer.note) == (3, 6, 10, 7, None)
    assert answer.path == "memory/ten.md"


def test_next_from_continues_a_read_the_lines_limit_stopped(workspace: Path, ten_lines: str) -> None:
    """nextFrom is null only at the end of the file: a `lines` limit that stops early leaves it set, so
    following it in steps of 3 reads every line once."""
    lines, answers = read_all(workspace, ten_lines, 3)
    assert lines == [f"line {i}" for i in range(1, 11)]
    assert [(a.from_, a.to, a.next_from) for a in answers] == [(1, 3, 4), (4, 6, 7), (7, 9, 10), (10, 10, None)]


def test_without_lines_the_read_goes_to_the_end(workspace: Path, ten_lines: str) -> None:
    answer = excerpt(workspace, ten_lines, 8)
    assert answer.text == "line 8\nline 9\nline 10"
    assert (answer.from_, answer.to, answer.next_from) == (8, 10, None)


def test_lines_past_the_end_are_clamped_to_the_last_line(workspace: Path, ten_lines: str) -> None:
    answer = excerpt(workspace, ten_lines, 10, 50)
    assert answer.text == "line 10"
    assert (answer.from_, answer.to, answer.next_from) == (10, 10, None)


def test_the_excerpt_json_uses_camel_case_and_from(workspace: Path, ten_lines: str) -> None:
    data = excerpt(workspace, ten_lines, 2, 1).model_dump(by_alias=True)
    assert data == {
        "path": "memory/ten.md", "text": "line 2", "from": 2, "to": 2, "totalLines": 10, "nextFrom": 3, "note": None,
        "hash": hashlib.sha256((workspace / ten_lines).read_bytes()).hexdigest()[:16],
    }


def test_a_read_is_capped_at_200_lines_and_next_from_continues_it(workspace: Path, write: Write) -> None:
    all_lines = [f"entry {i}" for i in range(1, 501)]
    write("memory/long.md", "\n".join(all_lines) + "\n")
    first = excerpt(workspace, "memory/long.md")
    assert (first.from_, first.to, first.next_from, first.total_lines) == (1, MAX_READ_LINES, 201, 500)
    assert first.note is not None and "from=201" in first.note
    lines, answers = read_all(workspace, "memory/long.md")
    assert [(a.from_, a.to) for a in answers] == [(1, 200), (201, 400), (401, 500)]
    assert answers[-1].next_from is None and answers[-1].note is None
    assert lines == all_lines


def test_an_explicit_lines_above_200_is_still_capped_and_continues(workspace: Path, write: Write) -> None:
    write("memory/long.md", "".join(f"entry {i}\n" for i in range(1, 501)))
    answer = excerpt(workspace, "memory/long.md", 10, 300)
    assert (answer.from_, answer.to, answer.next_from) == (10, 209, 210)


def test_a_read_is_capped_at_16000_characters_and_next_from_continues_it(workspace: Path, write: Write) -> None:
    all_lines = [f"{i:05d}" + "x" * 95 for i in range(1, 301)]  # 100 characters each
    write("memory/wide.md", "\n".join(all_lines) + "\n")
    first = excerpt(workspace, "memory/wide.md")
    assert len(first.text) <= MAX_READ_CHARS
    assert first.to == MAX_READ_CHARS // 101  # 158 lines of 100 characters plus a newline
    assert first.next_from == first.to + 1
    lines, answers = read_all(workspace, "memory/wide.md")
    assert lines == all_lines
    assert all(len(a.text) <= MAX_READ_CHARS for a in answers)


def test_a_single_line_longer_than_16000_characters_is_cut_with_a_note(workspace: Path, write: Write) -> None:
    long_line = "".join(chr(ord("a") + i % 26) for i in range(20_000))
    write("memory/huge.md", long_line + "\nshort line\n")
    answer = excerpt(workspace, "memory/huge.md")
    assert answer.text == long_line[:MAX_READ_CHARS]
    assert (answer.from_, answer.to, answer.next_from, answer.total_lines) == (1, 1, 2, 2)
    assert answer.note is not None and "cut" in answer.note and "line 1" in answer.note
    rest = excerpt(workspace, "memory/huge.md", answer.next_from)
    assert (rest.text, rest.from_, rest.to, rest.next_from) == ("short line", 2, 2, None)


def test_a_long_line_after_other_lines_ends_the_answer_before_it(workspace: Path, write: Write) -> None:
    write("memory/mixed.md", "first\nsecond\n" + "y" * 20_000 + "\n")
    answer = excerpt(workspace, "memory/mixed.md")
    assert (answer.text, answer.to, answer.next_from) == ("first\nsecond", 2, 3)
    third = excerpt(workspace, "memory/mixed.md", 3)
    assert third.text == "y" * MAX_READ_CHARS and third.note is not None


def test_a_line_of_exactly_16000_characters_is_returned_without_a_cut_note(workspace: Path, write: Write) -> None:
    write("memory/exact.md", "z" * MAX_READ_CHARS + "\n")
    answer = excerpt(workspace, "memory/exact.md")
    assert answer.text == "z" * MAX_READ_CHARS
    assert answer.note is None


@pytest.mark.parametrize(("from_line", "lines"), [(11, None), (100, 5), (0, None), (-1, None), (1, 0), (2, -3)])
def test_impossible_line_numbers_raise_input_error(workspace: Path, ten_lines: str, from_line: int, lines: int | None) -> None:
    with pytest.raises(InputError):
        excerpt(workspace, ten_lines, from_line, lines)


def test_from_past_the_end_names_the_line_count(workspace: Path, ten_lines: str) -> None:
    with pytest.raises(InputError, match="has 10 lines"):
        excerpt(workspace, ten_lines, 11)


def test_an_empty_file_reads_as_no_lines(workspace: Path, write: Write) -> None:
    write("memory/empty.md", "")
    answer = excerpt(workspace, "memory/empty.md")
    assert (answer.text, answer.from_, answer.to, answer.total_lines, answer.next_from) == ("", 1, 0, 0, None)
    with pytest.raises(InputError):
        excerpt(workspace, "memory/empty.md", 2)


def test_crlf_and_invalid_utf8_files_read_as_clean_lines(workspace: Path) -> None:
    (workspace / "memory" / "win.md").write_bytes(b"one\r\ntwo \xff\xfe\r\nthree\r\n")
    answer = excerpt(workspace, "memory/win.md")
    assert answer.text == "one\ntwo \ufffd\ufffd\nthree"
    assert answer.total_lines == 3


async def test_engine_read_applies_the_path_policy_and_reads_from_disk(
    make_engine: Callable[..., MemoryEngine], write: Write
) -> None:
    write("MEMORY.md", "alpha\nbeta\ngamma\n")
    async with make_engine() as engine:
        answer = await engine.read("MEMORY.md", 2, 1)
        assert (answer.text, answer.from_, answer.to) == ("beta", 2, 2)
        with pytest.raises(PathError):
            await engine.read("../outside.md")
        with pytest.raises(PathError):
            await engine.read("memory/missing.md")
        with pytest.raises(InputError):
            await engine.read("MEMORY.md", 0)


# format_entry ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "heading"),
    [
        ("", None),
        ("   \n\t\n", None),
        ("note with \x00 nul", None),
        ("note", "heading \x00 with nul"),
        ("x" * (MAX_APPEND_BYTES + 1), None),
        ("中" * (MAX_APPEND_BYTES // 3 + 1), None),  # fewer characters than the limit, more bytes
        ("note", "first line\nsecond line"),
        ("note", "h" * (MAX_HEADING_CHARS + 1)),
        ("caf\udce9 (a Latin-1 byte from the command line)", None),
        ("note", "caf\udce9"),
    ],
    ids=["empty", "whitespace", "nul", "nul-heading", "too-big", "too-many-bytes", "multiline-heading", "long-heading",
         "not-unicode", "not-unicode-heading"],
)
def test_format_entry_rejects_unusable_appends(text: str, heading: str | None) -> None:
    with pytest.raises(InputError):
        format_entry(text, heading)


def test_format_entry_accepts_exactly_the_byte_limit() -> None:
    assert format_entry("x" * MAX_APPEND_BYTES, None) == "x" * MAX_APPEND_BYTES + "\n"


def test_format_entry_trims_trailing_space_and_adds_a_level_two_heading() -> None:
    assert format_entry("\n  hello  \nworld\t\n\n", "## Decision ") == "## Decision\n\n  hello\nworld\n"
    assert format_entry("one\r\ntwo\r\n", None) == "one\ntwo\n"
    assert format_entry("body", "   ") == "body\n"
    assert format_entry("body", "#") == "body\n"


# append_entry ----------------------------------------------------------------------------------


async def test_the_first_daily_append_creates_the_file_under_a_date_title(
    make_engine: Callable[..., MemoryEngine], workspace: Path
) -> None:
    async with make_engine() as engine:
        day = engine.today().isoformat()
        receipt = await engine.append("Decided to use Postgres 16.")
        path = workspace / "memory" / f"{day}.md"
        assert path.read_text(encoding="utf-8") == f"# {day}\n\nDecided to use Postgres 16.\n"
        assert (receipt.path, receipt.start_line, receipt.end_line, receipt.created, receipt.duplicate) == (
            f"memory/{day}.md", 3, 3, True, False,
        )
        assert receipt.bytes_written == len(path.read_bytes())

        second = await engine.append("Line one\nLine two", heading="Follow-up")
        assert path.read_text(encoding="utf-8") == (
            f"# {day}\n\nDecided to use Postgres 16.\n\n## Follow-up\n\nLine one\nLine two\n"
        )
        assert (second.start_line, second.end_line, second.created) == (5, 8, False)

        hits = (await engine.search("postgres")).results
        assert [(h.path, h.start_line) for h in hits] == [(f"memory/{day}.md", 1)]


async def test_a_long_term_append_creates_memory_md_without_a_title(
    make_engine: Callable[..., MemoryEngine], workspace: Path
) -> None:
    async with make_engine() as engine:
        receipt = await engine.append("Alice owns the billing service.", target="long_term")
    assert (workspace / "MEMORY.md").read_text() == "Alice owns the billing service.\n"
    assert (receipt.path, receipt.start_line, receipt.end_line, receipt.created) == ("MEMORY.md", 1, 1, True)


@pytest.mark.parametrize(
    "existing",
    [
        b"",
        b"# Title\n",
        b"# Title\n\n",
        b"# Title\nno final newline",
        b"# Title\r\nwindows line\r\n",
        b"# Title\n\xff\xfe not utf-8 \xc3\n",
        "# 标题\n中文 😀\n".encode(),
    ],
    ids=["empty", "newline", "blank-line", "no-newline", "crlf", "invalid-utf8", "unicode"],
)
def test_append_never_rewrites_existing_bytes_and_reports_the_new_lines(workspace: Path, existing: bytes) -> None:
    path = workspace / "MEMORY.md"
    path.write_bytes(existing)
    file = Workspace(workspace).resolve("MEMORY.md")
    entry = format_entry("first added line\nsecond added line", "Added")
    receipt = append_entry(file, entry)
    after = path.read_bytes()
    assert after.startswith(existing)
    assert receipt.bytes_written == len(after) - len(existing)
    lines = split_lines(after.decode("utf-8", errors="replace"))
    assert lines[receipt.start_line - 1 : receipt.end_line] == [
        "## Added", "", "first added line", "second added line",
    ]
    assert receipt.end_line == len(lines)


def test_the_same_text_is_not_appended_twice(workspace: Path) -> None:
    file = Workspace(workspace).resolve("memory/2026-01-01.md", must_exist=False)
    first = append_entry(file, format_entry("Remember the milk.", None), title="# 2026-01-01")
    snapshot = file.path.read_bytes()
    second = append_entry(file, format_entry("Remember the milk.", None), title="# 2026-01-01")
    assert (first.duplicate, first.created) == (False, True)
    assert (second.duplicate, second.bytes_written, second.created) == (True, 0, False)
    assert file.path.read_bytes() == snapshot
    assert snapshot.decode().count("Remember the milk.") == 1


def test_a_note_contained_in_a_longer_existing_note_is_still_appended(workspace: Path) -> None:
    path = workspace / "MEMORY.md"
    path.write_text("Use Postgres 16 for the main database, not MySQL.\n")
    receipt = append_entry(Workspace(workspace).resolve("MEMORY.md"), format_entry("Use Postgres", None))
    assert receipt.duplicate is False
    assert path.read_text().splitlines()[-1] == "Use Postgres"


async def test_a_short_note_matching_part_of_the_date_title_is_still_appended(
    make_engine: Callable[..., MemoryEngine], workspace: Path
) -> None:
    async with make_engine() as engine:
        year = str(engine.today().year)
        await engine.append("Kick-off meeting.")
        receipt = await engine.append(year)
    assert receipt.duplicate is False


def test_a_short_note_repeated_after_other_entries_is_appended_again(workspace: Path) -> None:
    file = Workspace(workspace).resolve("memory/2026-01-01.md", must_exist=False)
    notes = ["Tests pass.", "Fixed the parser.", "Refactored the cache.", "Updated the docs.", "Tests pass."]
    receipts = [append_entry(file, format_entry(note, None), title="# 2026-01-01") for note in notes]
    assert [r.duplicate for r in receipts] == [False] * 5
    assert split_lines(file.path.read_text()).count("Tests pass.") == 2


def test_a_repeat_of_one_of_the_last_three_entries_points_at_the_earlier_copy(workspace: Path) -> None:
    path = workspace / "MEMORY.md"
    file = Workspace(workspace).resolve("MEMORY.md", must_exist=False)
    decision = format_entry("Use Postgres 16.\nNot MySQL.", "Database")
    first = append_entry(file, decision)
    append_entry(file, format_entry("Alice owns billing.", None))
    append_entry(file, format_entry("Bob owns search.", None))
    snapshot = path.read_bytes()
    again = append_entry(file, decision)
    assert (again.duplicate, again.bytes_written, again.created) == (True, 0, False)
    assert (again.start_line, again.end_line) == (first.start_line, first.end_line) == (1, 4)
    assert path.read_bytes() == snapshot
    assert split_lines(snapshot.decode())[again.start_line - 1 : again.end_line] == split_lines(decision)


def test_a_line_inside_a_longer_paragraph_is_not_a_repeat(workspace: Path) -> None:
    path = workspace / "MEMORY.md"
    path.write_text("# Notes\n\nRan the suite.\nTests pass.\n")
    receipt = append_entry(Workspace(workspace).resolve("MEMORY.md"), format_entry("Tests pass.", None))
    assert receipt.duplicate is False
    assert path.read_text().endswith("Tests pass.\n\nTests pass.\n")


@pytest.mark.parametrize("ending", [b"\n", b"\r\n", b""], ids=["lf", "crlf", "no-final-newline"])
def test_receipt_lines_are_exact_in_a_log_far_larger_than_the_tail_read(
    workspace: Path, monkeypatch: pytest.MonkeyPatch, ending: bytes
) -> None:
    monkeypatch.setattr(appender, "_BLOCK", 1000)  # many blocks, split anywhere (inside a CRLF, a character)
    path = workspace / "memory" / "big.md"
    lines = [b"# Big log", b""] + [b"line %d caf\xc3\xa9 \xff" % i for i in range(12_000)]
    path.write_bytes((ending or b"\n").join(lines) + ending)
    assert path.stat().st_size > 3 * appender.TAIL_BYTES
    file = Workspace(workspace).resolve("memory/big.md")
    one, two, three = format_entry("One.", None), format_entry("Two\n\nparagraphs.", "Heading"), format_entry("3", None)
    receipts = []
    for entry in [one, two, three, two, one]:
        receipt = append_entry(file, entry)
        receipts.append(receipt)
        on_disk = split_lines(path.read_bytes().decode("utf-8", errors="replace"))
        assert on_disk[receipt.start_line - 1 : receipt.end_line] == split_lines(entry)
        assert receipt.duplicate or receipt.end_line == len(on_disk)
    assert [r.duplicate for r in receipts] == [False, False, False, True, False]
    assert receipts[3].start_line == receipts[1].start_line


def test_a_remembered_line_count_serves_only_the_file_this_process_left(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The next append to a file as our last append left it skips the line count; a file grown or rewritten
    (even to the same size and mtime) by anyone else is counted again, so receipts stay exact."""
    counts: list[int] = []
    hashed = seen.hashed
    monkeypatch.setattr(seen, "hashed", lambda blocks, stamp: counts.append(stamp[2]) or hashed(blocks, stamp))
    path = workspace / "MEMORY.md"
    path.write_bytes(b"# Notes\n\nab cd\n")
    file = Workspace(workspace).resolve("MEMORY.md")

    def check(text: str) -> None:
        receipt = append_entry(file, format_entry(text, None))
        on_disk = split_lines(path.read_bytes().decode("utf-8"))
        assert on_disk[receipt.start_line - 1 : receipt.end_line] == [text] and receipt.end_line == len(on_disk)

    check("first")
    check("second")
    assert len(counts) == 1  # the second append trusted the count the first one left
    with path.open("ab") as handle:
        handle.write(b"\nwritten by another process\n")
    check("third")
    data = path.read_bytes()
    path.write_bytes(data.replace(b"ab cd", b"ab\ncd", 1))  # the same size, one more line
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))  # its mtime tells it from our last append
    check("fourth")
    assert len(counts) == 3
    st = path.stat()
    data = path.read_bytes()
    path.write_bytes(data.replace(b"first", b"fi\nst", 1))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))  # the same size and mtime: its ctime tells it
    check("fifth")
    assert len(counts) == 4


def test_append_refuses_to_follow_a_symlink_planted_at_the_target(workspace: Path, tmp_path: Path) -> None:
    victim = tmp_path / "victim.md"
    victim.write_text("do not touch\n")
    target = workspace / "memory" / "2026-01-01.md"
    file = Workspace(workspace).resolve("memory/2026-01-01.md", must_exist=False)
    target.symlink_to(victim)  # appears after the path check
    with pytest.raises(PathError, match="symlink"):
        append_entry(file, format_entry("note", None), title="# 2026-01-01")
    assert victim.read_text() == "do not touch\n"


async def test_engine_append_rejects_bad_targets_and_read_only_mode(
    make_engine: Callable[..., MemoryEngine], workspace: Path
) -> None:
    async with make_engine() as engine:
        with pytest.raises(InputError):
            await engine.append("note", target="elsewhere")  # type: ignore[arg-type]
        with pytest.raises(InputError):
            await engine.append("   ")
    async with make_engine(read_only=True) as engine:
        with pytest.raises(InputError, match="read-only"):
            await engine.append("note")
    assert list((workspace / "memory").iterdir()) == []


# Concurrency -----------------------------------------------------------------------------------


async def test_concurrent_engine_and_thread_appends_each_land_exactly_once(
    make_engine: Callable[..., MemoryEngine], workspace: Path
) -> None:
    # fixed-width ids: no entry is a substring of another
    engine_entries = [f"[engine {i:03d}] café 中文 😀 note about topic{i:03d}" for i in range(50)]
    thread_entries = {t: [f"[thread {t:02d}-{n:03d}] ünïcödé 日本語 🚀 line" for n in range(25)] for t in range(8)}
    errors: list[BaseException] = []

    async with make_engine() as engine:
        day = engine.today()
        file = Workspace(workspace).resolve(f"memory/{day.isoformat()}.md", must_exist=False)
        start = threading.Barrier(9)

        def writer(t: int) -> None:
            try:
                start.wait(timeout=10)
                for entry in thread_entries[t]:
                    append_entry(file, format_entry(entry, None), title=f"# {day.isoformat()}")
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=writer, args=(t,)) for t in range(8)]
        for thread in threads:
            thread.start()
        async with anyio.create_task_group() as tg:
            await anyio.to_thread.run_sync(start.wait, 10)
            for entry in engine_entries:
                tg.start_soon(engine.append, entry)
        for thread in threads:
            await anyio.to_thread.run_sync(thread.join, 30)
        assert not errors
        assert not any(thread.is_alive() for thread in threads)

        await engine.sync()
        hits = (await engine.search("topic007")).results
        assert hits and hits[0].path == f"memory/{day.isoformat()}.md"

    data = file.path.read_bytes()
    text = data.decode("utf-8")  # strict: raises on any torn multi-byte character
    assert text.startswith(f"# {day.isoformat()}\n\n")
    assert text.count(f"# {day.isoformat()}") == 1
    everything = engine_entries + [e for entries in thread_entries.values() for e in entries]
    for entry in everything:
        assert text.count(entry) == 1, entry
    body = [line for line in split_lines(text)[1:] if line]
    assert sorted(body) == sorted(everything)  # nothing else, nothing torn
