"""A chunk embedded as windows of its lines (``embedding.window_tokens``) ranks by its best window.

The cutting is pure (chunking.vector_parts); the rest runs the engine with the deterministic hash
provider (tests/fake_provider.py: a text's vector is the sum of its words' vectors, so a long chunk's
vector is diluted by every other word in it, as a small model's is).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from fake_provider import HashFactory

from memdex.memory_core import MemoryEngine
from memdex.memory_core.limits import MAX_VECTOR_PARTS
from memdex.memory_core.stores.sqlite import ops as store
from memdex.memory_core.text.chunking import CHARS_PER_TOKEN, text_cost, vector_parts

MakeEngine = Callable[..., MemoryEngine]
Write = Callable[[str, str], Path]

FILLER = [f"- Filler line {i}: {' '.join(f'word{i}x{j}' for j in range(9))}." for i in range(30)]
NEEDLE = "- The lighthouse keeper collects blue glass floats."
QUERY = "lighthouse keeper blue glass floats"


def _note() -> str:
    return "\n".join(["# Notes", *FILLER[:15], NEEDLE, *FILLER[15:]]) + "\n"


# Cutting -----------------------------------------------------------------------------------------


def test_a_chunk_is_its_own_part_without_windows_or_when_it_fits_one() -> None:
    text = "\n".join(FILLER[:3])
    assert vector_parts(text, 0) == [text]
    assert vector_parts(text, 400) == [text]


def test_windows_are_runs_of_whole_lines_within_the_budget() -> None:
    text = "\n".join(FILLER[:10])
    parts = vector_parts(text, 64)
    assert 3 <= len(parts) <= MAX_VECTOR_PARTS
    assert "\n".join(parts) == text  # every line once, in order, none cut
    assert all(text_cost(p) <= 64 * CHARS_PER_TOKEN for p in parts)
    assert all(p.split("\n")[0] in FILLER for p in parts)


def test_windows_widen_rather_than_exceed_the_part_limit() -> None:
    text = "\n".join(FILLER * 4)
    parts = vector_parts(text, 16)
    assert len(parts) <= MAX_VECTOR_PARTS and "\n".join(parts) == text


def test_a_line_longer_than_a_window_is_a_part_of_its_own() -> None:
    long = "x " * 400
    text = "\n".join([FILLER[0], long.strip(), FILLER[1]])
    assert vector_parts(text, 32) == [FILLER[0], long.strip(), FILLER[1]]


def test_blank_windows_are_not_embedded() -> None:
    text = FILLER[0] + "\n" + "\n" * 300 + FILLER[1]
    parts = vector_parts(text, 16)
    assert parts and all(p.strip() for p in parts)


# The engine --------------------------------------------------------------------------------------


async def _vector_rows(engine: MemoryEngine) -> int:
    return int(await engine.index.read(lambda c: c.execute("SELECT count(*) FROM chunks_vec").fetchone()[0]))


async def _vector_score(engine: MemoryEngine) -> float:
    answer = await engine.search(QUERY, min_score=0.0)
    assert answer.mode == "hybrid" and answer.results
    top = answer.results[0]
    assert top.path == "MEMORY.md" and top.vector_score is not None
    return top.vector_score


@pytest.mark.parametrize("ram", [True, False], ids=["ram-copy", "sqlite-vec"])
async def test_a_chunk_scores_by_its_best_window(
    make_engine: MakeEngine, write: Write, ram: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    write("MEMORY.md", _note())
    async with make_engine(provider_factory=HashFactory(), chunking={"tokens": 2000, "overlap": 0}) as engine:
        await engine.sync()
        whole = await _vector_score(engine)
        assert await _vector_rows(engine) == 1
    async with make_engine(
        provider_factory=HashFactory(), chunking={"tokens": 2000, "overlap": 0}, embedding={"window_tokens": 48}
    ) as engine:
        await engine.sync()  # another vector identity: the index is rebuilt with windows
        assert await engine.index.read(store.counts) == (1, 1)
        parts = await _vector_rows(engine)
        if ram:
            await engine.index.load_vectors()
        else:
            monkeypatch.setattr(engine.index.matrix, "search", lambda *args: None)
        windowed = await _vector_score(engine)
    assert 1 < parts <= MAX_VECTOR_PARTS
    assert windowed > whole + 0.2, (whole, windowed)


async def test_every_window_goes_with_its_chunk(make_engine: MakeEngine, write: Write) -> None:
    path = write("MEMORY.md", _note())
    async with make_engine(provider_factory=HashFactory(), embedding={"window_tokens": 48}) as engine:
        await engine.sync()
        await engine.index.load_vectors()
        chunks = (await engine.index.read(store.counts))[1]
        rows = await _vector_rows(engine)
        assert rows > chunks and engine.index.matrix.rows == rows
        assert await engine.index.read(store.count_without_vectors) == 0
        path.write_text("# Notes\n\n- Only a short line now.\n", encoding="utf-8")
        await engine.sync()
        assert await _vector_rows(engine) == 1 and engine.index.matrix.rows == 1  # the RAM copy followed
        answer = await engine.search("short line", min_score=0.0)
        assert [hit.path for hit in answer.results] == ["MEMORY.md"]
