"""store.keyword_search scores only the chunks holding a query's rarest terms when no other chunk can reach
its best rows (:mod:`memdex.memory_core.stores.sqlite.pruning`): the same rows and scores as the whole query,
every time, and the whole query when the rows found that way do not clear the others' ceiling."""

from __future__ import annotations

import math
import random
from pathlib import Path
from typing import Any

import pytest

from memdex.memory_core.stores.filters import SearchFilter
from memdex.memory_core.stores.records import FileState
from memdex.memory_core.stores.sqlite import ops as store
from memdex.memory_core.stores.sqlite import pruning, schema
from memdex.memory_core.text.chunking import Chunk
from memdex.memory_core.textutil import sha256_hex

# Words from common to rare: the first in most chunks (FTS5 floors its IDF), the last in a few.
WORDS = ["standup", "deploy", "kafka", "latency", "billing", "grafana", "quota", "rollback", "sharding", "zookeeper"]
FILES = ("MEMORY.md", "memory/2026-01-10.md", "memory/2026-01-11.md")


def _texts(rng: random.Random, count: int) -> list[str]:
    """Chunks of 1 to 40 words, each word drawn with a weight falling along WORDS, some repeated many times."""
    weights = [40 / (rank + 1) ** 1.5 for rank in range(len(WORDS))]
    texts = []
    for _ in range(count):
        words = rng.choices(WORDS, weights, k=rng.randint(1, 40))
        if rng.random() < 0.1:  # a short chunk that repeats one word: a high BM25 for that word alone
            words = [rng.choice(WORDS)] * rng.randint(2, 6)
        texts.append(" ".join(words))
    return texts


@pytest.fixture(autouse=True)
def prune_small_stores(monkeypatch: pytest.MonkeyPatch) -> None:
    """These stores are small: prune whatever the left-out terms' counts (the bar has its own test)."""
    monkeypatch.setattr(store, "PRUNE_ROWS", 1)


@pytest.fixture(scope="module")
def conn(tmp_path_factory: pytest.TempPathFactory) -> Any:
    rng = random.Random(11)
    conn = schema.open_index(tmp_path_factory.mktemp("pruning") / "idx.sqlite")
    with store.transaction(conn):
        for path in FILES:
            texts = _texts(rng, 300)
            chunks = [Chunk(i + 1, i + 1, text, sha256_hex(text)) for i, text in enumerate(texts)]
            store.replace_file(conn, path, "memory", FileState(path, 0, 0), chunks)
    yield conn
    conn.close()


def _whole(conn: Any, terms: list[str], limit: int, where: SearchFilter | None = None) -> list[tuple[int, float]]:
    """The query ranked over every chunk that holds a term: keyword_search without counts never prunes."""
    return [(row.id, row.rank) for row in store.keyword_search(conn, terms, limit, where)]


def _pruned(conn: Any, terms: list[str], limit: int, where: SearchFilter | None = None) -> list[tuple[int, float]]:
    counts = store.term_counts(conn, list(dict.fromkeys(terms)))
    return [(row.id, row.rank) for row in store.keyword_search(conn, terms, limit, where, counts)]


@pytest.mark.parametrize("where", [None, SearchFilter(path_prefix="memory")], ids=["all", "a folder"])
def test_the_pruned_query_gives_the_rows_and_scores_of_the_whole_query(conn: Any, where: SearchFilter | None) -> None:
    rng = random.Random(5)
    for _ in range(300):
        terms = rng.sample(WORDS, rng.randint(2, 5))
        terms += rng.sample(terms, rng.randint(0, 1))  # a term asked twice counts twice in BM25
        limit = rng.choice([1, 3, 8, 32, 100])
        assert _pruned(conn, terms, limit, where) == _whole(conn, terms, limit, where), (terms, limit)


def _statements(conn: Any, run: Any) -> list[str]:
    """The BM25 statements ``run()`` sends to ``conn``."""
    seen: list[str] = []
    conn.set_trace_callback(seen.append)
    try:
        run()
    finally:
        conn.set_trace_callback(None)
    return [sql for sql in seen if "bm25(" in sql]


