"""Keeping the SQLite index in line with the Markdown files, and searching it."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest
from helpers import writes_held

from memdex.memory_core import InputError, MemoryEngine, SyncReport, load_settings
from memdex.memory_core.errors import ClosedError
from memdex.memory_core.stores.sqlite import db

pytestmark = pytest.mark.both_stores

Write = Callable[[str, str], Path]
MakeEngine = Callable[..., MemoryEngine]


async def paths_for(engine: MemoryEngine, query: str) -> list[str]:
    return sorted({hit.path for hit in (await engine.search(query, max_results=50)).results})


def bump_mtime(path: Path, seconds: int = 5) -> None:
    """Move a file's mtime forward so a same-size rewrite cannot hide behind a coarse clock."""
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + seconds * 1_000_000_000))


async def test_a_new_file_becomes_searchable_after_sync(make_engine: MakeEngine, write: Write) -> None:
    write("MEMORY.md", "# Long term\n\nAlice owns the billing service.\n")
    async with make_engine() as engine:
        assert await paths_for(engine, "billing") == []  # nothing indexed before the first sync
        first = await engine.sync()
        assert (first.files, first.changed, first.removed) == (1, 1, 0)
        assert await paths_for(engine, "billing") == ["MEMORY.md"]

        write("memory/2026-01-05.md", "# 2026-01-05\n\nWe picked zebrafish as the codename.\n")
        report = await engine.sync()
        assert (report.files, report.changed, report.removed) == (2, 1, 0)
        answer = await engine.search("zebrafish")
        assert [(h.path, h.start_line, h.end_line) for h in answer.results] == [("memory/2026-01-05.md", 1, 3)]
        assert answer.mode == "keyword"
        top = answer.results[0]
        assert 0.8 < top.score < 1.0  # every query term matched (a score never reaches 1: scoring.soft_cap)
        assert top.text_score == top.score and top.vector_score is None  # keyword-only: all of it is text
        assert "zebrafish" in answer.results[0].snippet
        status = await engine.status()
        assert (status.state, status.files, status.error) == ("ready", 2, None)
        assert status.last_sync is not None


async def test_changed_content_replaces_old_words_with_new_ones(make_engine: MakeEngine, write: Write) -> None:
    path = write("memory/notes.md", "The launch codename is bluebird.\n")
    async with make_engine() as engine:
        await engine.sync()
        assert await paths_for(engine, "bluebird") == ["memory/notes.md"]
        path.write_text("The launch codename is now kingfisher, decided on Monday.\n")
        bump_mtime(path)
        report = await engine.sync()
        assert report.changed == 1
        assert await paths_for(engine, "bluebird") == []
        assert await paths_for(engine, "kingfisher") == ["memory/notes.md"]


async def test_a_same_size_rewrite_with_a_new_mtime_is_reindexed(make_engine: MakeEngine, write: Write) -> None:
    path = write("memory/notes.md", "codename: bluebird\n")
    async with make_engine() as engine:
        await engine.sync()
        path.write_text("codename: redstart\n")
        assert len("bluebird") == len("redstart")
        bump_mtime(path)
        assert (await engine.sync()).changed == 1
        assert await paths_for(engine, "bluebird") == []
        assert await paths_for(engine, "redstart") == ["memory/notes.md"]


async def test_a_deleted_file_leaves_search_and_status_counts(make_engine: MakeEngine, write: Write) -> None:
    write("memory/keep.md", "keep this walrus note\n")
    doomed = write("memory/doomed.md", "the narwhal plan\n\n" + "more narwhal text\n" * 300)
    async with make_engine() as engine:
        await engine.sync()
        before = await engine.status()
        assert before.files == 2
        assert before.chunks >= 3
        assert await paths_for(engine, "narwhal") == ["memory/doomed.md"]

        doomed.unlink()
        report = await engine.sync()
        assert (report.files, report.changed, report.removed) == (1, 0, 1)
        assert await paths_for(engine, "narwhal") == []
        assert await paths_for(engine, "walrus") == ["memory/keep.md"]
        after = await engine.status()
        assert (after.files, after.chunks) == (1, 1)


