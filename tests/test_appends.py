"""Appends re-chunk only a log's tail, and the index is exactly what a full re-chunk would give."""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
import random
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest
from helpers import eventually, writes_held

from memdex.memory_core import MemoryEngine
from memdex.memory_core.index import indexer
from memdex.memory_core.stores.records import FileChange, TailChange
from memdex.memory_core.text.chunking import Chunk, ChunkMark, chunk_markdown, rechunk_tail
from memdex.memory_core.textutil import sha256_hex
from memdex.memory_core.workspace import seen

pytestmark = pytest.mark.both_stores

Write = Callable[[str, str], Path]
MakeEngine = Callable[..., MemoryEngine]
LOG = "memory/2026-02-01.md"
WORDS = ["alpha", "deploy", "key", "owner", "漢字", "x" * 70, "", "## Heading", "# Title", "  ", "\r"]


def random_entry(rng: random.Random) -> str:
    """Paragraphs, headings, blank and long lines (split into segments), CJK, CRs, sometimes no final newline."""
    lines = [" ".join(rng.choice(WORDS) for _ in range(rng.choice([0, 1, 3, 10, 40]))) for _ in range(rng.randint(1, 6))]
    return rng.choice(["\n", "\n\n"]).join(lines) + rng.choice(["\n", "", "\n\n"])


@pytest.mark.sqlite_only
def test_a_re_chunked_tail_equals_a_full_re_chunk() -> None:
    """rechunk_tail's kept chunks plus its new ones are chunk_markdown's chunks, over many random appends."""
    rng = random.Random(7)
    resumed = 0
    for _ in range(150):
        tokens, overlap = rng.choice([(16, 0), (16, 5), (40, 10), (100, 30)])
        text = "".join(random_entry(rng) for _ in range(rng.randint(0, 12)))
        for _ in range(4):
            old = chunk_markdown(text, tokens, overlap)
            grown = text + random_entry(rng)
            known = [ChunkMark(i, c.start_line, c.end_line, c.hash) for i, c in enumerate(old)][-8:]
            found = rechunk_tail(grown, known, text.count("\n"), tokens, overlap)
            if found is not None:
                resumed += 1
                kept, after = found
                assert old[: len(old) - len(known) + kept + 1] + after == chunk_markdown(grown, tokens, overlap)
            text = grown
    assert resumed > 300  # the tail path is the common one, not a rare escape


def read(path: Path) -> str:
    return path.read_bytes().decode("utf-8")  # as memdex reads it: a "\r" stays a "\r"


async def indexed(engine: MemoryEngine, rel: str) -> list[tuple[int, Chunk]]:
    rows = await engine.index.read(engine.index.ops.chunks_of, [rel], 100_000)
    rows.sort(key=lambda row: row.id)  # the chunker's order (start lines repeat on a long line)
    return [(r.id, Chunk(r.start_line, r.end_line, r.text, sha256_hex(r.text))) for r in rows]


