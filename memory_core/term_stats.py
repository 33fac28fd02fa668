"""How many chunks hold each query term: the statistics keyword scores weigh terms by."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .backend import StoreOps
from .filters import SearchFilter
from .fts import TermWeights, weigh_terms
from .records import ChunkRow


def keyword_candidates(
    ops: StoreOps,
    conn: Any, terms: Sequence[str], limit: int, total_chunks: int, where: SearchFilter | None = None
) -> tuple[list[ChunkRow], TermWeights]:
    """The best ``limit`` chunks by BM25 and ``terms`` weighed by rarity in the index, from one
    count per term, in one call (the counts serve both the search's shortcut and the weights)."""
    counts = ops.term_counts(conn, terms)
    rows = ops.keyword_search(conn, terms, limit, total_chunks, where, counts)
    return rows, weigh_terms(terms, counts, total_chunks)
