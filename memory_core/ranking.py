"""Turn candidate chunks into the ranked hits a caller sees."""

from __future__ import annotations

from collections.abc import Sequence

from .fts import bm25_to_score, term_coverage
from .models import Hit
from .store import ChunkRow
from .textutil import clip

SNIPPET_CHARS = 700


def rank_keyword(rows: Sequence[ChunkRow], terms: list[str], max_results: int) -> list[Hit]:
    """Keyword-only ranking: the larger of the BM25 score and the share of query terms matched.

    BM25 alone collapses in small workspaces: FTS5 floors the IDF of any term found in more than
    half of the chunks, so a ten-chunk memory scores every hit near zero. Coverage keeps scores
    meaningful there, while in large workspaces BM25 dominates.

    No ``min_score`` cut is applied: a keyword score is not on the scale of a hybrid score, so a
    threshold tuned for hybrid search would silently drop exact keyword matches.
    """
    scored = []
    for row in rows:
        text_score = bm25_to_score(row.rank)
        scored.append((max(text_score, term_coverage(terms, row.text)), text_score, row))
    scored.sort(key=lambda item: (-item[0], item[2].rank))
    return [_hit(row, score, text_score) for score, text_score, row in scored[:max_results]]


def _hit(row: ChunkRow, score: float, text_score: float) -> Hit:
    return Hit(
        path=row.path,
        start_line=row.start_line,
        end_line=row.end_line,
        score=round(score, 6),
        text_score=round(text_score, 6),
        snippet=clip(row.text, SNIPPET_CHARS),
        source="sessions" if row.source == "sessions" else "memory",
    )
