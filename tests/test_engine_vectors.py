"""Vectors never hold up keyword search, appends or notifications; provider faults never poison the index.

Every test here uses the deterministic hash provider (tests/fake_provider.py), so they always run.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from fake_provider import HashFactory, HashProvider
from helpers import eventually

from memdex.memory_core import MemoryEngine
from memdex.memory_core.embeddings.base import check_vectors, l2_normalize
from memdex.memory_core.errors import EmbeddingError

pytestmark = pytest.mark.both_stores

MakeEngine = Callable[..., MemoryEngine]
Write = Callable[[str, str], Path]

NOTES = {
    "MEMORY.md": "# Memory\n\n- We chose PostgreSQL for storage after comparing it with MySQL.\n",
    "memory/2026-01-10.md": "# 2026-01-10\n\n- Fixed the YN0028 lockfile error in CI.\n",
    "memory/2026-01-12.md": "# 2026-01-12\n\n- Dinner recipe: lentil soup with cumin and lemon.\n",
}


@pytest.fixture
def notes(write: Write) -> None:
    for rel, text in NOTES.items():
        write(rel, text)


async def _unembedded(engine: MemoryEngine) -> int:
    return int(await engine.index.read(engine.index.ops.count_without_vectors))


async def _cache_rows(engine: MemoryEngine) -> list[tuple[int, bytes]]:
    table = "memdex_cache" if engine.settings.store.backend == "postgres" else "cache.embedding_cache"
    rows = await engine.index.write(lambda c: c.execute(f"SELECT dims, embedding FROM {table}").fetchall())
    return [(int(dims), bytes(blob)) for dims, blob in rows]


async def test_keyword_search_works_while_the_provider_is_still_starting(notes: None, make_engine: MakeEngine) -> None:
    """A model download that hangs (point 3): the first sync indexes keywords at once; vectors follow."""
    factory = HashFactory()
    factory.gate = anyio.Event()
    async with make_engine(background_sync=True, watch={"enabled": False}, provider_factory=factory) as engine:

        async def found() -> bool:
            return bool((await engine.search("lentil")).results)

        await eventually(found, "keyword results before the provider has started")
        answer = await engine.search("lentil")
        assert answer.mode == "keyword" and answer.results[0].path == "memory/2026-01-12.md"
        factory.gate.set()

        async def hybrid() -> bool:
            return (await engine.search("lentil")).mode == "hybrid" and await _unembedded(engine) == 0

        await eventually(hybrid, "hybrid search once the provider is up")


async def test_an_append_returns_at_once_with_a_stuck_provider_and_is_embedded_later(
    notes: None, make_engine: MakeEngine
) -> None:
    """Point 4: a targeted sync writes chunks and returns; the background backfill adds the vector."""
    factory = HashFactory()
    async with make_engine(provider_factory=factory) as engine:
        await engine.sync()
        factory.provider.hold = anyio.Event()
        with anyio.fail_after(3):
            receipt = await engine.append("Booked the dentist for March 3rd.")
        answer = await engine.search("dentist")
        assert answer.results and answer.results[0].path == receipt.path
        assert await _unembedded(engine) == 1
        factory.provider.hold.set()
        await eventually(lambda: _zero(engine), "the appended chunk gets its vector")


async def _zero(engine: MemoryEngine) -> bool:
    return await _unembedded(engine) == 0


async def test_a_failed_embedding_is_retried_without_a_full_sync(notes: None, make_engine: MakeEngine) -> None:
    """Point 4 and 16: one failure does not switch embedding off; the backfill retries with backoff."""
    factory = HashFactory()
    async with make_engine(provider_factory=factory) as engine:
        await engine.sync()
        factory.provider.fail = True
        await engine.append("Planted tomatoes by the fence.")
        await engine.append("Planted basil next to them.", target="long_term")
        assert await _unembedded(engine) == 2
        assert "scripted outage" in ((await engine.status()).note or "")
        factory.provider.fail = False
        await eventually(lambda: _zero(engine), "the backfill retries after the outage", timeout=15)
        assert (await engine.status()).note is None


async def test_a_provider_down_at_start_is_retried_until_it_comes_back(notes: None, make_engine: MakeEngine) -> None:
    """Point 16: a server started while the provider was down embeds everything once it recovers."""
    factory = HashFactory()
    factory.down = True
    async with make_engine(background_sync=True, watch={"enabled": False}, provider_factory=factory) as engine:
        await eventually(lambda: _started(engine), "the first sync ran keyword-only")
        assert (await engine.status()).mode == "keyword"
        factory.down = False
        await eventually(lambda: _hybrid_and_complete(engine), "vectors after the provider recovered", timeout=15)
    assert factory.starts >= 2


async def _started(engine: MemoryEngine) -> bool:
    return (await engine.status()).last_sync is not None


async def _hybrid_and_complete(engine: MemoryEngine) -> bool:
    return (await engine.status()).mode == "hybrid" and await _unembedded(engine) == 0


@pytest.mark.parametrize("fault", ["wrong_dims", "nan"])
async def test_bad_vectors_never_reach_the_cache_or_the_index(
    notes: None, make_engine: MakeEngine, fault: str
) -> None:
    """Point 16: vectors of another size or not finite are refused; search keeps working, nothing is cached."""
    provider = HashProvider()
    setattr(provider, fault, True)
    async with make_engine(provider_factory=HashFactory(provider)) as engine:
        await engine.sync()  # no exception: the chunks are indexed, the vectors wait
        answer = await engine.search("lentil soup")
        status = await engine.status()
        assert answer.results[0].path == "memory/2026-01-12.md"
        assert await _cache_rows(engine) == [] and await _unembedded(engine) == len(NOTES)
        assert "not stored" in (status.note or "") or "dimension" in (status.note or "")
        setattr(provider, fault, False)
        await engine.sync()
        assert await _unembedded(engine) == 0
        assert {dims for dims, _ in await _cache_rows(engine)} == {provider.dims}


async def test_an_acknowledged_append_is_searchable_under_concurrent_writers(make_engine: MakeEngine) -> None:
    """Point 15: with 8 writers appending to the same log, every note is found right after its append."""
    missed: list[str] = []
    async with make_engine() as engine:
        await engine.sync()

        async def writer(n: int) -> None:
            for i in range(6):
                word = f"zq{n}x{i}marker"
                await engine.append(f"Note {word} from writer {n}.")
                if not (await engine.search(word)).results:
                    missed.append(word)

        async with anyio.create_task_group() as tg:
            for n in range(8):
                tg.start_soon(writer, n)
    assert missed == []


async def test_every_sync_publishes_what_it_changed(notes: None, make_engine: MakeEngine, write: Write) -> None:
    """Point 5: the startup sync and a later full sync (the reconcile) notify listeners, not only appends."""
    heard: list[list[str]] = []

    async def listener(paths: list[str]) -> None:
        heard.append(paths)

    async with make_engine(background_sync=True, watch={"enabled": False}) as engine:
        engine.add_change_listener(listener)
        await eventually(lambda: _heard(heard, "MEMORY.md"), "the startup sync was published")
        write("memory/2026-01-13.md", "# 2026-01-13\n\n- A new note written while nothing watched.\n")
        await engine.sync()
        await eventually(lambda: _heard(heard, "memory/2026-01-13.md"), "the full sync's change was published")


async def _heard(heard: list[list[str]], rel: str) -> bool:
    return any(rel in paths for paths in heard)


async def test_a_stuck_listener_never_stalls_an_append(make_engine: MakeEngine) -> None:
    """Point 5: listeners run in the background; an append returns while one hangs."""
    stuck = anyio.Event()

    async def listener(paths: list[str]) -> None:
        await stuck.wait()

    async with make_engine() as engine:
        engine.add_change_listener(listener)
        started = time.monotonic()
        for i in range(3):
            await engine.append(f"Entry number {i} while a client hangs.")
        assert time.monotonic() - started < 2
        stuck.set()


async def test_a_rebuild_for_another_provider_under_auto_is_not_undone_by_a_second_process(
    notes: None, make_engine: MakeEngine, index_path: Path
) -> None:
    """Point 2: with provider auto, a process whose provider differs from the index's searches by
    keyword instead of rebuilding the index back and forth."""
    first = HashFactory(HashProvider(dims=32, model="model-a"))

    class Other(HashProvider):
        id = "other"

    second = HashFactory(Other(dims=16, model="model-b"))
    auto: dict[str, Any] = {"provider": "auto"}
    async with make_engine(embedding=auto, provider_factory=first) as a:
        await a.sync()
    async with make_engine(embedding=auto, provider_factory=second) as b:
        await b.sync()
        status = await b.status()
        assert status.mode == "keyword" and "auto" in (status.note or "")
    async with make_engine(embedding=auto, provider_factory=first) as a:
        await a.sync()
        assert (await a.status()).mode == "hybrid"
    assert first.provider.texts_embedded == len(NOTES)  # embedded once: no rebuild ever ran


async def test_only_planned_backfills_are_bulk_work(notes: None, make_engine: MakeEngine) -> None:
    """Point 9: a full sync's backfill may use a bulk path (a Batch API); an append's never does."""
    factory = HashFactory()
    async with make_engine(provider_factory=factory) as engine:
        await engine.sync()
        assert factory.provider.bulk_calls == 1
        await engine.append("A note that must be embedded at once, not in a batch job.")
        await eventually(lambda: _zero(engine), "the appended chunk gets its vector")
        assert factory.provider.bulk_calls == 1


async def test_a_query_vector_that_is_not_finite_is_a_failed_embedding(notes: None, make_engine: MakeEngine) -> None:
    """A NaN query vector (a broken model or server) is refused like a failed embedding: keyword results, said so
    in a warning, never a 'hybrid' answer ranked on garbage."""
    provider = HashProvider()
    async with make_engine(provider_factory=HashFactory(provider)) as engine:
        await engine.sync()
        assert (await engine.search("lentil soup")).mode == "hybrid"
        provider.nan = True
        answer = await engine.search("lentil soup")
        assert answer.mode == "keyword" and answer.results[0].path == "memory/2026-01-12.md"
        assert "not finite" in (answer.warning or ""), answer.warning


def test_normalising_never_hides_a_non_finite_value() -> None:
    for bad in ([math.nan, 1.0], [math.inf, 0.0], [1.0, -math.inf]):
        with pytest.raises(EmbeddingError, match="not finite"):
            check_vectors([l2_normalize(bad)], 1, 2, "test")
    assert l2_normalize([3.0, 4.0]) == [0.6, 0.8]
