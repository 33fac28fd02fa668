"""Hybrid search and the vector index, with the real local GGUF model (no network)."""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest
from helpers import TEST_MODEL, eventually, needs_shared

from memdex.memory_core import MemoryEngine, load_settings
from memdex.memory_core.embeddings.factory import ProviderChoice, build
from memdex.memory_core.errors import EmbeddingError
from memdex.memory_core.index import syncer
from memdex.memory_core.stores import records
from memdex.memory_core.stores.sqlite import cache, db, schema
from memdex.memory_core.stores.sqlite import ops as store

MODEL = TEST_MODEL
pytestmark = needs_shared(MODEL)

NOTES = {
    "MEMORY.md": "# Memory\n\n- We chose PostgreSQL for storage after comparing it with MySQL.\n",
    "memory/2026-01-10.md": "# 2026-01-10\n\n- Build flag YN0028 must stay disabled in production.\n",
    "memory/2026-01-11.md": "# 2026-01-11\n\n- Went hiking in the mountains with Sam; the weather was lovely.\n",
    "memory/2026-01-12.md": "# 2026-01-12\n\n- Dinner recipe: lentil soup with cumin and lemon.\n",
}


class Instrumented:
    """A real provider, wrapped to count embedding calls and to fail on demand."""

    def __init__(self, inner: Any, *, dims: int | None = None, tag: str = "") -> None:
        self.inner = inner
        self.batch_calls = 0
        self.texts_embedded = 0
        self.fail_batches_after: int | None = None
        self.fail_queries = False
        self._dims = dims
        self._tag = tag

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    @property
    def dims(self) -> int:
        return self._dims or self.inner.dims

    @property
    def fingerprint(self) -> str:
        return self.inner.fingerprint + self._tag + (f"-d{self._dims}" if self._dims else "")

    def _cut(self, vector: list[float]) -> list[float]:
        if not self._dims:
            return vector
        head = vector[: self._dims]
        norm = sum(x * x for x in head) ** 0.5
        return [x / norm for x in head]

    async def embed_batch(self, texts: Sequence[str], *, bulk: bool = False) -> list[list[float]]:
        if self.fail_batches_after is not None and self.batch_calls >= self.fail_batches_after:
            raise EmbeddingError("scripted outage")
        self.batch_calls += 1
        self.texts_embedded += len(texts)
        return [self._cut(v) for v in await self.inner.embed_batch(texts, bulk=bulk)]

    async def embed_query(self, text: str) -> list[float]:
        if self.fail_queries:
            raise EmbeddingError("scripted outage")
        return self._cut(await self.inner.embed_query(text))


@pytest.fixture
def notes(workspace: Path, write: Callable[[str, str], Path]) -> Path:
    for rel, text in NOTES.items():
        write(rel, text)
    return workspace


def _settings(workspace: Path, index: Path, **query: Any) -> Any:
    return load_settings(
        workspace=workspace, index_path=index, timezone="UTC",
        embedding={"provider": "local", "local": {"model": str(MODEL)}}, query=query or None,
    )


class Factory:
    """A provider factory for MemoryEngine: a real local provider, wrapped for instrumentation."""

    def __init__(self, wrapper: Callable[[Any], Instrumented]) -> None:
        self.wrapper = wrapper
        self.made: list[Instrumented] = []

    async def __call__(self, settings: Any, exclude: frozenset[str] = frozenset()) -> ProviderChoice:
        inner = build("local", settings)
        await inner.start()
        self.made.append(self.wrapper(inner))
        return ProviderChoice(self.made[-1])


def _use(wrapper: Callable[[Any], Instrumented]) -> Factory:
    return Factory(wrapper)


async def test_semantic_query_finds_a_paraphrase_with_no_shared_word(notes: Path, index_path: Path) -> None:
    """'that database thing we picked' finds the PostgreSQL decision in hybrid mode."""
    async with MemoryEngine(_settings(notes, index_path), background_sync=False) as engine:
        await engine.sync()
        answer = await engine.search("that database thing we picked", min_score=0.0)
    assert answer.mode == "hybrid" and answer.provider == "local"
    assert answer.results[0].path == "MEMORY.md"
    top = answer.results[0]
    assert top.vector_score is not None and top.vector_score > 0.3
    assert answer.index_status.mode == "hybrid"


