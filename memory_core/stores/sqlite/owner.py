"""The one owner of an index file in this process: its connections, threads, RAM copy and swaps.

Every SQLite call runs on a worker thread. Writes go through one connection behind a one-slot
limiter, so there is exactly one writer in this process; reads borrow connections from a small
pool and, thanks to WAL, never wait for any writer, in this process or another. One pooled reader at a
time can be lent, on a thread of the owner's, to a read already at work (:meth:`IndexDatabase.alongside`):
a large keyword query is ranked in two halves at once. A rebuilt index
is copied into the live file (:mod:`.swap`), so every connection everywhere follows it. The
embedding cache, in its own file beside the index (:mod:`.schema`), is attached to every writer,
the shadow's too: a rebuild or a reset takes its vectors from it and never empties it.

SQLite errors leave this class as memdex errors (:func:`.errors.as_memdex_error`); an error that
says the file is damaged also marks the index ``damaged``, and the owner of the index rebuilds it
from the Markdown (:meth:`repair`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

import anyio
import anyio.to_thread

from ...errors import IndexBusy, IndexCorrupt, MemdexError, StoreError, as_memdex_error
from ..base import StoreOps
from ..filters import SearchFilter
from ..owner_base import OwnerBase
from ..records import VECTORS_VERSION, ChunkRow, Written
from . import db, schema, swap
from . import ops as store
from .vector_matrix import VectorMatrix

logger = logging.getLogger(__name__)

T = TypeVar("T")

READ_CONNECTIONS = 4
LOCK_POLL = 0.25  # seconds between tries of another process's rebuild lock
GATE_POLL = 0.005  # seconds between tries of the write gate (held by others for milliseconds)
RESET_WAIT = 30.0  # seconds a reset waits for another process's rebuild before giving up
CORES = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


class IndexDatabase(OwnerBase):
    """Connections to one index file, and the operations that need more than one of them: SQLite's
    :class:`~.backend.IndexOwner`, whose operations are :mod:`.store`."""

    ops: StoreOps = store

    def __init__(self, path: Path, *, read_connections: int = READ_CONNECTIONS) -> None:
        super().__init__()
        self.path = path
        self.cache_path = schema.cache_path(path)
        self.matrix = VectorMatrix()  # the vectors in RAM for fast KNN, loaded on demand
        self.damaged = False  # an operation found the file corrupt; repair() rebuilds it
        self._read_connections = read_connections
        # (generation, idle read-only connection); deque's pop and append are atomic, so reader threads share it
        self._readers: deque[tuple[int, Any]] = deque()
        self._generation = 0  # bumped when a repair may have replaced the file under the readers
        self._gate = swap.WriteGate(path)  # held shared while this process writes the live index
        self._gate_users = 0
        self._beside: ThreadPoolExecutor | None = None  # alongside()'s thread, made on first use
        self._beside_free = threading.Lock()  # held while alongside()'s reader works: one lent at a time

    # Lifecycle ----------------------------------------------------------------------------------

    async def open(self) -> None:
        """Open the index (creating or, when corrupt or foreign, resetting it) and sweep stale shadows."""
        self._write_limiter = anyio.CapacityLimiter(1)
        self._read_limiter = anyio.CapacityLimiter(self._read_connections)
        self._gate_lock = anyio.Lock()
        self._writer = await self._mapped(self._open_writer)

    def _open_writer(self) -> Any:
        """Open (create, migrate) the index holding the write gate shared, as every write does: a reset
        waits for it. A file that does not open is checked again, then emptied only if still unusable."""
        self.path.parent.mkdir(parents=True, exist_ok=True)  # the lock files beside it need the folder
        swap.sweep(self.path)
        try:
            with self._locked(swap.WriteGate(self.path), shared=True):
                return schema.open_index(self.path, self.cache_path)
        except schema.NeedsReset as exc:
            logger.info("%s did not open (%s); checking it again under the write gate", exc.path, exc)
        return self._reset()

    def _reset(self, *, check: bool = False) -> Any:
        """Open the index anew, emptying in place whichever of its files (the index, its embedding cache)
        is still damaged, holding the rebuild lock and the write gate exclusively (a worker thread).

        What was seen as damage may have been another process at work: under both locks no other process
        rebuilds, creates, migrates or writes the files, so a file that now opens (and, with ``check``,
        passes the quick check) is sound and kept. Only one that still fails is emptied, with one warning
        saying why. Waits up to RESET_WAIT seconds for each lock, then gives up with IndexBusy.
        """
        with self._locked(swap.RebuildLock(self.path)), self._locked(swap.WriteGate(self.path)):
            for _ in range(2):  # at most the index, then its cache, fails to open
                try:
                    conn = schema.open_index(self.path, self.cache_path)
                    damaged = schema.damaged(conn) if check else {}
                except schema.NeedsReset as exc:
                    damaged = {exc.path: str(exc)}
                else:
                    if not damaged:
                        return conn
                    conn.close()
                for path, why in damaged.items():
                    what = "embedding cache (its vectors are made again)" if path == self.cache_path else "index"
                    logger.warning("emptying the damaged %s %s: %s", what, path, why)
                    schema.reset(path)
                check = False
            return schema.open_index(self.path, self.cache_path)

    @contextlib.contextmanager
    def _locked(self, lock: swap.FileLock, *, shared: bool = False) -> Iterator[None]:
        """Hold ``lock`` (a worker thread), trying for up to RESET_WAIT seconds, then IndexBusy."""
        deadline = time.monotonic() + RESET_WAIT
        every = GATE_POLL if isinstance(lock, swap.WriteGate) else LOCK_POLL
        while not lock.acquire(wait=False, shared=shared):
            if time.monotonic() > deadline:
                doing = "rebuilding or repairing" if isinstance(lock, swap.RebuildLock) else "writing or repairing"
                raise IndexBusy(f"another memdex process is {doing} the index {self.path}; retry when it is done")
            time.sleep(every)
        try:
            yield
        finally:
            lock.release()

    async def close(self) -> None:
        self.matrix.reset()
        if self._beside is not None:
            await anyio.to_thread.run_sync(self._beside.shutdown)  # a lent reader still at work finishes first
            self._beside = None
        self._close_readers()
        if self._writer is not None:
            self._writer.close()
            self._writer = None

    @property
    def location(self) -> str:
        return str(self.path)

    @property
    def vectors_loaded(self) -> bool:
        return self.matrix.loaded

    def _store_error(self, exc: Exception) -> MemdexError | None:
        """SQLite and OS errors as memdex errors; one that says the file is damaged marks it ``damaged``."""
        if isinstance(exc, schema.NeedsReset):
            self.damaged = True
            return IndexCorrupt(f"the index {self.path} could not be reset ({exc}); delete it and run `memdex index`")
        if not isinstance(exc, db.database_error() | OSError):
            return None
        if db.is_corruption(exc):
            self.damaged = True
        return as_memdex_error(exc) or StoreError(f"the index {self.path} failed: {exc}")

    async def _acquire(self, acquire: Callable[[], bool], every: float) -> None:
        """Try ``acquire()`` (a non-blocking lock of a file beside the index) every ``every`` seconds
        until it succeeds, without holding a thread; an OS error comes back as a memdex error."""
        try:
            while not acquire():
                await anyio.sleep(every)
        except OSError as exc:
            raise (as_memdex_error(exc) or StoreError(f"cannot lock the index {self.path}: {exc}")) from exc

    @contextlib.asynccontextmanager
    async def _holding(self, lock: swap.FileLock, every: float) -> AsyncIterator[None]:
        """Hold ``lock`` exclusively, trying every ``every`` seconds until it is free."""
        await self._acquire(lambda: lock.acquire(wait=False), every)
        try:
            yield
        finally:
            lock.release()

    @contextlib.asynccontextmanager
    async def _live_write(self) -> AsyncIterator[None]:
        """Hold the write gate shared around a write to the live index (see :meth:`writes_paused`)."""
        async with self._pause.writing() as pausing:
            if pausing:  # the task that paused every other writer holds the gate already
                yield
                return
            async with self._gate_lock:
                if self._gate_users == 0:
                    await self._acquire(lambda: self._gate.acquire(wait=False, shared=True), GATE_POLL)
                self._gate_users += 1
            try:
                yield
            finally:
                self._gate_users -= 1
                if self._gate_users == 0:
                    self._gate.release()

    @contextlib.asynccontextmanager
    async def writes_paused(self) -> AsyncIterator[None]:
        """Hold off every other writer of the live index, in this process and in others.

        For a rebuild's last catch-up and its install: an edit another writer made between the two
        would be overwritten by the install. Writes that started before wait to finish; the calling
        task itself keeps writing. Readers are never held off.
        """
        self.require_open()
        async with self._pause.paused(), self._holding(swap.WriteGate(self.path), GATE_POLL):
            yield

    # Reads and writes ---------------------------------------------------------------------------

    async def write_indexed(self, fn: Callable[..., Written], *args: Any, conn: Any = None) -> Written:
        """``write`` for the calls that change chunks and vectors.

        A change to the live index is passed on, in the same writer thread, to the in-memory copy
        of the vectors, and the cached counts are dropped.
        """

        def run(target: Any, *args: Any) -> Written:
            written = fn(target, *args)
            if target is self._writer:
                self.matrix.apply(written.vectors)
                self._counts.drop()
            return written

        return await self.write(run, *args, conn=conn)

    async def read(self, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn(read_connection, *args)`` with a pooled read-only connection."""
        self.require_open()
        return await self._mapped(lambda: self._with_reader(fn, *args), self._read_limiter)

    def alongside(self, fn: Callable[[Any], T]) -> Future[T] | None:
        """Start ``fn(read_connection)`` on a pooled reader in a thread of its own, while the calling reader
        thread does other work: a BM25 query over common words is ranked as two halves at once
        (:func:`.ops.keyword_search`). None when the machine has one core, or the thread is busy with
        another search's half: the caller then does it all."""
        if CORES < 2 or self._writer is None or not self._beside_free.acquire(blocking=False):
            return None
        try:
            if self._beside is None:
                self._beside = ThreadPoolExecutor(1, thread_name_prefix="memdex-alongside")
            return self._beside.submit(self._lent, fn)
        except BaseException:
            self._beside_free.release()
            raise

    def _lent(self, fn: Callable[[Any], T]) -> T:
        try:
            return self._with_reader(fn)
        finally:
            self._beside_free.release()

    def _with_reader(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(connection, *args)`` on an idle pooled reader (a new one if none is idle), given back after."""
        try:  # take an idle connection in one step: a check and then a pop could lose a race to another reader
            generation, conn = self._readers.pop()
        except IndexError:
            generation, conn = self._generation, db.connect(self.path, readonly=True)
        try:
            result = fn(conn, *args)
        except BaseException:
            conn.close()
            raise
        if generation == self._generation:
            self._readers.append((generation, conn))
        else:
            conn.close()  # opened before a repair that may have replaced the file
        return result

    # Vectors ------------------------------------------------------------------------------------

    async def nearest(
        self, vector: Sequence[float], k: int, where: SearchFilter | None = None
    ) -> tuple[list[ChunkRow], bool]:
        """The ``k`` chunks nearest to ``vector`` among those ``where`` allows, and whether they came
        from the RAM copy.

        The RAM copy answers when it is in step with the index; otherwise sqlite-vec does, and the
        caller should reload the copy. Either way the filter applies before the ``k`` are chosen.
        """

        def nearest(conn: Any) -> list[ChunkRow] | None:
            version = store.read_meta(conn, VECTORS_VERSION)
            if not self.matrix.in_step(version):
                return None
            allowed = None if where is None or where.empty else store.chunk_ids(conn, where)
            hits = self.matrix.search(version, vector, k, allowed)
            return None if hits is None else store.chunks_by_id(conn, hits)

        rows = await self.read(nearest)
        if rows is not None:
            return rows, True
        return await self.read(store.vector_search, vector, k, where), False

    async def vectors_in_ram(self) -> bool:
        """True when vector searches are served from the in-memory copy (it is loaded and current)."""
        return self.matrix.in_step(await self.read(store.read_meta, VECTORS_VERSION))

    async def load_vectors(self) -> None:
        """Load the vectors into RAM (seconds at a million rows), so nearest() answers from there."""
        started = time.monotonic()
        await self.read(self.matrix.load)
        logger.info("vectors in RAM: %d rows, %.1f MB, loaded in %.2fs",
                    self.matrix.rows, self.matrix.nbytes / 1e6, time.monotonic() - started)  # fmt: skip

    async def follow(self, changed: Callable[[list[str] | None], None]) -> None:
        """Returns at once: another process changes the same files, which this process's watcher sees."""

    # Rebuilds -----------------------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def rebuild_lock(self) -> AsyncIterator[None]:
        """Hold the cross-process rebuild lock; while another process rebuilds, wait without a thread."""
        async with self._holding(swap.RebuildLock(self.path), LOCK_POLL):
            yield

    @contextlib.asynccontextmanager
    async def shadow(self) -> AsyncIterator[Any]:
        """A new empty index beside the live one, with the live index's embedding cache attached; removed on exit.

        The caller holds :meth:`rebuild_lock`, fills the shadow through ``write(..., conn=shadow)``
        and calls :meth:`install`.
        """
        path = swap.shadow_path(self.path)
        conn = await self._mapped(lambda: schema.open_index(path, self.cache_path))
        try:
            yield conn
        finally:
            conn.close()
            await anyio.to_thread.run_sync(swap.remove, path)

    async def install(self, shadow: Any) -> None:
        """Copy a complete shadow over the live index in one transaction (the cache they share stays)."""

        def run(live: Any) -> None:
            swap.install(shadow, live)
            self.matrix.reset()
            self._counts.drop()

        await self.write(run)

    async def check_integrity(self) -> bool:
        """SQLite's quick check of the index and its cache (seconds when large: for repairs and --force)."""
        try:
            damaged = await self.write(schema.damaged)
        except StoreError as exc:
            damaged = {self.path: str(exc)}
        for path, why in damaged.items():
            logger.info("%s failed its quick check: %s", path, why)
        ok = not damaged
        self.damaged |= not ok
        return ok

    async def repair(self) -> None:
        """Empty a damaged index or cache in place (other processes see it) so that a full sync rebuilds it.

        The writer in use stays until the emptied file is open: if the reset fails (another
        process rebuilds, the disk fails), the index stays as it was, marked damaged.
        """

        def run() -> None:
            fresh = self._reset(check=True)
            old, self._writer = self._writer, fresh
            old.close()
            self._generation += 1
            self._close_readers()

        logger.info("index %s looked damaged; checking it again under the write gate", self.path)
        self.require_open()
        async with self._pause.paused():  # this process's writers wait, and its hold of the gate ends
            await self._mapped(run, self._write_limiter)
        self.matrix.reset()
        self._counts.drop()
        self.damaged = False

    def _close_readers(self) -> None:
        while True:
            try:
                _, conn = self._readers.pop()
            except IndexError:
                return
            conn.close()
