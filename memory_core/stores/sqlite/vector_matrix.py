"""A copy of the index's vectors in RAM, quantised to int8, for nearest-neighbour search in milliseconds.

sqlite-vec keeps the vectors durably, inside the index's transactions, and its KNN is exact, but
it is a float32 scan through SQLite pages: ~48 ms at 100k chunks of 384 dimensions. This copy
holds every vector normalised and quantised to int8 with one scale per row (a quarter of float32's
size, cosine off by about 0.002 at most) and scans it with numpy in a few milliseconds. A row is one
part of a chunk (``records.VECTOR_PARTS``); a chunk is as near as its nearest part.

The copy follows the index through a version token that the writer changes in every transaction
that touches vectors (:func:`store.stamp_vectors`). The engine applies each committed
:class:`~memory_core.records.VectorDelta` to the copy; a search whose index version is not the copy's
(another process wrote, or the index was swapped) gets ``None`` and is answered by sqlite-vec
while the copy is reloaded.

Thread safety: one lock guards the arrays; searches, deltas and loads may come from any thread. A
search holds it only to take its snapshot (the arrays and the row count), and scans without it; a delta
that would overwrite rows a scan in flight reads changes a copy instead (copy on write).
"""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Collection, Sequence
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

from ..records import VECTOR_PARTS, VECTORS_VERSION, VectorDelta
from . import ops as store

# Rows handled at a time when loading and scanning: 2048 x 384 float32 is 3 MB, small enough that the
# temporary arrays neither cost speed nor stay behind in malloc's arenas as resident memory.
BLOCK_ROWS = 2048

# BLAS threads for the scan: a scan block is a small matrix-vector product that a second thread barely
# speeds up (4.4 vs 4.7 ms at 100k rows), while OpenBLAS's spinning helpers take the core the keyword
# half of the same search runs on (hybrid p50 at 100k chunks: 35 ms with two threads, 20 ms with one;
# see docs/benchmarks.md). A variable that sets them (BLAS_THREAD_VARIABLES) is the user's choice.
BLAS_THREADS = 1
BLAS_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "OMP_NUM_THREADS")


@functools.cache
def limit_blas_threads() -> None:
    """Limit the process's BLAS to BLAS_THREADS, once, unless the environment chose (~4 ms, on first load).

    Process-wide, like the variable: it holds for numpy's other products too.
    """
    if not any(os.environ.get(name) for name in BLAS_THREAD_VARIABLES):
        threadpool_limits(BLAS_THREADS, user_api="blas")