async def test_a_file_moved_into_a_hidden_folder_is_removed(make_engine: MakeEngine, write: Write, workspace: Path) -> None:
    path = write("memory/visible.md", "the heron note\n")
    async with make_engine() as engine:
        await engine.sync()
        (workspace / "memory" / ".trash").mkdir()
        path.rename(workspace / "memory" / ".trash" / "visible.md")
        assert (await engine.sync()).removed == 1
        assert await paths_for(engine, "heron") == []


async def test_an_mtime_only_touch_reindexes_nothing(make_engine: MakeEngine, write: Write) -> None:
    path = write("memory/notes.md", "the osprey note\n")
    async with make_engine() as engine:
        await engine.sync()
        bump_mtime(path, 60)
        report = await engine.sync()
        assert (report.files, report.changed, report.removed) == (1, 0, 0)
        assert await paths_for(engine, "osprey") == ["memory/notes.md"]


async def test_an_unchanged_resync_reindexes_nothing(make_engine: MakeEngine, write: Write) -> None:
    for i in range(5):
        write(f"memory/n{i}.md", f"note {i} about puffins\n")
    async with make_engine() as engine:
        assert (await engine.sync()).changed == 5
        again = await engine.sync()
        assert (again.files, again.changed, again.removed) == (5, 0, 0)
    async with make_engine() as engine:  # reopening with the same settings keeps the index
        reopened = await engine.sync()
        assert (reopened.files, reopened.changed) == (5, 0)
        assert len(await paths_for(engine, "puffins")) == 5


async def test_concurrent_syncs_all_succeed_and_index_every_file(make_engine: MakeEngine, write: Write) -> None:
    for i in range(150):  # more than one batch of 64
        write(f"memory/day-{i:03d}.md", f"# Day {i}\n\nentry {i} about the gannet colony\n")
    reports: list[SyncReport] = []

    async def run_sync(engine: MemoryEngine) -> None:
        reports.append(await engine.sync())

    async with make_engine() as engine:
        async with anyio.create_task_group() as tg:
            for _ in range(5):
                tg.start_soon(run_sync, engine)
        assert len(reports) == 5
        assert all(r.files == 150 for r in reports)
        assert sum(r.changed for r in reports) >= 150
        assert max(r.changed for r in reports) == 150  # one run indexed everything, the others shared
        status = await engine.status()
        assert (status.state, status.files) == ("ready", 150)
        assert len(await paths_for(engine, "gannet")) == 50  # capped by max_results
        assert (await engine.sync()).changed == 0


async def test_a_sync_requested_during_another_runs_again_and_sees_files_added_meanwhile(
    make_engine: MakeEngine, write: Write, index_path: Path
) -> None:
    write("memory/early.md", "the early cormorant\n")
    async with make_engine() as engine:
        reports: list[SyncReport] = []
        discovered = anyio.Event()

        def progress(done: int, total: int, unit: str) -> None:
            discovered.set()  # called once the run has listed the files

        async def run_sync(with_progress: bool = False) -> None:
            reports.append(await engine.sync(progress=progress if with_progress else None))

        with writes_held(engine) as let_go:  # the first sync stops after discovery
            async with anyio.create_task_group() as tg:
                tg.start_soon(run_sync, True)
                with anyio.fail_after(3):
                    await discovered.wait()
                write("memory/late.md", "the late cormorant\n")
                tg.start_soon(run_sync)
                tg.start_soon(run_sync)
                await anyio.sleep(0.05)
                let_go()
        assert sorted((r.files, r.changed) for r in reports) == [(1, 1), (2, 1), (2, 1)]
        assert await paths_for(engine, "cormorant") == ["memory/early.md", "memory/late.md"]


