"""Answering a query: check its arguments, run the keyword and vector sides together, fuse them."""

from __future__ import annotations

import datetime as dt
from typing import Literal

import anyio

from . import store
from .config import QuerySettings
from .embedder import Embedder
from .errors import EmbeddingError, InputError, as_memdex_error
from .fts import query_terms
from .index_db import IndexDatabase
from .limits import MAX_CANDIDATES, MAX_RESULTS
from .models import Hit, IndexStatus, SearchAnswer
from .ranking import rank_hybrid, rank_keyword


class Searcher:
    """Hybrid search over one index: keyword-only until the index's vectors belong to the running provider."""

    def __init__(self, query: QuerySettings, query_timeout: float, index: IndexDatabase, embedder: Embedder) -> None:
        self.query = query
        self.query_timeout = query_timeout
        self.index = index
        self.embedder = embedder

    def limits(self, max_results: int | None, min_score: float | None) -> tuple[int, float]:
        """The effective (maxResults, minScore), or InputError naming the one out of range."""
        limit = self.query.max_results if max_results is None else max_results
        if not 1 <= limit <= MAX_RESULTS:
            raise InputError(f"maxResults must be between 1 and {MAX_RESULTS} (got {limit})")
        threshold = self.query.min_score if min_score is None else min_score
        if not 0.0 <= threshold <= 1.0:
            raise InputError(f"minScore must be between 0 and 1 (got {threshold})")
        return limit, threshold

    async def search(
        self, text: str, limit: int, threshold: float, status: IndexStatus, *, vectors: bool, today: dt.date
    ) -> tuple[SearchAnswer, bool]:
        """Rank chunks for ``text``; also says whether the vector side had to use sqlite-vec
        (the RAM copy of the vectors is not in step and should be reloaded)."""
        q = self.query
        candidates = min(MAX_CANDIDATES, limit * q.candidate_multiplier)
        terms = query_terms(text)
        warnings = []
        files_written = status.files_total > 0 and status.files_done == status.files_total  # only embedding now
        if status.state == "starting" or (status.state == "indexing" and not files_written):
            warnings.append(
                f"the index is still being built ({status.files_done}/{status.files_total} files); "
                "results may be incomplete, search again shortly"
            )
        keyword_rows: list[store.ChunkRow] = []
        vector: list[float] | None = None
        vector_rows: list[store.ChunkRow] = []
        from_ram = True

        async def keyword_side() -> None:
            nonlocal keyword_rows
            keyword_rows = await self.index.read(store.keyword_search, terms, candidates, status.chunks)

        async def vector_side() -> None:
            nonlocal vector, vector_rows, from_ram
            vector = await self._query_vector(text, warnings)
            if vector is not None:
                vector_rows, from_ram = await self.index.nearest(vector, candidates)

        try:
            async with anyio.create_task_group() as tg:  # the two sides run side by side
                tg.start_soon(keyword_side)
                if vectors:
                    tg.start_soon(vector_side)
        except BaseExceptionGroup as group:  # callers catch StoreError (an IndexCorrupt repairs), not a group
            error = as_memdex_error(group)
            if error is None:
                raise
            raise error from group
        hits: list[Hit]
        if vector is None:
            if not terms:
                warnings.append("the query has no words or numbers to search for; rephrase it with words")
            hits = rank_keyword(keyword_rows, terms, limit, q, today)
            mode: Literal["hybrid", "keyword"] = "keyword"
        else:
            hits = rank_hybrid(keyword_rows, vector_rows, terms, limit, threshold, q, today)
            mode = "hybrid"
        provider = self.embedder.provider
        answer = SearchAnswer(
            results=hits, mode=mode, provider=provider.id if provider else None,
            model=provider.model if provider else None, warning=" ".join(warnings) or None, index_status=status,
        )
        return answer, from_ram

    async def _query_vector(self, text: str, warnings: list[str]) -> list[float] | None:
        """The query's embedding, or None (with a warning) when it fails or is too slow."""
        provider = self.embedder.provider
        if provider is None:
            return None
        try:
            with anyio.fail_after(self.query_timeout):
                return await provider.embed_query(text)
        except TimeoutError:
            warnings.append(f"the query embedding took over {self.query_timeout:g}s; these are keyword results")
        except EmbeddingError as exc:
            warnings.append(f"the query embedding failed ({exc}); these are keyword results")
        return None
