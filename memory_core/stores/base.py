"""The seam between memdex's shared engine and a database: what a store backend provides.

A backend is two things:

* :class:`StoreOps` — the operations on one connection, synchronous, each run on a worker thread
  by the owner. A module can be one (:mod:`.sqlite.ops` is SQLite's): the syncer, embedder, indexer and
  searcher call them as ``index.ops.<name>`` and never see SQL.
* :class:`IndexOwner` — the object that owns the connections (one writer, pooled readers), runs the
  operations on threads, maps database errors to memdex errors, and knows how to rebuild beside the
  live index and switch over (:class:`~.sqlite.owner.IndexDatabase` for SQLite).

Everything above the seam — chunking, the embedding cache's policy, fusion, snippets, the tools — is
shared by every backend. Connections are ``Any`` here: each backend has its own.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future
from contextlib import AbstractAsyncContextManager, AbstractContextManager
from typing import Any, Protocol, TypeVar

from .filters import SearchFilter
from .records import (
    CacheKey,
    ChunkRow,
    ChunkVectors,
    FileChange,
    FileState,
    IndexedTail,
    TailChange,
    VectorDelta,
    Written,
)

T = TypeVar("T")

# The shortest term :meth:`StoreOps.terms_ending` finds: a compound's last part is looked up only in words of
# two parts, a four-letter word before three letters or more (search/compounds.py).
ENDING_MIN = 7

# Starts ``fn(connection)`` at once on another of the owner's readers and thread, or says None when none is free
# (:meth:`IndexOwner.alongside`): a store may give one query two cores.
Alongside = Callable[[Callable[[Any], list[ChunkRow]]], Future[list[ChunkRow]] | None]


class StoreOps(Protocol):
    """The operations every store offers, on a connection its owner hands out."""

    SCHEMA_VERSION: int  # in the index's identity: a change rebuilds the index
    KEEPS_TEXT: bool  # a Markdown file's text is stored (file_text): a FileChange must carry the whole text

    # Transactions and meta
    def transaction(self, conn: Any) -> AbstractContextManager[None]: ...
    def read_meta(self, conn: Any, key: str) -> Any: ...
    def write_meta(self, conn: Any, key: str, value: Any) -> None: ...

    # Files and chunks
    def file_states(self, conn: Any) -> dict[str, FileState]: ...
    def replace_files(self, conn: Any, changes: Sequence[FileChange]) -> list[tuple[list[int], list[int]]]: ...
    def indexed_tails(self, conn: Any, paths: Sequence[str], chunks: int) -> dict[str, IndexedTail]:
        """The indexed state and last ``chunks`` chunks of those of ``paths`` the index holds."""
        ...
    def replace_tail(self, conn: Any, tail: TailChange) -> list[int] | None:
        """Replace a grown file's last chunks (inside the caller's transaction); returns the new chunks' ids,
        or None, changing nothing, when the index no longer holds the file as ``tail`` read it."""
        ...
    def file_text(self, conn: Any, path: str) -> str | None: ...
    def touch_file(self, conn: Any, path: str, state: FileState) -> None: ...
    def delete_files(self, conn: Any, paths: Iterable[str]) -> list[int]: ...
    def file_paths(self, conn: Any) -> list[str]: ...
    def file_hashes(self, conn: Any, paths: Sequence[str]) -> dict[str, str]:
        """The content hash (SHA-256 hex) each of ``paths`` had when it was indexed; absent: not indexed."""
        ...
    def chunks_of(
        self, conn: Any, paths: Sequence[str], limit: int, where: SearchFilter | None = None
    ) -> list[ChunkRow]: ...
    def chunks_starting(self, conn: Any, places: Sequence[tuple[str, int]]) -> list[ChunkRow]:
        """The chunk that starts at each (path, line) of ``places`` that has one."""
        ...
    def counts(self, conn: Any) -> tuple[int, int]: ...

    # Vectors
    def ensure_vector_table(self, conn: Any, dims: int) -> None: ...
    def insert_vectors(self, conn: Any, chunks: Sequence[ChunkVectors]) -> None: ...
    def stamp_vectors(self, conn: Any, delta: VectorDelta) -> VectorDelta: ...
    def chunks_without_vectors(self, conn: Any, after: int, limit: int) -> list[tuple[int, str, str]]: ...
    def chunks_lacking_vectors(self, conn: Any, chunks: Sequence[tuple[int, str]]) -> set[int]: ...
    def count_without_vectors(self, conn: Any) -> int: ...

    # Embedding cache
    def cached_vectors(self, conn: Any, key: CacheKey, hashes: Sequence[str], dims: int) -> dict[str, list[float]]: ...
    def cache_vectors(self, conn: Any, key: CacheKey, vectors: dict[str, Sequence[float]]) -> None: ...
    def prune_cache(self, conn: Any, max_entries: int) -> int: ...

    # Keyword search
    def term_counts(self, conn: Any, terms: Sequence[str]) -> dict[str, int]: ...
    def terms_starting(self, conn: Any, prefix: str, limit: int) -> dict[str, int]:
        """The index's own terms (as its tokenizer keeps them: porter stems) that begin with ``prefix`` (not empty)
        and are longer, each with how many chunks hold it: the ``limit`` most held (ties in term order)."""
        ...

    def terms_ending(self, conn: Any, suffixes: Sequence[str], limit: int) -> list[dict[str, int]]:
        """For each of ``suffixes`` (not empty), the index's own terms of :data:`ENDING_MIN` characters or more,
        with no digit, that end with it and are longer, each with how many chunks hold it: the ``limit`` most
        held (ties in term order). One read for them all."""
        ...

    def texts_holding(self, conn: Any, term: str, limit: int) -> list[str]:
        """The texts of ``limit`` chunks that hold ``term`` (a word or a phrase, as a search matches it), the first
        by chunk id: how the notes write it, read without ranking every chunk that holds it."""
        ...

    def keyword_search(
        self,
        conn: Any,
        terms: Sequence[str],
        limit: int,
        where: SearchFilter | None = None,
        counts: Mapping[str, int] | None = None,
        alongside: Alongside | None = None,
    ) -> list[ChunkRow]:
        """The ``limit`` best chunks by FTS5's ``bm25()`` (negative, lower is better) for the OR of ``terms``,
        among those ``where`` allows, ties in chunk-id order; ``counts`` are the terms' :meth:`term_counts` when
        the caller has them. ``alongside`` (:meth:`IndexOwner.alongside`) lends a second reader, which a store may
        use for part of a large query while ``conn`` ranks the rest."""
        ...


class IndexOwner(Protocol):
    """The owner of one index's connections in this process (see the module docstring)."""

    ops: StoreOps
    damaged: bool  # an operation found the index corrupt; repair() rebuilds it

    @property
    def location(self) -> str:
        """Where the index lives, for messages (a file path, a database)."""
        ...

    @property
    def vectors_loaded(self) -> bool:
        """True once the vectors nearest() scans are loaded (always, where the database scans them)."""
        ...

    async def open(self) -> None: ...
    async def close(self) -> None: ...
    def require_open(self) -> None: ...

    async def read(self, fn: Callable[..., T], *args: Any) -> T: ...
    async def write(self, fn: Callable[..., T], *args: Any, conn: Any = None) -> T: ...
    async def write_indexed(self, fn: Callable[..., Written], *args: Any, conn: Any = None) -> Written: ...
    async def counts(self) -> tuple[int, int]: ...

    def alongside(self, fn: Callable[[Any], list[ChunkRow]]) -> Future[list[ChunkRow]] | None:
        """Start ``fn(connection)`` on a second reader and thread of this owner while the caller's reader works
        (called on a reader thread); None when there is none to spare, and the caller does it all."""
        ...

    async def nearest(
        self, vector: Sequence[float], k: int, where: SearchFilter | None = None
    ) -> tuple[list[ChunkRow], bool]:
        """The ``k`` chunks nearest to ``vector`` among those ``where`` allows, and False when
        :meth:`load_vectors` would make the next search faster."""
        ...
    async def vectors_in_ram(self) -> bool: ...
    async def load_vectors(self) -> None: ...

    async def follow(self, changed: Callable[[list[str] | None], None]) -> None:
        """Until cancelled, call ``changed`` (on the event loop) with the answer paths other processes change
        in the index, or None when anything may have changed (they switched it to a rebuilt one, or the store
        was unreachable for a while); returns at once where the store cannot tell."""
        ...

    def rebuild_lock(self) -> AbstractAsyncContextManager[None]: ...
    def shadow(self) -> AbstractAsyncContextManager[Any]: ...
    def writes_paused(self) -> AbstractAsyncContextManager[None]: ...
    async def install(self, shadow: Any) -> None: ...
    async def check_integrity(self) -> bool: ...
    async def repair(self) -> None: ...