async def test_appends_keep_the_index_a_full_re_chunk_would_build(
    make_engine: MakeEngine, write: Write, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both stores: after each random append the log's chunks are chunk_markdown's, written by a tail
    replacement; an edit or a truncation falls back to a full re-chunk."""
    rng = random.Random(11)
    path = write(LOG, "# 2026-02-01\n\n" + "".join(random_entry(rng) for _ in range(30)))
    async with make_engine(chunking={"tokens": 40, "overlap": 10}) as engine:
        await engine.sync()
        ops, tails = engine.index.ops, []
        replace_tail = ops.replace_tail
        monkeypatch.setattr(ops, "replace_tail", lambda conn, tail: tails.append(tail) or replace_tail(conn, tail))
        for _ in range(40):
            with path.open("a", encoding="utf-8", newline="") as handle:
                handle.write(random_entry(rng))
            await engine.syncer.sync_paths([LOG], until_current=True)
            assert [chunk for _, chunk in await indexed(engine, LOG)] == chunk_markdown(read(path), 40, 10)
        assert len(tails) >= 35  # the tail path is the one that ran

        for change in (lambda t: t.replace("alpha", "omega", 1) + "more\n", lambda t: t[: len(t) // 2]):
            path.write_bytes(change(read(path)).encode("utf-8"))
            await engine.syncer.sync_paths([LOG], until_current=True)
            text = read(path)
            assert [chunk for _, chunk in await indexed(engine, LOG)] == chunk_markdown(text, 40, 10)


async def test_appends_that_hash_only_their_own_bytes_keep_the_index_exact(
    make_engine: MakeEngine, write: Write, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both stores: an append to a log as this process last saw it hashes and counts only its own bytes,
    and after each one the log's chunks and hash are a full index's. A same-size rewrite that keeps the
    mtime (here, and from another process), a replacement and another process's append each change the
    file under the remembered state: the next append reads the file whole and the index stays exact."""
    rng = random.Random(5)
    path = write(LOG, "# 2026-02-01\n\n" + "".join(random_entry(rng) for _ in range(30)))
    day = dt.datetime(2026, 2, 1, 12, tzinfo=dt.UTC).timestamp()
    async with make_engine(chunking={"tokens": 40, "overlap": 10}, clock=lambda: day) as engine:
        await engine.sync()
        whole: list[str] = []  # whole-file hashes, by the appender or the indexer
        hash_blocks, hash_data = seen.hashed, indexer._hash
        monkeypatch.setattr(seen, "hashed", lambda blocks, stamp: whole.append("appender") or hash_blocks(blocks, stamp))
        monkeypatch.setattr(indexer, "_hash", lambda data, old: whole.append("indexer") or hash_data(data, old))
        tail_reads: list[bool] = []  # appends indexed having read only the log's last lines
        appended = indexer._appended
        monkeypatch.setattr(indexer, "_appended", lambda *a: tail_reads.append(bool(found := appended(*a))) or found)

        async def append_and_check(n: int) -> None:
            await engine.append(f"Note {n}: " + random_entry(rng).replace("\r", ""))
            data = path.read_bytes()
            assert [chunk for _, chunk in await indexed(engine, LOG)] == chunk_markdown(data.decode("utf-8"), 40, 10)
            states = await engine.index.read(engine.index.ops.file_states)
            assert (states[LOG].hash, states[LOG].size) == (sha256_hex(data), len(data))

        for n in range(20):
            await append_and_check(n)
        assert whole == ["appender"]  # the first append read the log whole, the others proved it unchanged
        # A store that keeps the files' text is given the whole text; SQLite reads the log's end only.
        assert tail_reads == ([] if engine.index.ops.KEEPS_TEXT else [True] * 20)

        def same_size_edit(data: bytes) -> bytes:  # an early chunk changes: a tail re-chunk would miss it
            at = data.index(b"\n\n") + 2
            return data[:at] + bytes(b ^ 1 if 97 <= b <= 122 else b for b in data[at : at + 40]) + data[at + 40 :]

        def in_place(new: bytes) -> None:
            st = path.stat()
            with path.open("r+b") as handle:
                handle.write(new)
            os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))  # the same size and mtime: only the ctime moves

        def elsewhere(code: str) -> None:
            subprocess.run([sys.executable, "-c", code, str(path)], check=True, timeout=60)

        def replace() -> None:  # a new inode, as an editor's save leaves
            replacement = path.with_name("replacement.tmp")
            replacement.write_bytes(same_size_edit(path.read_bytes()))
            os.replace(replacement, path)

        changes: list[Callable[[], None]] = [
            lambda: in_place(same_size_edit(path.read_bytes())),
            lambda: elsewhere(REWRITE_KEEPING_MTIME),
            replace,
            lambda: elsewhere("import sys; open(sys.argv[1], 'a').write('From another process.\\n')"),
        ]
        for n, change in enumerate(changes, 100):
            whole.clear()
            change()
            await append_and_check(n)
            # The remembered state no longer matches: the appender hashes the file whole, and so does the
            # indexer, whose indexed state is not one the appender saw the file grow from.
            assert whole == ["appender", "indexer"]
            whole.clear()
            await append_and_check(n + 50)
            assert whole == []  # and the next append is fast again