async def test_exact_token_query_finds_the_id(notes: Path, index_path: Path) -> None:
    """An opaque ID is found through the keyword side of hybrid search."""
    async with MemoryEngine(_settings(notes, index_path), background_sync=False) as engine:
        await engine.sync()
        answer = await engine.search("YN0028")
    assert answer.mode == "hybrid"
    assert answer.results and answer.results[0].path == "memory/2026-01-10.md"
    assert answer.results[0].text_score is not None and answer.results[0].text_score > 0.8


async def test_rrf_fusion_ranks_both_kinds_of_query(notes: Path, index_path: Path) -> None:
    """Reciprocal-rank fusion also puts the right note first for both query kinds."""
    async with MemoryEngine(_settings(notes, index_path, fusion="rrf"), background_sync=False) as engine:
        await engine.sync()
        semantic = await engine.search("that database thing we picked")
        exact = await engine.search("YN0028")
    assert semantic.results[0].path == "MEMORY.md"
    assert exact.results[0].path == "memory/2026-01-10.md"


async def test_unchanged_text_is_never_embedded_twice(
    notes: Path, index_path: Path, write: Callable[[str, str], Path]
) -> None:
    """Forced re-chunking and a new engine reuse cached vectors; only an edited chunk is embedded."""
    made = (factory := _use(Instrumented)).made
    async with MemoryEngine(_settings(notes, index_path), background_sync=False, provider_factory=factory) as engine:
        await engine.sync()
        first = made[-1].texts_embedded
        assert first == len(NOTES)
        await engine.sync(force=True)
        assert made[-1].texts_embedded == first
    async with MemoryEngine(_settings(notes, index_path), background_sync=False, provider_factory=factory) as engine:
        write("memory/2026-01-12.md", "# 2026-01-12\n\n- Dinner recipe: tomato soup with basil.\n")
        await engine.sync()
        assert made[-1].texts_embedded == 1
        answer = await engine.search("tomato basil soup")
    assert answer.results[0].path == "memory/2026-01-12.md"


async def test_a_model_change_rebuilds_the_index_and_swaps_it_in(
    notes: Path, index_path: Path
) -> None:
    """A new fingerprint rebuilds into a temp file, swaps it in, and leaves no temp file behind."""
    made = (factory := _use(Instrumented)).made
    async with MemoryEngine(_settings(notes, index_path), background_sync=False, provider_factory=factory) as engine:
        await engine.sync()
    factory = _use(lambda inner: Instrumented(inner, tag="-v2"))
    async with MemoryEngine(_settings(notes, index_path), background_sync=False, provider_factory=factory) as engine:
        await engine.sync()
        answer = await engine.search("that database thing we picked", min_score=0.0)
        assert engine.vectors_ready
        await eventually(engine.vectors_in_ram, "the rebuilt index's vectors are in RAM")
        ours, exact = await _vector_ids(engine, "that database thing we picked")
        assert ours == exact
    assert answer.mode == "hybrid" and answer.results[0].path == "MEMORY.md"
    assert made[0].texts_embedded == len(NOTES)
    assert sorted(p.name for p in index_path.parent.iterdir() if ".tmp-" in p.name or ".backup-" in p.name) == []
    with sqlite3.connect(schema.cache_path(index_path)) as conn:
        fingerprints = {row[0] for row in conn.execute("SELECT DISTINCT fingerprint FROM embedding_cache")}
    assert len(fingerprints) == 2  # the rebuild kept the old vectors in the cache