async def test_new_chunking_settings_reindex_every_file(make_engine: MakeEngine, write: Write) -> None:
    body = "".join(f"line {n} of the pelican survey with some padding words\n" for n in range(120))
    for i in range(3):
        write(f"memory/s{i}.md", body)
    async with make_engine() as engine:
        assert (await engine.sync()).changed == 3
        big_chunks = (await engine.status()).chunks
    async with make_engine(chunking={"tokens": 64, "overlap": 8}) as engine:
        report = await engine.sync()
        assert (report.files, report.changed) == (3, 3)
        small_chunks = (await engine.status()).chunks
        assert small_chunks > big_chunks
        hit = (await engine.search("pelican", max_results=1)).results[0]
        assert hit.end_line - hit.start_line < 20
    async with make_engine(chunking={"tokens": 64, "overlap": 8}) as engine:
        assert (await engine.sync()).changed == 0
        assert (await engine.status()).chunks == small_chunks


@pytest.mark.sqlite_only
async def test_a_corrupt_index_file_is_rebuilt_and_search_works(
    make_engine: MakeEngine, write: Write, index_path: Path
) -> None:
    write("MEMORY.md", "The ibis project ships in March.\n")
    index_path.write_bytes(b"this is not a sqlite database \x00\xff" * 512)
    async with make_engine() as engine:
        report = await engine.sync()
        assert report.changed == 1
        assert await paths_for(engine, "ibis") == ["MEMORY.md"]
    assert index_path.read_bytes()[:16] == b"SQLite format 3\x00"


@pytest.mark.sqlite_only
async def test_a_foreign_sqlite_database_at_the_index_path_is_replaced(
    make_engine: MakeEngine, write: Write, index_path: Path
) -> None:
    write("MEMORY.md", "The egret project.\n")
    conn = db.connect(index_path)
    conn.execute("CREATE TABLE unrelated(x)")
    conn.close()
    async with make_engine() as engine:
        await engine.sync()
        assert await paths_for(engine, "egret") == ["MEMORY.md"]


@pytest.mark.parametrize("query", ["", "   ", "\n\t"])
async def test_an_empty_query_raises_input_error(make_engine: MakeEngine, query: str) -> None:
    async with make_engine() as engine:
        with pytest.raises(InputError, match="query is empty"):
            await engine.search(query)


@pytest.mark.parametrize("max_results", [0, -1, 51, 1000])
async def test_max_results_out_of_range_raises_input_error(make_engine: MakeEngine, max_results: int) -> None:
    async with make_engine() as engine:
        with pytest.raises(InputError, match="maxResults"):
            await engine.search("anything", max_results=max_results)


@pytest.mark.parametrize("min_score", [-0.1, 1.5])
async def test_min_score_out_of_range_raises_input_error(make_engine: MakeEngine, min_score: float) -> None:
    async with make_engine() as engine:
        with pytest.raises(InputError, match="minScore"):
            await engine.search("anything", min_score=min_score)


async def test_max_results_limits_the_hits(make_engine: MakeEngine, write: Write) -> None:
    for i in range(10):
        write(f"memory/m{i}.md", f"the moorhen {i}\n")
    async with make_engine() as engine:
        await engine.sync()
        assert len((await engine.search("moorhen", max_results=3)).results) == 3
        assert len((await engine.search("moorhen")).results) == 8  # query.max_results default
        assert len((await engine.search("moorhen", max_results=50)).results) == 10


async def test_a_query_without_words_returns_no_hits_and_a_warning(make_engine: MakeEngine, write: Write) -> None:
    write("MEMORY.md", "punctuation ?!\n")
    async with make_engine() as engine:
        await engine.sync()
        answer = await engine.search("?!... 😀")
        assert answer.results == []
        assert answer.warning is not None and "no words" in answer.warning


