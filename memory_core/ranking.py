"""Turn candidate chunks into the ranked hits a caller sees."""

from __future__ import annotations

from collections.abc import Sequence

from .fts import bm25_to_score
from .models import Hit
from .store import ChunkRow
from .textutil import clip

SNIPPET_CHARS = 700


def rank_keyword(rows: Sequence[ChunkRow], max_results: int) -> list[Hit]:
    """Keyword-only ranking: BM25 order, scores squashed to 0..1.

    No ``min_score`` cut is applied: a BM25-derived score is not on the scale of a hybrid score, so
    a threshold tuned for hybrid search would silently drop exact keyword matches.
    """
    hits = []
    for row in sorted(rows, key=lambda r: r.rank)[:max_results]:
        score = round(bm25_to_score(row.rank), 6)
        hits.append(
            Hit(
                path=row.path,
                start_line=row.start_line,
                end_line=row.end_line,
                score=score,
                text_score=score,
                snippet=clip(row.text, SNIPPET_CHARS),
                source="sessions" if row.source == "sessions" else "memory",
            )
        )
    return hits