async def test_a_failed_rebuild_keeps_the_old_index_in_service(
    notes: Path, index_path: Path
) -> None:
    """A provider failing half-way through a rebuild leaves the old index untouched and searchable."""
    factory = _use(Instrumented)
    async with MemoryEngine(_settings(notes, index_path), background_sync=False, provider_factory=factory) as engine:
        await engine.sync()
    with sqlite3.connect(index_path) as conn:
        identity_before = conn.execute("SELECT value FROM meta WHERE key = 'identity'").fetchone()[0]

    def flaky(inner: Any) -> Instrumented:
        wrapped = Instrumented(inner, tag="-v2")
        wrapped.fail_batches_after = 0
        return wrapped

    factory = _use(flaky)
    settings = _settings(notes, index_path)
    async with MemoryEngine(settings, background_sync=False, provider_factory=factory) as engine:
        with pytest.raises(EmbeddingError, match="previous index stays in service"):
            await engine.sync()
        answer = await engine.search("lentil soup")
        status = await engine.status()
    assert answer.mode == "keyword"  # the old vectors do not belong to the new provider
    assert answer.results[0].path == "memory/2026-01-12.md"
    assert status.files == len(NOTES) and status.state == "error"
    assert not [p for p in index_path.parent.iterdir() if ".tmp-" in p.name]
    with sqlite3.connect(index_path) as conn:
        assert conn.execute("SELECT count(*) FROM chunks").fetchone()[0] == len(NOTES)
        assert conn.execute("SELECT value FROM meta WHERE key = 'identity'").fetchone()[0] == identity_before


async def test_a_dimension_change_rebuilds_the_vector_table(
    notes: Path, index_path: Path
) -> None:
    """Switching to 128-dimensional vectors gives a 128-dimensional vec0 table and working search."""
    factory = _use(Instrumented)
    async with MemoryEngine(_settings(notes, index_path), background_sync=False, provider_factory=factory) as engine:
        await engine.sync()
    factory = _use(lambda inner: Instrumented(inner, dims=128))
    async with MemoryEngine(_settings(notes, index_path), background_sync=False, provider_factory=factory) as engine:
        await engine.sync()
        answer = await engine.search("that database thing we picked", min_score=0.0)
    assert answer.mode == "hybrid" and answer.results[0].path == "MEMORY.md"
    conn = db.connect(index_path)
    try:
        assert store.vector_dims(conn) == 128
    finally:
        conn.close()


async def test_a_query_embedding_failure_answers_with_keywords_and_a_warning(
    notes: Path, index_path: Path
) -> None:
    """Provider outage at query time: keyword results, a warning, never an error."""
    made = (factory := _use(Instrumented)).made
    async with MemoryEngine(_settings(notes, index_path), background_sync=False, provider_factory=factory) as engine:
        await engine.sync()
        made[-1].fail_queries = True
        answer = await engine.search("lentil soup")
    assert answer.mode == "keyword"
    assert answer.results[0].path == "memory/2026-01-12.md"
    assert "query embedding failed" in (answer.warning or "")


async def test_an_indexing_outage_keeps_keyword_search_and_backfills_later(
    notes: Path, index_path: Path, write: Callable[[str, str], Path]
) -> None:
    """Chunks written during an outage are searchable by keyword and get vectors on the next sync."""
    made = (factory := _use(Instrumented)).made
    async with MemoryEngine(_settings(notes, index_path), background_sync=False, provider_factory=factory) as engine:
        await engine.sync()
        made[-1].fail_batches_after = made[-1].batch_calls  # the provider goes down
        write("memory/2026-01-13.md", "# 2026-01-13\n\n- Adopted a grey cat called Pixel.\n")
        await engine.sync()
        status = await engine.status()
        assert "scripted outage" in (status.note or "")
        found = await engine.search("Pixel")
        assert found.results[0].path == "memory/2026-01-13.md"
        made[-1].fail_batches_after = None  # back up
        await engine.sync()
        answer = await engine.search("new kitten pet", min_score=0.0)
        status = await engine.status()
    assert answer.results[0].path == "memory/2026-01-13.md" and answer.results[0].vector_score is not None
    assert status.note is None


def test_the_embedding_cache_drops_the_least_recently_used_vectors(tmp_path: Path) -> None:
    """Pruning keeps the entries used most recently, not the ones written most recently."""
    conn = schema.open_index(tmp_path / "cache.sqlite")
    key = records.CacheKey("local", "m", "f")
    try:
        for now, name in enumerate(("a", "b", "c", "d")):
            store.cache_vectors(conn, key, {name: [1.0, 0.0]}, now=now)
        assert set(store.cached_vectors(conn, key, ["a"], 2, now=4)) == {"a"}  # 'a' is now the most recently used
        assert store.prune_cache(conn, 2) == 2
        assert set(store.cached_vectors(conn, key, ["a", "b", "c", "d"], 2)) == {"a", "d"}
        assert cache.cache_size(conn) == 2
    finally:
        conn.close()