async def test_a_change_no_stamp_shows_is_caught_by_a_sync_or_the_next_full_sync(
    make_engine: MakeEngine, write: Write, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both stores: a same-size rewrite within the timestamp tick of memdex's own write leaves the stamp as it
    was (simulated here by re-stamping what is remembered). A sync of the file, which did not grow, hashes it
    whole. An append after it trusts the remembered bytes and misses the rewrite, so the index records no
    trusted mtime for it: the next full sync hashes the log and corrects it, even with mtimes trusted at once."""
    monkeypatch.setattr(indexer, "RACY_SECONDS", 0.0)
    rng = random.Random(9)
    path = write(LOG, "# 2026-02-01\n\n" + "".join(random_entry(rng) for _ in range(30)))
    key = Path(os.path.realpath(path))
    day = dt.datetime(2026, 2, 1, 12, tzinfo=dt.UTC).timestamp()

    async def exact(engine: MemoryEngine) -> bool:
        data = path.read_bytes()
        states = await engine.index.read(engine.index.ops.file_states)
        chunks = [chunk for _, chunk in await indexed(engine, LOG)]
        return chunks == chunk_markdown(data.decode("utf-8"), 40, 10) and states[LOG].hash == sha256_hex(data)

    def unseen_rewrite(flip: int) -> None:
        data = path.read_bytes()
        with path.open("r+b") as handle:
            handle.seek(16)
            handle.write(bytes(b ^ flip if 97 <= b <= 122 else b for b in data[16:56]))
        remembered = seen.recall(key)
        assert remembered is not None
        fd = os.open(path, os.O_RDONLY)
        try:
            seen.remember(key, dataclasses.replace(remembered, stamp=seen.stamp_of(fd)))
        finally:
            os.close(fd)

    async with make_engine(chunking={"tokens": 40, "overlap": 10}, clock=lambda: day) as engine:
        await engine.sync()
        await engine.append("A first note.")
        unseen_rewrite(1)
        await engine.syncer.sync_paths([LOG], until_current=True)
        assert await exact(engine)  # the log did not grow: hashed whole

        seen.forget(key)
        await engine.append("A second note.")  # the log is read whole and remembered as indexed
        unseen_rewrite(2)
        await engine.append("A third note.")
        assert not await exact(engine)  # the limit of a stamp: this append trusted the remembered bytes
        await engine.sync()
        assert await exact(engine)


# Another process rewrites the log's first entry in place, same size, and puts its mtime back.
REWRITE_KEEPING_MTIME = """
import os, sys
st = os.stat(sys.argv[1])
with open(sys.argv[1], "r+b") as f:
    f.seek(16)
    f.write(b"x" * 24)
os.utime(sys.argv[1], ns=(st.st_atime_ns, st.st_mtime_ns))
"""


async def test_a_tail_read_before_another_write_changes_nothing(make_engine: MakeEngine, write: Write) -> None:
    """Both stores: a tail replacement prepared against an index state another write has since replaced is
    refused (None, nothing written), so the caller re-reads the file instead of corrupting its chunks."""
    rng = random.Random(3)
    path = write(LOG, "# 2026-02-01\n\n" + "".join(random_entry(rng) for _ in range(30)))
    async with make_engine(chunking={"tokens": 40, "overlap": 10}) as engine:
        await engine.sync()
        ops = engine.index.ops
        tail = (await engine.index.read(ops.indexed_tails, [LOG], 8))[LOG]
        change = TailChange(FileChange(LOG, "memory", tail.state, []), tail.state, tail.chunks[-2], (tail.chunks[-1],))
        with path.open("a", encoding="utf-8") as handle:
            handle.write("One more note.\n")
        await engine.syncer.sync_paths([LOG], until_current=True)
        before = await indexed(engine, LOG)

        def attempt(conn: object) -> list[int] | None:
            with ops.transaction(conn):
                return ops.replace_tail(conn, change)

        assert await engine.index.write(attempt) is None
        assert await indexed(engine, LOG) == before
        assert [chunk for _, chunk in before] == chunk_markdown(read(path), 40, 10)


async def test_appends_waiting_for_the_writer_share_one_pass(make_engine: MakeEngine, monkeypatch: pytest.MonkeyPatch) -> None:
    """Both stores: appends that arrive while a targeted sync waits for the writer join the next pass (two
    passes for eight appends, not eight), and each is searchable when its append returns."""
    async with make_engine() as engine:
        await engine.sync()
        syncer, passes = engine.syncer, []
        run_paths = syncer._run_paths
        monkeypatch.setattr(syncer, "_run_paths", lambda rels, current: passes.append(rels) or run_paths(rels, current))
        missed: list[str] = []

        async def note(n: int) -> None:
            await engine.append(f"Note zq{n}shared from writer {n}.")
            if not (await engine.search(f"zq{n}shared")).results:
                missed.append(str(n))

        with writes_held(engine) as let_go:
            async with anyio.create_task_group() as tg:
                for n in range(8):
                    tg.start_soon(note, n)
                await eventually(lambda: _appended(engine, 8), "every note written to the log")
                await anyio.sleep(0.3)  # their syncs queue behind the first, which waits for the writer
                let_go()
        assert missed == []
        assert 2 <= len(passes) <= 3  # one pass each would be eight


async def _appended(engine: MemoryEngine, count: int) -> bool:
    logs = list((engine.settings.workspace / "memory").glob("*.md"))
    return sum(log.read_text(encoding="utf-8").count("shared from writer") for log in logs) == count