def quantize(vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows normalised to unit length, as int8 codes and one float32 scale per row."""
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    unit = vectors / np.where(norms == 0, 1, norms)
    peaks = np.abs(unit).max(axis=1, keepdims=True)
    scales = np.where(peaks == 0, 1, peaks) / 127
    return np.rint(unit / scales).astype(np.int8), scales[:, 0].astype(np.float32)


class VectorMatrix:
    """The index's vectors as int8 rows, kept in step with the index's vector version."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._version: str | None = None
        self._loaded = False
        self._pending: list[VectorDelta] | None = None  # deltas committed while a load reads
        self._clear()

    def _clear(self) -> None:
        self._use(np.zeros((0, 0), np.int8), np.zeros(0, np.float32), np.zeros(0, np.int64))
        self._size = 0
        self._row_of: dict[int, int] = {}

    def _use(self, codes: np.ndarray, scales: np.ndarray, ids: np.ndarray) -> None:
        """Hold these arrays, which no scan reads yet."""
        self._codes, self._scales, self._ids = codes, scales, ids
        self._scans = 0  # searches in flight over these arrays
        self._scanned = 0  # the most rows any of them reads

    def _writable(self, first: int) -> None:
        """Before rows from ``first`` on change: copy the arrays if a scan in flight reads any of those rows."""
        if self._scans and first < self._scanned:
            capacity, width = len(self._ids), self._codes.shape[1]
            used = slice(0, self._size)
            self._use(_grown(self._codes[used], capacity, width), _grown(self._scales[used], capacity),
                      _grown(self._ids[used], capacity))  # fmt: skip

    @property
    def loaded(self) -> bool:
        return self._loaded

    @property
    def rows(self) -> int:
        return self._size

    @property
    def nbytes(self) -> int:
        """Bytes held by the arrays (their capacity, which grows by doubling)."""
        return self._codes.nbytes + self._scales.nbytes + self._ids.nbytes

    def in_step(self, version: str | None) -> bool:
        return self._loaded and version == self._version

    def reset(self) -> None:
        """Forget everything (the index was replaced); the next load starts afresh."""
        with self._lock:
            self._loaded, self._version = False, None
            self._clear()

    # Loading and following the index --------------------------------------------------------

    def load(self, conn: Any) -> None:
        """Read every vector of the index at ``conn`` from one snapshot (run on a worker thread).

        Deltas committed while it reads are kept and replayed from the snapshot's version on.
        """
        limit_blas_threads()
        with self._lock:
            self._pending = []
        try:
            conn.execute("BEGIN")
            try:
                version = store.read_meta(conn, VECTORS_VERSION)
                dims = store.vector_dims(conn) or 0
                # Filled in place, grown if chunks have several parts; pages never written stay unallocated.
                capacity = store.counts(conn)[1] if dims else 0
                codes = np.empty((capacity, dims), np.int8)
                scales = np.empty(capacity, np.float32)
                ids = np.empty(capacity, np.int64)
                size = 0
                cursor = conn.execute("SELECT rowid, embedding FROM chunks_vec") if dims else None
                while cursor is not None and (rows := cursor.fetchmany(BLOCK_ROWS)):
                    end = size + len(rows)
                    if end > len(ids):
                        codes, scales, ids = _grown(codes, 2 * end, dims), _grown(scales, 2 * end), _grown(ids, 2 * end)
                    block = np.frombuffer(b"".join(row[1] for row in rows), np.float32).reshape(len(rows), dims)
                    codes[size:end], scales[size:end] = quantize(block)
                    ids[size:end] = [row[0] for row in rows]
                    size = end
            finally:
                conn.execute("COMMIT")
        except BaseException:
            with self._lock:
                self._pending = None
            raise
        with self._lock:
            self._use(codes, scales, ids)
            self._size = size
            self._row_of = {int(cid): row for row, cid in enumerate(ids[:size])}
            self._version, self._loaded = version, True
            pending, self._pending = self._pending or [], None
            for delta in pending:
                self._apply(delta)

    def apply(self, delta: VectorDelta) -> None:
        """Follow one committed change of the index (ignored unless it starts from this copy's version)."""
        with self._lock:
            if self._pending is not None:
                self._pending.append(delta)
            else:
                self._apply(delta)

    def _apply(self, delta: VectorDelta) -> None:
        if not self._loaded or delta.before != self._version:
            return
        added: list[tuple[int, Sequence[float]]] = []
        for cid, vector in delta.rows.items():
            self._remove(cid)
            if vector is not None:
                added.append((cid, vector))
        if added:
            block = np.array([v for _, v in added], np.float32)
            if self._size and block.shape[1] != self._codes.shape[1]:
                self._loaded = False  # vectors of another size: reload rather than mix
                return
            self._append([cid for cid, _ in added], *quantize(block))
        self._version = delta.after

    def _remove(self, cid: int) -> None:
        row = self._row_of.pop(cid, None)
        if row is None:
            return
        last = self._size - 1
        if row != last:  # move the last row into the hole
            self._writable(row)
            moved = int(self._ids[last])
            self._codes[row], self._scales[row], self._ids[row] = self._codes[last], self._scales[last], moved
            self._row_of[moved] = row
        self._size = last

    def _append(self, ids: list[int], codes: np.ndarray, scales: np.ndarray) -> None:
        need = self._size + len(ids)
        if need > len(self._ids) or self._codes.shape[1] != codes.shape[1]:
            capacity, used = max(need, 2 * len(self._ids), 1024), slice(0, self._size)
            self._use(_grown(self._codes[used], capacity, codes.shape[1]), _grown(self._scales[used], capacity),
                      _grown(self._ids[used], capacity))  # fmt: skip
        else:
            self._writable(self._size)
        end = self._size + len(ids)
        self._codes[self._size : end] = codes
        self._scales[self._size : end] = scales
        self._ids[self._size : end] = ids
        self._row_of.update((cid, self._size + i) for i, cid in enumerate(ids))
        self._size = end

    # Search ---------------------------------------------------------------------------------

    def search(
        self, version: str | None, query: Sequence[float], k: int, allowed: Collection[int] | None = None
    ) -> list[tuple[int, float]] | None:
        """The ``k`` nearest chunk ids with their cosine distance (their nearest part's), nearest first.

        ``allowed`` limits the search to those chunk ids (a filter's, :func:`store.chunk_ids`): the
        ``k`` nearest of them come back however far they are from the query.
        None when this copy is not at ``version`` (the caller asks sqlite-vec instead).
        """
        q = np.asarray(query, np.float32)
        norm = float(np.linalg.norm(q))
        with self._lock:  # a snapshot: the arrays and their row count, pinned against deltas until the scan ends
            if not self.in_step(version):
                return None
            codes, scales, ids, size = self._codes, self._scales, self._ids[: self._size], self._size
            if size == 0 or k < 1 or norm == 0 or q.shape[0] != codes.shape[1]:
                return []
            self._scans, self._scanned = self._scans + 1, max(self._scanned, size)
        try:
            unit = q / norm
            rows = None if allowed is None else _rows_of(ids, allowed)
            if rows is None:
                sims = _similarities(codes, scales, size, unit, None)
            elif 2 * len(rows) > size:  # most rows: a contiguous scan is faster than gathering them
                sims, ids = _similarities(codes, scales, size, unit, None)[rows], ids[rows]
            else:
                sims, ids = _similarities(codes, scales, size, unit, rows), ids[rows]
            return _nearest_chunks(sims, ids // VECTOR_PARTS, k)
        finally:
            with self._lock:
                if codes is self._codes:  # (a copy made meanwhile has no scans of its own yet)
                    self._scans -= 1
                    self._scanned = self._scanned if self._scans else 0


def _rows_of(ids: np.ndarray, chunk_ids: Collection[int]) -> np.ndarray:
    """The rows of ``ids`` holding these chunks' parts, in row order (chunks without a vector have none)."""
    wanted = np.fromiter(chunk_ids, np.int64, len(chunk_ids))
    return np.flatnonzero(np.isin(ids // VECTOR_PARTS, wanted))


def _similarities(codes: np.ndarray, scales: np.ndarray, size: int, unit: np.ndarray, rows: np.ndarray | None) -> np.ndarray:
    """Cosine similarity of the unit vector ``unit`` to the first ``size`` rows, or to ``rows`` only, in that order."""
    count = size if rows is None else len(rows)
    sims = np.empty(count, np.float32)
    block = np.empty((min(count, BLOCK_ROWS), unit.shape[0]), np.float32)
    for start in range(0, count, BLOCK_ROWS):
        end = min(start + BLOCK_ROWS, count)
        part = block[: end - start]
        part[...] = codes[start:end] if rows is None else codes[rows[start:end]]  # int8 -> float32
        np.matmul(part, unit, out=sims[start:end])
    sims *= scales[:count] if rows is None else scales[rows]
    return sims


def _nearest_chunks(sims: np.ndarray, chunks: np.ndarray, k: int) -> list[tuple[int, float]]:
    """The ``k`` chunks with the most similar rows, at their best row's cosine distance."""
    found: dict[int, float] = {}
    # A chunk has at most VECTOR_PARTS rows, so that many times k rows hold k distinct chunks.
    take = min(len(sims), k * VECTOR_PARTS)
    if take == 0 or k < 1:
        return []
    top = np.argpartition(-sims, take - 1)[:take]
    for i in top[np.argsort(-sims[top], kind="stable")]:
        found.setdefault(int(chunks[i]), float(1.0 - sims[i]))
        if len(found) == k:
            break
    return list(found.items())


def _grown(array: np.ndarray, capacity: int, width: int | None = None) -> np.ndarray:
    """``array`` copied into a new array of ``capacity`` rows (pages the OS only commits when used)."""
    shape = (capacity,) if width is None else (capacity, width)
    grown = np.empty(shape, array.dtype)
    if len(array) and (width is None or array.shape[1] == width):
        grown[: len(array)] = array
    return grown