async def test_a_slow_query_embedding_answers_with_keywords_in_time(
    notes: Path, index_path: Path
) -> None:
    """A query vector slower than embedding.query_timeout: keyword results and a warning, no waiting it out."""
    class Slow(Instrumented):
        async def embed_query(self, text: str) -> list[float]:
            await anyio.sleep(30)
            return await super().embed_query(text)

    factory = _use(Slow)
    settings = load_settings(
        workspace=notes, index_path=index_path, timezone="UTC",
        embedding={"provider": "local", "local": {"model": str(MODEL)}, "query_timeout": 0.3},
    )
    async with MemoryEngine(settings, background_sync=False, provider_factory=factory) as engine:
        await engine.sync()
        with anyio.fail_after(5):
            answer = await engine.search("lentil soup")
    assert answer.mode == "keyword" and answer.results[0].path == "memory/2026-01-12.md"
    assert "took over 0.3s" in (answer.warning or "")


async def _vector_ids(engine: MemoryEngine, query: str) -> tuple[list[int], list[int]]:
    """Nearest chunk ids for ``query`` from the engine's search path and from sqlite-vec directly."""
    provider = engine.embedder.provider
    assert provider is not None
    vector = await provider.embed_query(query)
    ours = [row.id for row in (await engine.index.nearest(vector, 4))[0]]
    exact = [row.id for row in await engine.index.read(store.vector_search, vector, 4)]
    return ours, exact


async def _all_embedded(engine: MemoryEngine) -> bool:
    return await engine.index.read(store.count_without_vectors) == 0


