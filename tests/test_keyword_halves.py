"""A large BM25 query ranked as two halves of the chunk ids at once, the upper half on a reader the owner lends
(store.keyword_search, IndexDatabase.alongside): the same rows as the query ranked whole, one lent reader at a
time, none on one core, and only in keyword-only searches."""

from __future__ import annotations

import random
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import pytest
from helpers import TEST_MODEL, needs_shared

from memdex.memory_core import MemoryEngine, load_settings
from memdex.memory_core.errors import StoreError
from memdex.memory_core.stores.filters import SearchFilter
from memdex.memory_core.stores.records import ChunkRow, FileState
from memdex.memory_core.stores.sqlite import ops as store
from memdex.memory_core.stores.sqlite import owner
from memdex.memory_core.stores.sqlite.owner import IndexDatabase
from memdex.memory_core.text.chunking import Chunk
from memdex.memory_core.textutil import sha256_hex

WORDS = ["kafka", "grafana", "standup", "deploy", "rollback", "latency", "billing", "postgres", "cache", "quota"]
QUERIES = [["kafka"], ["kafka", "grafana"], ["standup", "deploy", "latency"], ["billing", "postgres", "cache", "quota"]]
FILTERS = {
    "none": None,
    "a folder": SearchFilter(path_prefix="memory"),
    "two files": SearchFilter(paths=("MEMORY.md", "memory/2026-01-11.md")),
}


def _notes() -> dict[str, list[str]]:
    """400 chunks in three files, words drawn at random (so scores vary); each text of the first 200 chunks comes
    again 200 chunks later, so equal scores straddle the middle id."""
    rng = random.Random(7)
    texts = [" ".join(rng.choices(WORDS, k=rng.randint(2, 12))) for _ in range(200)]
    texts += texts
    return {"MEMORY.md": texts[:150], "memory/2026-01-10.md": texts[150:300], "memory/2026-01-11.md": texts[300:]}


@pytest.fixture
async def index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setattr(owner, "CORES", 2)  # the halves run whatever this machine has
    database = IndexDatabase(tmp_path / "idx.sqlite")
    await database.open()

    def fill(conn: Any) -> None:
        with store.transaction(conn):
            for path, texts in _notes().items():
                chunks = [Chunk(i + 1, i + 1, text, sha256_hex(text)) for i, text in enumerate(texts)]
                store.replace_file(conn, path, "memory", FileState(path, 0, 0), chunks)

    await database.write(fill)
    yield database
    await database.close()


@pytest.fixture
def lent(index: IndexDatabase, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Future[list[ChunkRow]]]]:
    """The futures ``index.alongside`` hands out (it still lends its real reader)."""
    futures: list[Future[list[ChunkRow]]] = []
    lend = index.alongside

    def counted(fn: Callable[[Any], list[ChunkRow]]) -> Future[list[ChunkRow]] | None:
        future = lend(fn)
        if future is not None:
            futures.append(future)
        return future

    monkeypatch.setattr(index, "alongside", counted)
    yield futures


@pytest.mark.parametrize("where", list(FILTERS.values()), ids=list(FILTERS))
@pytest.mark.parametrize("limit", [1, 7, 24, 500])
async def test_a_query_ranked_in_halves_gives_the_rows_of_the_query_ranked_whole(
    index: IndexDatabase, lent: list[Any], monkeypatch: pytest.MonkeyPatch, where: SearchFilter | None, limit: int
) -> None:
    monkeypatch.setattr(store, "SPLIT_ROWS", 1)
    monkeypatch.setattr(store, "PRUNE_ROWS", 1)  # each half pruned too, when the rarest terms allow it
    for terms in QUERIES:

        def both(conn: Any, terms: list[str] = terms) -> tuple[list[ChunkRow], list[ChunkRow]]:
            counts = store.term_counts(conn, terms)
            whole = store.keyword_search(conn, terms, limit, where, counts)
            return whole, store.keyword_search(conn, terms, limit, where, counts, index.alongside)

        before = len(lent)
        whole, halves = await index.read(both)
        assert len(lent) > before, "the upper half was not ranked on the lent reader"
        assert whole and [(row.id, row.rank) for row in halves] == [(row.id, row.rank) for row in whole]
        if limit == 500 and where is None:  # every match: both halves gave rows
            assert min(row.id for row in halves) < 200 < max(row.id for row in halves)


