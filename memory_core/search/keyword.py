"""The keyword side of a search: term counts, the rare-terms shortcut, BM25 candidates and term weights.

Written once for every store: a store only counts terms (:meth:`~..stores.base.StoreOps.term_counts`) and
ranks the OR of the terms it is given (:meth:`~..stores.base.StoreOps.keyword_search`).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import replace
from typing import Any

from ..stores.base import Alongside, StoreOps
from ..stores.filters import SearchFilter
from ..stores.records import ChunkRow
from .scoring import TermWeights, rare_terms, text_length, weigh_terms


def keyword_candidates(
    ops: StoreOps,
    conn: Any,
    terms: Sequence[str],
    limit: int,
    total_chunks: int,
    where: SearchFilter | None = None,
    repeats: Mapping[str, int] | None = None,
    counts: Mapping[str, int] | None = None,
    alongside: Alongside | None = None,
    phrases: Collection[str] = (),
) -> tuple[list[ChunkRow], TermWeights]:
    """The best ``limit`` chunks by BM25 for the OR of ``terms``, and ``terms`` weighed by rarity in the index,
    from one count per term (the counts serve the shortcut, the ranking and the weights).

    The shortcut: when the terms held by fewer than half the chunks fill ``limit`` rows on their own
    (:func:`.scoring.rare_terms`), searching them alone gives the same top ``limit`` without scoring every
    chunk that says "data" (counting a term's rows costs about a fifteenth of scoring them). BM25 and the
    counts are the whole index's either way; under a filter the shortcut is kept only when it filled
    ``limit`` allowed rows, else the full OR runs.

    The candidates' mean length is BM25's average length for the terms scored in Python
    (:func:`.scoring.bm25_share`); only counted when the query has such a term.

    ``repeats``: how often the query asks for each term (default once); BM25 sums a term's part that many
    times, as FTS5 does for a phrase OR-ed more than once (:func:`.scoring.weigh_terms` scales its figure alike).
    ``counts``: how many chunks hold some of the terms, when the caller has counted them already.
    ``alongside``: the owner's second reader, for a store that ranks a large query in parts at once.
    ``phrases``: the terms that are joined words' phrases (:attr:`.scoring.TermWeights.phrases`).
    """
    times = repeats or {}
    if not terms:
        return [], weigh_terms(terms, {}, total_chunks, phrases=phrases)
    known = dict(counts or {})
    if unknown := [term for term in terms if term not in known]:
        known |= ops.term_counts(conn, unknown)
    counts = known
    weights = weigh_terms(terms, counts, total_chunks, times, phrases=phrases)

    def asked(chosen: Sequence[str]) -> list[str]:
        return [term for term in chosen for _ in range(times.get(term, 1))]

    rows: list[ChunkRow] = []
    if len(terms) > 1 and total_chunks >= 2 * limit and (rare := rare_terms(terms, counts, total_chunks, limit)):
        rows = ops.keyword_search(conn, asked(rare), limit, where, counts, alongside)
    if len(rows) < limit:
        rows = ops.keyword_search(conn, asked(terms), limit, where, counts, alongside)
    if not (rows and any(weights.in_python)):
        return rows, weights
    return rows, replace(weights, average_length=sum(text_length(row.text) for row in rows) / len(rows))