async def test_searches_move_to_the_vectors_in_ram_which_follow_every_edit(
    notes: Path, index_path: Path, write: Callable[[str, str], Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A sync loads the RAM copy; edits and deletions reach it without a reload."""
    async with MemoryEngine(_settings(notes, index_path), background_sync=False) as engine:
        await engine.sync()
        await eventually(engine.vectors_in_ram, "the vectors are loaded into RAM")
        loads: list[Any] = []
        monkeypatch.setattr(engine.index.matrix, "load", loads.append)
        write("memory/2026-01-13.md", "# 2026-01-13\n\n- Adopted a golden retriever puppy called Biscuit.\n")
        (notes / "memory" / "2026-01-11.md").unlink()
        await engine.sync_paths(["memory/2026-01-13.md", "memory/2026-01-11.md"])
        await eventually(lambda: _all_embedded(engine), "the background backfill embedded the new chunk")
        with monkeypatch.context() as patch:  # the answer cannot come from sqlite-vec
            patch.setattr(store, "vector_search", lambda *args: pytest.fail("sqlite-vec was asked"))
            answer = await engine.search("our new dog", min_score=0.0)
        assert await engine.vectors_in_ram() and loads == []
        ours, exact = await _vector_ids(engine, "our new dog")
    assert answer.results[0].path == "memory/2026-01-13.md" and answer.results[0].vector_score is not None
    assert "memory/2026-01-11.md" not in {hit.path for hit in answer.results}
    assert ours == exact and engine.index.matrix.rows == 0  # closing the engine frees the copy


async def test_vectors_made_after_a_rebuild_without_the_model_reach_ram_without_a_search(
    notes: Path, index_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An index rebuilt before its model is up (an upgrade's rebuild at start, a model still loading) is embedded
    once the model is up, and the RAM copy follows: it was loaded empty, and no search has to come first."""
    with monkeypatch.context() as older:
        older.setattr(syncer, "TERMS_IDENTITY", "keyword terms cut by an older memdex")
        async with MemoryEngine(_settings(notes, index_path), background_sync=False) as engine:
            await engine.sync()
    model_up = anyio.Event()
    factory = _use(Instrumented)

    async def late(settings: Any, exclude: frozenset[str] = frozenset()) -> ProviderChoice:
        await model_up.wait()
        return await factory(settings, exclude)

    async with MemoryEngine(_settings(notes, index_path), background_sync=False, provider_factory=late) as engine:
        async with anyio.create_task_group() as tg:
            tg.start_soon(engine.sync)  # rebuilds for the new keyword terms, the model still loading
            await eventually(engine.vectors_in_ram, "the rebuilt index's (empty) vectors are in RAM")
            assert not engine.vectors_ready
            model_up.set()
        await eventually(lambda: _all_embedded(engine), "the model embedded the rebuilt index")
        await eventually(engine.vectors_in_ram, "the vectors are in RAM again")
        assert engine.vectors_ready and engine.index.matrix.rows == len(NOTES)


async def test_another_process_writing_sends_searches_to_sqlite_vec_until_the_copy_reloads(
    notes: Path, index_path: Path, write: Callable[[str, str], Path]
) -> None:
    """Two servers on one index: the one that did not write answers correctly at once, then catches up."""
    async with (
        MemoryEngine(_settings(notes, index_path), background_sync=False) as reader,
        MemoryEngine(_settings(notes, index_path), background_sync=False) as writer,
    ):
        await reader.sync()
        await eventually(reader.vectors_in_ram, "the reader's vectors are loaded")
        write("memory/2026-01-13.md", "# 2026-01-13\n\n- Adopted a golden retriever puppy called Biscuit.\n")
        await writer.sync()
        assert not await reader.vectors_in_ram()
        answer = await reader.search("our new dog", min_score=0.0)  # sqlite-vec, while the copy reloads
        assert answer.results[0].path == "memory/2026-01-13.md" and answer.results[0].vector_score is not None

        async def reloaded() -> bool:  # each search that sqlite-vec answers asks for a reload, after a cooldown
            await reader.search("our new dog", min_score=0.0)
            return await reader.vectors_in_ram()

        await eventually(reloaded, "the reader's copy reloads")
        ours, exact = await _vector_ids(reader, "our new dog")
    assert ours == exact


async def test_keyword_search_finds_new_files_while_their_vectors_are_still_being_made(
    notes: Path, index_path: Path
) -> None:
    """A sync writes chunks first and embeds them after: a slow model never hides them from keyword search."""
    release = anyio.Event()

    class Held(Instrumented):
        async def embed_batch(self, texts: Sequence[str], *, bulk: bool = False) -> list[list[float]]:
            await release.wait()
            return await super().embed_batch(texts, bulk=bulk)

    factory = _use(Held)
    stages: list[tuple[int, int, str]] = []
    async with MemoryEngine(_settings(notes, index_path), background_sync=False, provider_factory=factory) as engine:
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: engine.sync(progress=lambda *step: stages.append(step)))

            async def found() -> bool:
                return bool((await engine.search("YN0028")).results)

            await eventually(found, "the ID is searchable before any vector exists")
            answer = await engine.search("YN0028")
            # No vector exists yet: keyword hits only (the mode may already say hybrid once the sync has
            # moved on to embedding, which the held model keeps from finishing).
            assert answer.results and all(hit.vector_score is None for hit in answer.results)
            release.set()
        answer = await engine.search("that database thing we picked", min_score=0.0)
    assert answer.mode == "hybrid" and answer.results[0].path == "MEMORY.md"
    assert (len(NOTES), len(NOTES), "files") in stages and stages[-1] == (len(NOTES), len(NOTES), "chunks embedded")


async def test_every_memory_hit_carries_its_file_hash_vector_only_hits_too(notes: Path, index_path: Path) -> None:
    """The hashes of the keyword candidates' files are read with them; a hit only the vector side found (its file
    holds no word of the query) is looked up after: each hit has the hash memory_edit checks."""
    async with MemoryEngine(_settings(notes, index_path), background_sync=False) as engine:
        await engine.sync()
        answer = await engine.search("that database thing we picked", min_score=0.0, max_results=4)
    assert answer.mode == "hybrid" and len(answer.results) == 4
    assert any(hit.text_score is None for hit in answer.results)  # a vector-only hit: not a keyword candidate's file
    for hit in answer.results:
        digest = hashlib.sha256((notes / hit.path).read_bytes()).hexdigest()
        assert hit.hash is not None and digest.startswith(hit.hash), hit.path