async def test_a_query_held_by_fewer_chunks_than_the_split_bar_is_ranked_whole(index: IndexDatabase, lent: list[Any]) -> None:
    def search(conn: Any) -> list[ChunkRow]:
        terms = ["kafka"]
        counts = store.term_counts(conn, terms)
        assert 0 < counts["kafka"] < store.SPLIT_ROWS
        return store.keyword_search(conn, terms, 10, None, counts, index.alongside)

    assert await index.read(search) and lent == []


async def test_one_reader_is_lent_at_a_time_none_on_one_core_and_its_thread_ends_with_the_index(
    index: IndexDatabase, monkeypatch: pytest.MonkeyPatch
) -> None:
    started, release = threading.Event(), threading.Event()

    def hold(conn: Any) -> int:
        started.set()
        assert release.wait(10)
        return int(conn.execute("SELECT count(*) FROM chunks").fetchone()[0])

    first = index.alongside(hold)
    assert first is not None and started.wait(10)
    assert index.alongside(hold) is None  # busy with the first: the caller ranks it all itself
    release.set()
    assert first.result(10) == 400
    again = index.alongside(lambda conn: int(conn.execute("SELECT max(id) FROM chunks").fetchone()[0]))
    assert again is not None and again.result(10) == 400

    monkeypatch.setattr(owner, "CORES", 1)
    assert index.alongside(hold) is None
    monkeypatch.setattr(owner, "CORES", 2)

    await index.close()
    assert not [thread for thread in threading.enumerate() if thread.name.startswith("memdex-alongside")]
    assert index.alongside(hold) is None  # closed


async def test_an_error_in_the_lent_half_reaches_the_search_as_a_store_error(index: IndexDatabase) -> None:
    def broken(conn: Any) -> list[ChunkRow]:
        conn.execute("SELECT * FROM no_such_table")
        return []

    def search(conn: Any) -> list[ChunkRow]:
        future = index.alongside(broken)
        assert future is not None
        return future.result(10)

    with pytest.raises(StoreError):
        await index.read(search)
    assert await index.read(lambda conn: store.counts(conn)) == (3, 400)  # the pool still serves


@needs_shared(TEST_MODEL)
async def test_only_a_keyword_only_search_ranks_in_halves(
    workspace: Path, index_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a vector side running beside the keyword side, the other core is the vector side's."""
    monkeypatch.setattr(owner, "CORES", 2)
    monkeypatch.setattr(store, "SPLIT_ROWS", 1)
    halves: list[str] = []
    ranked = store._ranked_in_halves

    def counted(conn: Any, query: Any, *rest: Any) -> list[ChunkRow]:
        halves.append(query.expression)
        return ranked(conn, query, *rest)

    monkeypatch.setattr(store, "_ranked_in_halves", counted)
    (workspace / "MEMORY.md").write_text("# Memory\n\n- Kafka consumers lag behind the billing topic.\n", encoding="utf-8")
    (workspace / "memory").mkdir(exist_ok=True)
    (workspace / "memory" / "2026-01-10.md").write_text("# 2026-01-10\n\n- Kafka upgrade planned.\n", encoding="utf-8")
    for provider, split in (("none", True), ("local", False)):
        settings = load_settings(
            workspace=workspace, index_path=index_path.with_name(f"{provider}.sqlite"), timezone="UTC",
            embedding={"provider": provider, "local": {"model": str(TEST_MODEL)}},
        )  # fmt: skip
        async with MemoryEngine(settings, background_sync=False) as engine:
            await engine.sync()
            halves.clear()
            answer = await engine.search("kafka billing lag")
        assert answer.results and answer.results[0].path == "MEMORY.md"
        assert answer.mode == ("keyword" if provider == "none" else "hybrid")
        assert bool(halves) is split, (provider, halves)