def test_a_query_over_a_common_and_a_rare_word_scores_only_the_rare_words_chunks(conn: Any) -> None:
    terms = ["standup", "zookeeper"]
    assert pruning.rarest_first(terms, store.term_counts(conn, terms), 8, 900)[:2] == (["zookeeper"], ["standup"])
    ranked = _statements(conn, lambda: _pruned(conn, terms, 8))
    assert len(ranked) == 1 and "MATCH '\"zookeeper\"'" in ranked[0], ranked  # one query, scoring the rare word's chunks


def test_a_query_whose_left_out_terms_few_chunks_hold_is_ranked_whole(conn: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    terms = ["standup", "zookeeper"]
    held = store.term_counts(conn, ["standup"])["standup"]
    monkeypatch.setattr(store, "PRUNE_ROWS", held + 1)
    ranked = _statements(conn, lambda: _pruned(conn, terms, 8))
    assert len(ranked) == 1 and "+rowid IN" not in ranked[0], ranked
    monkeypatch.setattr(store, "PRUNE_ROWS", held)
    ranked = _statements(conn, lambda: _pruned(conn, terms, 8))
    assert len(ranked) == 1 and "+rowid IN" in ranked[0], ranked


def test_rows_that_do_not_clear_the_ceiling_fall_back_to_the_whole_query(tmp_path: Path) -> None:
    """A short chunk that repeats the common words outscores the chunks holding the rare one once in a long
    text: it holds no rare word, so the pruned query cannot see it, and only the whole query finds it."""
    texts = [f"deploy log {i} " + "filler " * 30 for i in range(40)]
    texts[3] = "billing " * 3
    texts[7] += "sharding"
    texts[9] += "sharding"
    texts[20] = "billing deploy billing deploy"
    texts[25] += "billing"
    conn = schema.open_index(tmp_path / "idx.sqlite")
    with store.transaction(conn):
        chunks = [Chunk(i + 1, i + 1, text, sha256_hex(text)) for i, text in enumerate(texts)]
        store.replace_file(conn, "MEMORY.md", "memory", FileState("h", 0, 0), chunks)
    terms = ["sharding", "billing"]
    counts = store.term_counts(conn, terms)
    assert counts == {"sharding": 2, "billing": 3}
    assert pruning.rarest_first(terms, counts, 2, 40)[:2] == (["sharding"], ["billing"])
    whole = _whole(conn, terms, 2)
    assert {cid for cid, _ in whole} & {4, 21}, "a chunk without the rare word is among the best two"
    ranked = _statements(conn, lambda: _pruned(conn, terms, 2))
    assert len(ranked) == 2, "the pruned query, then the whole one"
    assert _pruned(conn, terms, 2) == whole
    conn.close()


def test_rarest_first_and_the_ceiling() -> None:
    counts = {"rare": 3, "mid": 40, "common": 900, "absent": 0, "twin": 40, "rarer": 1}
    split = pruning.rarest_first(["common", "rare", "mid", "absent"], counts, 10, 1000)
    assert split is not None and split[:2] == (["rare", "mid"], ["common"])
    assert split.ceiling == pytest.approx(2.2e-6)  # FTS5's IDF floor, times k1 + 1
    assert pruning.rarest_first(["common", "rare"], counts, 3, 1000)[:2] == (["rare"], ["common"])
    assert pruning.rarest_first(["rare", "mid"], counts, 50, 1000) is None  # every term is needed to fill the rows
    assert pruning.rarest_first(["rare"], counts, 1, 1000) is None  # nothing to leave out
    # the rest's ceiling must fall below the least rare kept term's: one as rare as it is not left out
    assert pruning.rarest_first(["mid", "twin"], counts, 10, 1000) is None
    assert pruning.rarest_first(["rare", "mid", "twin"], counts, 3, 1000) is None  # 'rare' is below 'mid' and 'twin' together
    one = math.log((1000 - 40 + 0.5) / (40 + 0.5)) * 2.2  # FTS5's IDF of 'mid', times k1 + 1
    split = pruning.rarest_first(["rare", "mid", "common"], counts, 3, 1000)
    assert split == (["rare"], ["mid", "common"], pytest.approx(one + 2.2e-6))
    split = pruning.rarest_first(["mid", "rarer", "mid"], counts, 1, 1000)  # 'mid' asked twice
    assert split == (["rarer"], ["mid"], pytest.approx(2 * one))
    assert pruning.clears(2.0, 1.9) and not pruning.clears(1.9, 1.9)
