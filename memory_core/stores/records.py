"""The records every index store keeps and returns, whatever the database behind it.

A store (:mod:`.sqlite.ops` for SQLite) writes and reads these; the parts above it (syncer, embedder,
searcher, the in-RAM vectors) only ever see these types, never a store's rows.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

from ..limits import MAX_VECTOR_PARTS
from ..text.chunking import Chunk, ChunkMark

VECTORS_VERSION = "vectors_version"  # meta key: a new random token for every change to the vectors
FILES_VERSION = "files_version"  # meta key: a new random token whenever a file enters or leaves the index

# A chunk has up to VECTOR_PARTS vectors (embedding.window_tokens); part p of chunk c is the vector
# row c * VECTOR_PARTS + p, and a chunk that has its part 0 has all of them.
VECTOR_PARTS = MAX_VECTOR_PARTS
VECTOR_LAYOUT = f"parts-{VECTOR_PARTS}"  # in the vectors' identity: rows of another layout are rebuilt

ChunkVectors = tuple[int, Sequence[Sequence[float]]]  # (chunk id, the vector of each of its parts)


@dataclass(frozen=True)
class FileState:
    """What the index knows about one file."""

    hash: str
    mtime_ns: int
    size: int


@dataclass(frozen=True)
class FileChange:
    """A file to (re)write in the index: its answer path, source, state, chunks, and content (for stores
    that serve hosts without the files)."""

    path: str
    source: str
    state: FileState
    chunks: Sequence[Chunk]
    text: str | None = None


@dataclass(frozen=True)
class IndexedTail:
    """A file as the index holds it: its state and its last chunks, in order (for a re-chunk of its tail)."""

    state: FileState
    chunks: list[ChunkMark]


@dataclass(frozen=True)
class TailChange:
    """A file that only grew: its chunks after chunk ``after`` (those were ``dropped``) give way to
    ``change.chunks``. Applied only while the index still holds the file at ``old`` with those chunks."""

    change: FileChange
    old: FileState
    after: ChunkMark
    dropped: tuple[ChunkMark, ...]

    def expected(self) -> list[tuple[int, str]]:
        """(id, hash) of the chunks from ``after`` on, as the index must still hold them."""
        return [(mark.id, mark.hash) for mark in (self.after, *self.dropped)]


@dataclass(frozen=True)
class ChunkRow:
    """A chunk as search returns it."""

    id: int
    path: str
    source: str
    start_line: int
    end_line: int
    text: str
    rank: float


@dataclass(frozen=True)
class CacheKey:
    """Who made a cached vector: vectors from another provider, model or setup never mix."""

    provider: str
    model: str
    fingerprint: str


def pack_vector(vector: Sequence[float]) -> bytes:
    """A vector as float32 bytes (sqlite-vec's blob; the embedding cache's value on every store)."""
    return struct.pack(f"{len(vector)}f", *vector)


def unpack_vector(blob: bytes) -> list[float]:
    return list(struct.unpack(f"{len(blob) // 4}f", blob))


def chunk_of(row: int) -> int:
    """The chunk a vector row belongs to."""
    return row // VECTOR_PARTS


def vector_rows(chunks: Iterable[ChunkVectors]) -> Iterator[tuple[int, Sequence[float]]]:
    """(vector row, vector) of every part of ``chunks``."""
    for cid, parts in chunks:
        for part, vector in enumerate(parts[:VECTOR_PARTS]):
            yield cid * VECTOR_PARTS + part, vector


@dataclass
class VectorDelta:
    """What one transaction did to the vectors, for in-memory copies to follow.

    ``rows`` maps vector rows to their new vector, or to None when the row went (every part of a
    removed chunk); ``before``/``after`` are the index's vector versions around the transaction.
    """

    rows: dict[int, Sequence[float] | None] = field(default_factory=dict)
    before: str | None = None
    after: str | None = None

    def removed(self, chunk_ids: Iterable[int]) -> None:
        self.rows.update((cid * VECTOR_PARTS + part, None) for cid in chunk_ids for part in range(VECTOR_PARTS))

    def added(self, chunks: Iterable[ChunkVectors]) -> None:
        self.rows.update(vector_rows(chunks))


@dataclass(frozen=True)
class Written:
    """What a write of files or vectors did: paths skipped because they changed since read, and the
    vector delta."""

    stale: list[str]
    vectors: VectorDelta
