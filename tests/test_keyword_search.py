"""store.keyword_search: BM25 top rows, skipping terms whose IDF FTS5 floors to zero when that changes nothing;
term_stats: the term counts keyword scores weigh terms by."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest

from memdex.memory_core.config_sections import QuerySettings
from memdex.memory_core.search import keyword
from memdex.memory_core.search.ranking import rank_keyword
from memdex.memory_core.search.scoring import bm25_idf
from memdex.memory_core.stores.records import FileState
from memdex.memory_core.stores.sqlite import ops as store
from memdex.memory_core.stores.sqlite import schema
from memdex.memory_core.stores.sqlite.ops import match_expression
from memdex.memory_core.stores.sqlite.tokens import phrases
from memdex.memory_core.text.chunking import Chunk
from memdex.memory_core.text.terms import query_terms
from memdex.memory_core.textutil import sha256_hex


def _index(path: Path, texts: list[str]) -> Any:
    conn = schema.open_index(path)
    chunks = [Chunk(i + 1, i + 1, text, sha256_hex(text)) for i, text in enumerate(texts)]
    with store.transaction(conn):
        store.replace_file(conn, "MEMORY.md", "memory", FileState("h", 0, 0), chunks)
    return conn


@pytest.fixture
def matches(tmp_path: Path) -> Any:
    """60 chunks: 'standup' in every one (IDF floored), 'kafka' in 20 (with rising counts), 'grafana' in 4."""
    texts = [f"note {i}: standup went fine" for i in range(60)]
    for i in range(20):
        texts[i] += " kafka" * (i % 7 + 1) + f" filler{i}" * (i % 5)
    for i in (30, 31, 32, 33):
        texts[i] += " grafana dashboards"
    conn = _index(tmp_path / "idx.sqlite", texts)
    expressions: list[str] = []
    conn.set_trace_callback(expressions.append)
    yield conn, expressions
    conn.close()


def _full(conn: Any, terms: list[str], limit: int) -> list[tuple[int, float]]:
    rows = conn.execute(store.keyword_search_sql(), (match_expression(terms), limit)).fetchall()
    return [(row[0], row[6]) for row in rows]


def test_a_term_in_most_chunks_is_left_out_when_rarer_terms_fill_the_rows(matches: Any) -> None:
    conn, statements = matches
    rows, _ = keyword.keyword_candidates(store, conn, ["standup", "kafka"], 10, 60)
    ranked = [s for s in statements if "bm25" in s]
    assert len(ranked) == 1 and '"kafka"' in ranked[0] and '"standup"' not in ranked[0]
    full = _full(conn, ["standup", "kafka"], 10)
    assert [r.id for r in rows] == [cid for cid, _ in full]
    assert [r.rank for r in rows] == pytest.approx([rank for _, rank in full], abs=1e-4)


def test_every_term_is_kept_when_the_rare_ones_cannot_fill_the_rows(matches: Any) -> None:
    """'grafana' is in 4 chunks: the other 6 rows must come from 'standup', so the full OR runs."""
    conn, statements = matches
    rows, _ = keyword.keyword_candidates(store, conn, ["standup", "grafana"], 10, 60)
    ranked = [s for s in statements if "bm25" in s]
    assert len(ranked) == 1 and '"standup"' in ranked[0]
    assert [r.id for r in rows] == [cid for cid, _ in _full(conn, ["standup", "grafana"], 10)]
    assert {r.id for r in rows[:4]} == {31, 32, 33, 34} and len(rows) == 10


def test_a_lone_common_term_and_an_empty_query_still_answer(matches: Any) -> None:
    conn, _ = matches
    assert len(keyword.keyword_candidates(store, conn, ["standup"], 10, 60)[0]) == 10
    assert keyword.keyword_candidates(store, conn, [], 10, 60)[0] == []
    assert store.keyword_search(conn, [], 10) == []


def test_term_weights_count_each_terms_chunks(matches: Any) -> None:
    """One count per term serves both the search and the weights (no second round of counts)."""
    conn, statements = matches
    statements.clear()
    rows, weights = keyword.keyword_candidates(store, conn, ["standup", "kafka", "grafana", "absent"], 10, 60)
    assert len(rows) == 10
    assert sum("SELECT doc FROM" in s for s in statements) == 4 and not any("count(*)" in s for s in statements)
    assert weights.weights[0] < weights.weights[1] < weights.weights[2]  # in 60, 20 and 4 chunks
    assert weights.weights[3] == 0.0
    assert weights.bm25_scale == pytest.approx(bm25_idf(20, 60) + bm25_idf(4, 60))  # 'standup' is floored


def test_a_tiny_memory_still_gets_meaningful_keyword_scores(tmp_path: Path) -> None:
    """Two chunks: FTS5 floors every IDF, so BM25 is ~0; coverage weighted by rarity still scores them."""
    conn = _index(tmp_path / "tiny.sqlite", ["Lukas owns the backup job", "backup notes"])
    terms = query_terms("who owns the backups?")
    rows, weights = keyword.keyword_candidates(store, conn, terms, 10, 2)
    assert all(row.rank > -1e-5 for row in rows)
    hits = rank_keyword(rows, weights, 5, QuerySettings(), dt.date(2026, 1, 1))
    assert [h.row.start_line for h in hits] == [1, 2]
    assert 0.8 < hits[0].score < 1.0 and 0.1 < hits[1].score < 0.5  # 'backup' is in both chunks: it weighs less
    conn.close()


def test_term_counts_are_the_chunks_each_term_matches_after_edits_and_deletes(tmp_path: Path) -> None:
    """A term of one token is counted from FTS5's term list, a phrase by its matches: both give how many chunks
    a search for the term matches, for stemmed forms, identifiers, CJK grams and folded accents, also once
    chunks were replaced and deleted (the term list keeps no count of its own for a deleted chunk)."""
    texts = ["deployed the billing-service, deploy again", "BillingV2Enabled flag", "postgres_url set", "café notes", "数据库迁移",
             "deploys and deploying", "the lockfile"] * 3  # fmt: skip
    conn = _index(tmp_path / "index.sqlite", texts)
    kept = texts[:5]
    with store.transaction(conn):
        store.replace_file(conn, "MEMORY.md", "memory", FileState("h2", 0, 0), [Chunk(i + 1, i + 1, t, sha256_hex(t)) for i, t in enumerate(kept)])
        store.replace_file(conn, "notes/other.md", "memory", FileState("h3", 0, 0), [Chunk(1, 1, "deploy again", sha256_hex("x"))])
        store.delete_files(conn, ["notes/other.md"])
    terms = ["deploy", "deployed", "billing", "billingv2enabled", "enabled", "postgres_url", "cafe", "café", "数据",
             "lockfile", "nothing", "service"]  # fmt: skip
    matched = {term: conn.execute("SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH ?", (match_expression([term]),)).fetchone()[0]
               for term in terms}  # fmt: skip
    assert store.term_counts(conn, terms) == matched
    assert matched["deploy"] == 1 and matched["lockfile"] == 0 and matched["postgres_url"] == 1 and matched["café"] == 1
    # cut together, each term keeps its own tokens in their order
    assert phrases(["url postgres", "postgres_url", "Deployed", "", "—"]) == {
        "url postgres": ("url", "postgr"), "postgres_url": ("postgr", "url"), "Deployed": ("deploi",), "": (), "—": ()}  # fmt: skip


def test_texts_holding_a_term_are_the_first_chunks_that_hold_it(tmp_path: Path) -> None:
    """How the notes write a word: the texts of the first chunks (by id) a search for it matches, a phrase too."""
    texts = ["the lockfile broke", "decisions made", "we decided", "postgres url", "the decision on POSTGRES_URL", "decisions"]
    conn = _index(tmp_path / "index.sqlite", texts)
    assert store.texts_holding(conn, "decision", 2) == ["decisions made", "the decision on POSTGRES_URL"]
    assert store.texts_holding(conn, "postgres_url", 3) == ["postgres url", "the decision on POSTGRES_URL"]
    assert store.texts_holding(conn, "nothing", 3) == []