async def test_fts_syntax_in_a_query_is_searched_as_words(make_engine: MakeEngine, write: Write) -> None:
    write("MEMORY.md", 'Set POSTGRES_URL before "NEAR" tests; yarn error YN0028\n')
    async with make_engine() as engine:
        await engine.sync()
        for query in ['POSTGRES_URL', 'NEAR(', '"unbalanced', 'yn0028 AND OR NOT', 'col:x*^']:
            await engine.search(query)
        assert await paths_for(engine, "POSTGRES_URL") == ["MEMORY.md"]
        assert await paths_for(engine, "YN0028 OR") == ["MEMORY.md"]


async def test_a_search_during_indexing_answers_from_the_index_so_far(
    make_engine: MakeEngine, write: Write, index_path: Path
) -> None:
    write("MEMORY.md", "The first note mentions the kestrel.\n")
    async with make_engine() as engine:
        await engine.sync()
        write("memory/new.md", "A second note about the kestrel and the merlin.\n")

        with writes_held(engine) as let_go:  # another writer holds the index: the sync cannot write yet
            async with anyio.create_task_group() as tg:
                tg.start_soon(engine.sync)
                with anyio.fail_after(3):
                    while (await engine.status()).state != "indexing":
                        await anyio.sleep(0.01)
                answer = await engine.search("kestrel")
                assert answer.index_status.state == "indexing"
                assert answer.warning is not None and "still being built" in answer.warning
                assert [h.path for h in answer.results] == ["MEMORY.md"]
                assert (await engine.search("merlin")).results == []
                let_go()
        assert (await engine.status()).state == "ready"
        assert await paths_for(engine, "kestrel") == ["MEMORY.md", "memory/new.md"]
        assert (await engine.search("kestrel")).warning is None


async def test_background_sync_indexes_on_open(make_engine: MakeEngine, write: Write) -> None:
    write("MEMORY.md", "the background shrike\n")
    async with make_engine(background_sync=True) as engine:
        with anyio.fail_after(5):
            while (await engine.status()).state != "ready":
                await anyio.sleep(0.01)
        assert await paths_for(engine, "shrike") == ["MEMORY.md"]


async def test_an_engine_outside_async_with_raises_closed_error(make_engine: MakeEngine) -> None:
    engine = make_engine()
    with pytest.raises(ClosedError):
        await engine.sync()
    async with engine:
        await engine.sync()
    with pytest.raises(ClosedError):
        await engine.search("anything")


async def test_extra_paths_outside_the_workspace_are_indexed_with_dotdot_paths(
    make_engine: MakeEngine, tmp_path: Path
) -> None:
    extra = tmp_path / "team-notes"
    extra.mkdir()
    (extra / "shared.md").write_text("the shared avocet decision\n")
    async with make_engine(extra_paths=[str(extra)]) as engine:
        await engine.sync()
        assert await paths_for(engine, "avocet") == ["../team-notes/shared.md"]
        assert (await engine.read("../team-notes/shared.md")).text == "the shared avocet decision"


async def test_an_index_path_containing_a_hash_sign_works(tmp_path: Path) -> None:
    root = tmp_path / "notes #1"
    (root / "memory").mkdir(parents=True)
    (root / "MEMORY.md").write_text("The hash-folder heron.\n")
    settings = load_settings(workspace=root, index_path=root / "idx.sqlite")
    try:
        async with MemoryEngine(settings, background_sync=False) as engine:
            await engine.sync()
            assert [h.path for h in (await engine.search("heron")).results] == ["MEMORY.md"]
    finally:
        assert not (tmp_path / "notes ").exists(), "a stray database was created at the URI's truncated path"


async def test_an_index_in_a_folder_that_does_not_exist_yet_is_created(tmp_path: Path, write: Write) -> None:
    """A fresh machine has no state folder: the index, its folders and its lock files are made on open."""
    write("MEMORY.md", "# Memory\n\n- The lighthouse keeper is Ada.\n")
    index = tmp_path / "state" / "memdex" / "deep" / "idx.sqlite"
    async with MemoryEngine(load_settings(workspace=tmp_path / "ws", index_path=index), background_sync=False) as engine:
        await engine.sync()
        assert (await engine.search("lighthouse")).results
