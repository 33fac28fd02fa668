"""The index under faults, in one process: held locks, damaged files, stale shadows, a rebuild racing writes.

The index is derived data, but it is never thrown away for a reason that is not damage: a lock held
by another connection gives a clear IndexBusy and leaves the file (its inode, bytes and embedding
cache) as it was. Damage is repaired in place from the Markdown. The helpers here are shared with
tests/test_index_processes.py, which runs the same faults through real ``memdex`` processes.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import sqlite3
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from bench.workspace_gen import write_workspace
from memdex.memory_core import MemoryEngine
from memdex.memory_core.errors import IndexBusy, IndexCorrupt
from memdex.memory_core.stores.sqlite import db, schema
from memdex.memory_core.stores.sqlite import ops as store

MakeEngine = Callable[..., MemoryEngine]

#: Notes with words found nowhere else in a generated workspace: (path, text, query).
NOTES = (
    ("MEMORY.md", "# Memory\n\n- We chose PostgreSQL after the quetzal-flamingo benchmark.\n", "quetzal flamingo"),
    (
        "memory/2026-07-01.md",
        "# 2026-07-01\n\n- Build flag YN0028 stays off for the axolotl release.\n",
        "axolotl YN0028",
    ),
)
CORRUPTIONS = ("random_file", "random_page", "zeroed_page", "last_page", "truncated")
SHADOW_MARKERS = (".rebuild-", ".tmp-", ".backup-")


def fill_workspace(root: Path, files: int = 40) -> None:
    """A generated workspace (several index pages of chunks) plus the NOTES."""
    write_workspace(root, files=files)
    for rel, text, _ in NOTES:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")


def file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def checkpoint(index: Path) -> None:
    """Fold the WAL into the main file (no memdex connection may be open in this process)."""
    conn = db.driver().module.connect(str(index), isolation_level=None)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.execute("PRAGMA journal_mode = DELETE")  # drops the -wal and -shm
    finally:
        conn.close()


def _table_pages(index: Path, table: str) -> list[int]:
    """The pages of ``table`` (stdlib sqlite3's dbstat; pysqlite3 lacks it), or [] without dbstat."""
    conn = sqlite3.connect(f"file:{index}?mode=ro", uri=True)
    try:
        return [row[0] for row in conn.execute("SELECT pageno FROM dbstat WHERE name = ? ORDER BY pageno", (table,))]
    except sqlite3.Error:
        return []
    finally:
        conn.close()


def corrupt(index: Path, kind: str, needle: bytes = b"quetzal-flamingo") -> None:
    """Damage a closed index the way a failing disk or a stray writer might.

    ``random_file``: random bytes of the same size; ``random_page``/``zeroed_page``: the page holding
    ``needle`` (a chunk's text) overwritten with random bytes / zeros; ``last_page``: the last page
    of the FTS data (or of the file) overwritten with random bytes; ``truncated``: a third of the file.
    """
    checkpoint(index)
    data = bytearray(index.read_bytes())
    size = int.from_bytes(data[16:18], "big") or 65536
    if kind == "random_file":
        data = bytearray(os.urandom(len(data)))
    elif kind == "truncated":
        data = data[: len(data) // 3 + 100]
    else:
        if kind == "last_page":
            page = (_table_pages(index, "chunks_fts_data") or [len(data) // size])[-1]
        else:
            offset = data.find(needle)
            assert offset >= 0, f"{needle!r} is not in {index}"
            page = offset // size + 1
        assert page > 1, "page 1 holds the schema; damaging it is the random_file case"
        data[(page - 1) * size : page * size] = bytes(size) if kind == "zeroed_page" else os.urandom(size)
    index.write_bytes(bytes(data))


def quick_check(index: Path, pragma: str = "quick_check") -> str:
    """SQLite's verdict on the file ("ok"), through a read-only connection of memdex's driver."""
    conn = db.driver().module.connect(Path(index).absolute().as_uri() + "?mode=ro", uri=True)
    try:
        return "; ".join(str(row[0]) for row in conn.execute(f"PRAGMA {pragma}"))
    finally:
        conn.close()


def chunk_rows(index: Path) -> list[tuple[Any, ...]]:
    """The chunks as a fresh build would make them (ids aside), sorted."""
    conn = db.driver().module.connect(Path(index).absolute().as_uri() + "?mode=ro", uri=True)
    try:
        return sorted(tuple(r) for r in conn.execute("SELECT path, start_line, end_line, hash FROM chunks"))
    finally:
        conn.close()


def no_shadows(index: Path) -> list[str]:
    """Files beside the index that a rebuild left behind (should be empty)."""
    return sorted(p.name for p in index.parent.iterdir() if any(m in p.name for m in SHADOW_MARKERS))


async def found(engine: MemoryEngine, query: str) -> set[str]:
    return {hit.path for hit in (await engine.search(query, max_results=10)).results}


def add_cache_rows(index: Path, rows: int = 3) -> set[tuple[str, ...]]:
    """Put rows in a closed index's embedding cache (vectors cost money to make: they must survive)."""
    conn = db.connect(schema.cache_path(index))
    try:
        with store.transaction(conn):
            for n in range(rows):
                conn.execute(
                    "INSERT INTO embedding_cache VALUES ('openai', 'text-embedding-3-small', 'fp', ?, 2, ?, 0)",
                    (f"hash{n}", store.pack_vector([0.6, 0.8])),
                )
    finally:
        conn.close()
    return cache_rows(index)


def cache_rows(index: Path) -> set[tuple[str, ...]]:
    conn = db.connect(schema.cache_path(index), readonly=True)
    try:
        return {tuple(map(str, row)) for row in conn.execute("SELECT provider, model, hash FROM embedding_cache")}
    finally:
        conn.close()


async def build(make_engine: MakeEngine, **overrides: Any) -> None:
    async with make_engine(**overrides) as engine:
        await engine.sync()


# Held locks ---------------------------------------------------------------------------------------


@pytest.fixture
def short_busy_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    """Wait 0.3 s, not 5 s, for another connection's lock."""
    monkeypatch.setattr(db, "BUSY_TIMEOUT_MS", 300)


def hold_write_lock(index: Path, journal: str) -> Any:
    """A connection of memdex's own driver (two SQLite libraries in one process would not see each
    other's POSIX locks) holding ``BEGIN EXCLUSIVE``: in WAL mode that stops writers, not readers."""
    conn = db.driver().module.connect(str(index), isolation_level=None)
    conn.execute(f"PRAGMA journal_mode = {journal}")
    conn.execute("BEGIN EXCLUSIVE")
    return conn


async def built_then_locked(make_engine: MakeEngine, index_path: Path, journal: str) -> tuple[Any, Any, Any]:
    """Build the index, add cache rows, then hold its write lock: (cache rows, (inode, digest), holder)."""
    await build(make_engine)
    cache = add_cache_rows(index_path)
    checkpoint(index_path)
    holder = hold_write_lock(index_path, journal)
    return cache, (index_path.stat().st_ino, file_digest(index_path)), holder


@pytest.mark.usefixtures("short_busy_timeout")
async def test_a_held_write_lock_gives_index_busy_and_searches_still_answer(
    make_engine: MakeEngine, workspace: Path, index_path: Path
) -> None:
    """WAL: opening works, a sync fails with IndexBusy, a search answers; nothing is reset or deleted."""
    fill_workspace(workspace)
    cache, identity, holder = await built_then_locked(make_engine, index_path, "wal")
    try:
        async with make_engine() as engine:
            with pytest.raises(IndexBusy):
                await engine.sync()
            assert await found(engine, NOTES[0][2]) == {NOTES[0][0]}
            (workspace / "memory" / "late.md").write_text("the okapi arrived late\n", encoding="utf-8")
            with pytest.raises(IndexBusy):
                await engine.sync_paths(["memory/late.md"])
        assert (index_path.stat().st_ino, file_digest(index_path)) == identity
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert cache_rows(index_path) == cache
    async with make_engine() as engine:  # once the lock is gone, everything works again
        await engine.sync()
        assert await found(engine, "okapi") == {"memory/late.md"}
    assert cache_rows(index_path) == cache


@pytest.mark.usefixtures("short_busy_timeout")
async def test_a_held_lock_on_a_rollback_journal_index_fails_the_open_without_deleting_it(
    make_engine: MakeEngine, workspace: Path, index_path: Path
) -> None:
    """An index left in rollback-journal mode, locked: the switch to WAL cannot happen, so opening
    fails with IndexBusy; the file is not reset, deleted or replaced."""
    fill_workspace(workspace, files=5)
    cache, identity, holder = await built_then_locked(make_engine, index_path, "delete")
    try:
        with pytest.raises(IndexBusy):
            async with make_engine():
                pass
        assert (index_path.stat().st_ino, file_digest(index_path)) == identity
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert cache_rows(index_path) == cache
    async with make_engine() as engine:
        await engine.sync()
        assert await found(engine, NOTES[1][2]) == {NOTES[1][0]}


# Damage ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["random_page", "zeroed_page"])
async def test_a_search_meeting_damage_says_index_corrupt_and_the_next_sync_repairs_it(
    make_engine: MakeEngine, workspace: Path, index_path: Path, kind: str
) -> None:
    """The page holding a note's text is damaged: opening does not read it, the search that does says
    IndexCorrupt (a StoreError, not a driver error in a task group), and the next sync rebuilds the
    index from the Markdown, in place (same inode)."""
    fill_workspace(workspace)
    await build(make_engine)
    corrupt(index_path, kind)
    inode = index_path.stat().st_ino
    async with make_engine() as engine:
        assert await found(engine, NOTES[1][2]) == {NOTES[1][0]}  # other pages still answer
        with pytest.raises(IndexCorrupt, match="rebuilt"):
            await found(engine, NOTES[0][2])
        await engine.sync()
        for rel, _, query in NOTES:
            assert await found(engine, query) == {rel}
    assert quick_check(index_path) == "ok"
    assert index_path.stat().st_ino == inode
    assert no_shadows(index_path) == []


async def test_a_forced_sync_repairs_every_kind_of_damage(
    make_engine: MakeEngine, workspace: Path, index_path: Path
) -> None:
    """``sync(force=True)`` (``memdex index --force``) checks the whole file first, so it repairs even
    damage that no query has met yet; the file keeps its inode unless SQLite cannot open it at all."""
    fill_workspace(workspace)
    await build(make_engine)
    checkpoint(index_path)
    healthy = index_path.read_bytes()
    for kind in CORRUPTIONS:
        index_path.write_bytes(healthy)
        corrupt(index_path, kind)
        inode = index_path.stat().st_ino
        async with make_engine() as engine:
            report = await engine.sync(force=True)
            assert report.files == len(list(workspace.rglob("*.md"))), kind
            for rel, _, query in NOTES:
                assert await found(engine, query) == {rel}, kind
        assert quick_check(index_path, "integrity_check") == "ok", kind
        if kind.endswith("_page"):
            assert index_path.stat().st_ino == inode, kind
        assert no_shadows(index_path) == [], kind


def test_the_quick_check_does_not_take_another_connections_fts5_merges_for_damage(index_path: Path) -> None:
    """A writer that has searched chunks_fts (every open does) checks the file after another connection, as
    another process would, committed enough chunks to merge FTS5 segments: the check finds it sound, each
    of ten times (FTS5 checking from the structure it read before said "corruption found reading blob")."""
    checker, other = schema.open_index(index_path), schema.open_index(index_path)
    try:
        words = [f"w{n}" for n in range(2000)]
        for turn in range(10):
            checker.execute("SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH 'w1'").fetchone()
            for batch in range(3):
                with schema.transaction(other):
                    other.executemany(
                        "INSERT INTO chunks(path, start_line, end_line, hash, text) VALUES (?, 1, 1, '', ?)",
                        ((f"r{turn}b{batch}n{n}.md", " ".join(words[(n * 7 + k * 13) % 2000] for k in range(30)))
                         for n in range(50)),
                    )  # fmt: skip
            assert schema.damaged(checker) == {}, turn
        assert quick_check(index_path, "integrity_check") == "ok"
    finally:
        checker.close()
        other.close()


async def test_an_index_that_did_not_open_is_checked_again_once_no_other_process_writes_and_kept(
    make_engine: MakeEngine, workspace: Path, index_path: Path, monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """An open that found the index unusable (injected once: a read that met another process's work) checks
    it again under the write gate, held exclusively: while another process holds the gate (it writes or
    creates the index) the check waits; then the index opens sound and is kept, nothing emptied."""
    from memdex.memory_core.stores.sqlite import owner as index_db

    fill_workspace(workspace, files=3)
    await build(make_engine)
    rows, real_open, opens = chunk_rows(index_path), schema.open_index, []

    def open_index(path: Path, cache: Path | None = None) -> Any:
        opens.append(path)
        if len(opens) == 1:
            raise schema.NeedsReset(path, "injected")
        return real_open(path, cache)

    async def use() -> None:
        async with make_engine() as engine:
            assert len(opens) == 2
            assert await found(engine, NOTES[0][2]) == {NOTES[0][0]}

    monkeypatch.setattr(schema, "open_index", open_index)
    monkeypatch.setattr(index_db, "RESET_WAIT", 5.0)  # were it not to wait, the failure comes sooner
    fd = os.open(f"{index_path}.gate", os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_SH)  # another open file description: as another process's write would
    try:
        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                tg.start_soon(use)
                await anyio.sleep(0.5)
                assert len(opens) == 1, "checked again while another process held the write gate"
                os.close(fd)
                fd = -1
    finally:
        if fd >= 0:
            os.close(fd)
    assert chunk_rows(index_path) == rows
    assert not [r for r in caplog.records if "emptying" in r.getMessage()]


async def test_a_repair_that_cannot_take_the_rebuild_lock_keeps_the_engine_usable(
    make_engine: MakeEngine, workspace: Path, index_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While another process rebuilds (its lock held), a repair gives up with IndexBusy after a bounded
    wait, and the engine keeps its writer: once the lock is free, the next sync repairs."""
    from memdex.memory_core.stores.sqlite import owner as index_db

    monkeypatch.setattr(index_db, "RESET_WAIT", 0.3)
    monkeypatch.setattr(index_db, "LOCK_POLL", 0.05)
    fill_workspace(workspace)
    await build(make_engine)
    corrupt(index_path, "random_page")
    async with make_engine() as engine:
        with pytest.raises(IndexCorrupt):
            await found(engine, NOTES[0][2])
        fd = os.open(f"{index_path}.lock", os.O_RDWR | os.O_CREAT)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)  # another open file description: as another process would
            with pytest.raises(IndexBusy):
                await engine.sync()
        finally:
            os.close(fd)
        await engine.sync()
        assert await found(engine, NOTES[0][2]) == {NOTES[0][0]}


async def test_a_foreign_database_with_memdex_schema_version_is_emptied_in_place(
    make_engine: MakeEngine, workspace: Path, index_path: Path
) -> None:
    """A SQLite file at the index path that says schema version 1 (an index from before recorded migrations)
    but has none of memdex's tables is not an index: it is emptied in place (same inode: another process may
    have it open) and rebuilt."""
    fill_workspace(workspace, files=3)
    conn = db.connect(index_path)
    try:
        conn.execute("CREATE TABLE unrelated(x)")
        conn.execute("PRAGMA user_version = 1")
    finally:
        conn.close()
    inode = index_path.stat().st_ino
    async with make_engine() as engine:
        await engine.sync()
        assert await found(engine, NOTES[0][2]) == {NOTES[0][0]}
    assert index_path.stat().st_ino == inode


async def test_a_first_sync_cut_short_and_resumed_with_new_chunking_holds_only_new_chunks(
    make_engine: MakeEngine, workspace: Path, index_path: Path, tmp_path: Path
) -> None:
    """A first sync killed after its last batch but before it recorded the index's settings (what a kill
    leaves, made here by dropping those rows), then a sync with other chunking: the index must hold the
    new settings' chunks, as a fresh build does, not keep the first run's as if they were current."""
    fill_workspace(workspace, files=20)
    await build(make_engine)
    conn = db.connect(index_path)
    try:
        conn.execute("DELETE FROM meta WHERE key IN ('identity', 'last_sync')")
    finally:
        conn.close()
    small = {"chunking": {"tokens": 64, "overlap": 8}}
    await build(make_engine, **small)
    fresh = tmp_path / "fresh.sqlite"
    await build(make_engine, index_path=fresh, **small)
    assert chunk_rows(index_path) == chunk_rows(fresh)


# Stale shadows ------------------------------------------------------------------------------------


async def test_stale_shadows_are_swept_on_open_but_not_one_a_running_rebuild_holds(
    make_engine: MakeEngine, workspace: Path, tmp_path: Path
) -> None:
    """``.rebuild-``/``.tmp-``/``.backup-`` files (and their -wal/-shm/-journal) left by a killed
    rebuild go when an index opens, unless the rebuild lock is held; nothing else beside the index goes."""
    index = tmp_path / "i[1] x.sqlite"  # glob characters in the name must not matter
    fill_workspace(workspace, files=3)
    stale = [f"{index.name}.rebuild-1234abcd", f"{index.name}.rebuild-1234abcd-wal", f"{index.name}.tmp-1234abcd",
             f"{index.name}.tmp-1234abcd-wal", f"{index.name}.backup-1234abcd", f"{index.name}.backup-1234abcd-shm",
             f"{index.name}.tmp-5678abcd-journal"]  # fmt: skip
    kept = [f"{index.name}.notes", "other.sqlite.rebuild-1234abcd", f"{index.name}x.rebuild-1234abcd"]
    for name in stale + kept:
        (tmp_path / name).write_bytes(b"left over")

    fd = os.open(f"{index}.lock", os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # a rebuild runs in "another process": its shadow stays
        async with make_engine(index_path=index) as engine:
            await engine.sync()
        assert all((tmp_path / name).exists() for name in stale + kept)
    finally:
        os.close(fd)

    async with make_engine(index_path=index) as engine:
        await engine.sync()
        assert await found(engine, NOTES[0][2]) == {NOTES[0][0]}
    assert [name for name in stale if (tmp_path / name).exists()] == []
    assert all((tmp_path / name).exists() for name in kept)


# A rebuild racing another engine's writes ------------------------------------------------------------


async def test_edits_by_another_engine_during_a_rebuild_survive_its_install(
    make_engine: MakeEngine, workspace: Path, index_path: Path, tmp_path: Path
) -> None:
    """Engine A rebuilds for new chunking settings while engine B (its own connections, gate and locks,
    as another process has) keeps writing new notes. No note B acknowledged is lost by A's install
    (its last catch-up and the install hold B's writes off), both engines then see the same rows, the
    same rows as a fresh build, and no shadow file is left. Events put B's notes in each window: while A
    fills its shadow, between A's last catch-up and its install, and after."""
    fill_workspace(workspace, files=60)
    await build(make_engine)
    new_chunking = {"chunking": {"tokens": 128, "overlap": 16}}
    written: list[tuple[str, str]] = []

    async with make_engine(**new_chunking) as a, make_engine(**new_chunking) as b:
        building, first_note, caught_up = anyio.Event(), anyio.Event(), anyio.Event()
        b_entered, b_wrote = anyio.Event(), anyio.Event()
        real_a_write, real_install, real_b_write = a.index.write, a.index.install, b.index.write

        async def a_write(fn: Any, *args: Any, conn: Any = None) -> Any:
            if conn is not None and fn is a.index.ops.file_states and not building.is_set():
                building.set()  # A fills its shadow, and has just listed the files
                await first_note.wait()  # (were B's note held off by the pause below, the install would never come)
            return await real_a_write(fn, *args, conn=conn)

        async def install_once_b_tried(shadow: Any) -> None:
            caught_up.set()  # A's last catch-up is done and B's writes are held off: B writes a note now
            await b_entered.wait()
            with anyio.move_on_after(1):  # held off, B's write cannot end before the install; were it not, it would
                await b_wrote.wait()
            await real_install(shadow)

        async def noted_write(*args: Any, **kwargs: Any) -> Any:
            if caught_up.is_set():
                b_entered.set()
            return await real_b_write(*args, **kwargs)

        a.index.write, a.index.install, b.index.write = a_write, install_once_b_tried, noted_write
        rebuilt = anyio.Event()

        async def rebuild() -> None:
            await a.sync()
            rebuilt.set()

        async def note() -> None:
            n = len(written)
            rel, word = f"memory/b-{n:03d}.md", f"zebu{n:03d}quokka"
            (workspace / rel).write_text(f"# note {n}\n\n- {word} from engine B\n", encoding="utf-8")
            await b.sync_paths([rel])
            written.append((rel, word))

        async def keep_writing() -> None:
            await building.wait()
            await note()  # after A listed the files for its shadow: only its catch-up takes it over
            first_note.set()
            await caught_up.wait()
            await note()  # between A's last catch-up and its install: held off until the install is done
            b_wrote.set()
            await rebuilt.wait()
            await note()  # after the install

        with anyio.fail_after(60):
            async with anyio.create_task_group() as tg:
                tg.start_soon(rebuild)
                tg.start_soon(keep_writing)

        assert len(written) == 3
        for engine in (a, b):
            for rel, word in written:
                assert await found(engine, word) == {rel}, f"{word} lost for engine {'ab'[engine is b]}"
            assert (await engine.status()).chunks == len(chunk_rows(index_path))
    fresh = tmp_path / "fresh.sqlite"
    await build(make_engine, index_path=fresh, **new_chunking)
    assert chunk_rows(index_path) == chunk_rows(fresh)
    assert no_shadows(index_path) == []


class _RacedPool(deque[tuple[int, Any]]):
    """An idle reader pool whose last connection another reader takes just after anyone checks it is not empty
    (the window between a check and a pop, made certain instead of rare)."""

    def __init__(self, items: Any) -> None:
        super().__init__(items)
        self.taken: list[tuple[int, Any]] = []

    def __bool__(self) -> bool:
        held = len(self) > 0
        while len(self):
            self.taken.append(self.pop())  # the other reader's pop
        return held


async def test_taking_a_pooled_reader_is_one_step_that_no_other_reader_can_split(tmp_path: Path) -> None:
    """A reader takes an idle connection with one pop (or opens one): a check-then-pop fails with IndexError when
    another reader empties the pool between the two."""
    from memdex.memory_core.stores.sqlite.owner import IndexDatabase

    owner = IndexDatabase(tmp_path / "idx.sqlite")
    await owner.open()
    try:
        assert await owner.read(lambda conn: conn.execute("SELECT 1").fetchone()[0]) == 1
        pool = owner._readers = _RacedPool(owner._readers)
        assert len(pool) == 1
        assert await owner.read(lambda conn: conn.execute("SELECT 2").fetchone()[0]) == 2
    finally:
        for _, conn in pool.taken:
            conn.close()
        await owner.close()
