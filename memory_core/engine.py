"""The async face of memdex: one object that owns the index, its threads and background work.

Thread model: every SQLite call runs on a worker thread. Writes go through one connection behind
a one-slot limiter, so there is exactly one writer; reads borrow connections from a small pool and,
thanks to WAL, never wait for the writer and never see half of a file's update. File reading,
hashing and chunking run on worker threads too, so the event loop only coordinates.

Index identity: the index records how it was built (chunking, tokenizer, and the embedding
provider, model, fingerprint and dimensions). When that no longer matches the settings, the
index is rebuilt into a temporary database, seeded with the embedding cache, and swapped in only
when complete; until then, and if the rebuild fails, the old index keeps serving searches.

``async with MemoryEngine(settings) as engine`` opens the index and starts the first sync in the
background; entering the same engine again (e.g. once per SSE connection) only counts users.
"""

from __future__ import annotations

import datetime as dt
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

import anyio
import anyio.to_thread
from anyio.abc import TaskGroup

from . import db, indexer, store, swap
from .appender import append_entry, format_entry
from .chunking import CHUNKER_VERSION
from .config import Settings
from .embeddings.base import EmbeddingProvider
from .embeddings.factory import open_provider
from .errors import ClosedError, EmbeddingError, InputError
from .fts import query_terms
from .models import AppendReceipt, Excerpt, IndexStatus, SearchAnswer
from .ranking import rank_hybrid, rank_keyword
from .reader import read_excerpt
from .vector_matrix import VectorMatrix
from .watcher import Watcher
from .workspace import MemoryFile, Workspace

logger = logging.getLogger(__name__)

T = TypeVar("T")
ProgressCallback = Callable[[int, int, str], None]  # (done, total, "files" or "chunks embedded")
ChangeListener = Callable[[list[str]], Awaitable[None]]

BATCH_FILES = 64
MAX_CANDIDATES = 200
READ_CONNECTIONS = 4
BACKFILL_CHUNKS = 256
COUNTS_TTL = 2.0


@dataclass(frozen=True)
class SyncReport:
    """What one sync did."""

    files: int
    changed: int
    removed: int
    seconds: float


class MemoryEngine:
    """Index, search, read and append to one workspace's memory."""

    def __init__(self, settings: Settings, *, background_sync: bool = True) -> None:
        self.settings = settings
        sessions = settings.sessions
        self.workspace = Workspace(
            settings.workspace_dir, settings.extra_paths, sessions.dir if sessions.enabled else None
        )
        self.index_path = settings.index_file
        self._background_sync = background_sync
        self._users = 0
        self._writer: Any = None
        self._readers: list[tuple[int, Any]] = []
        self._generation = 0  # bumped when a rebuilt index is swapped in
        self._task_group: TaskGroup | None = None
        self._state: Literal["starting", "indexing", "ready", "error"] = "starting"
        self._progress = (0, 0)
        self._last_sync: float | None = None
        self._error: str | None = None
        self._stored: dict[str, Any] | None = None  # the identity the index was built with
        self._sync_wanted = False
        self._force_wanted = False
        self._last_report = SyncReport(0, 0, 0, 0.0)
        self._provider: EmbeddingProvider | None = None
        self._provider_started = False
        self._provider_note: str | None = "embeddings are starting"
        self._failed_providers: set[str] = set()
        self._embedding_error: str | None = None  # set by a failed embedding call in the running sync
        self._rebuilding = False
        self._dirty = False  # files may have changed without the index knowing (e.g. the watcher died)
        self._listeners: list[ChangeListener] = []
        self._deferred: set[str] = set()  # growing transcripts to look at again once they are quiet
        self._deferred_waiting = False
        self.watcher: Watcher | None = None
        self._matrix = VectorMatrix()  # the vectors in RAM for fast KNN, loaded after a sync or on demand
        self._matrix_loading = False
        self._matrix_next_load = 0.0  # monotonic time before which no reload starts
        self._counts: tuple[float, int, int] | None = None  # (monotonic time, files, chunks)

    # Lifecycle ----------------------------------------------------------------------------------

    async def __aenter__(self) -> MemoryEngine:
        self._users += 1
        if self._users == 1:
            try:
                await self._open()
            except BaseException:
                self._users = 0
                raise
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self._users -= 1
        if self._users == 0:
            await self._close()

    async def _open(self) -> None:
        self._write_limiter = anyio.CapacityLimiter(1)
        self._read_limiter = anyio.CapacityLimiter(READ_CONNECTIONS)
        self._sync_lock = anyio.Lock()
        self._provider_lock = anyio.Lock()
        self._writer = await anyio.to_thread.run_sync(store.open_index, self.index_path)
        self._stored = await self._write(store.read_meta, "identity")
        self._last_sync = await self._write(store.read_meta, "last_sync")
        if self._last_sync is not None and self._stored and self._stored.get("chunks") == self._chunk_identity():
            self._state = "ready"  # complete as of the last sync; the first sync below catches up
        self._task_group = anyio.create_task_group()
        await self._task_group.__aenter__()
        if self._background_sync:
            self._task_group.start_soon(self._sync_in_background)
            if self.settings.watch.enabled:
                self.watcher = Watcher(self)
                self._task_group.start_soon(self.watcher.run)
        logger.info("memdex: workspace %s, index %s", self.workspace.root, self.index_path)

    async def _close(self) -> None:
        if self.watcher is not None:
            self.watcher.close()
        if self._task_group is not None:
            self._task_group.cancel_scope.cancel()
            await self._task_group.__aexit__(None, None, None)
            self._task_group = None
        if self._provider is not None:
            await self._provider.aclose()
            self._provider = None
        self._provider_started = False
        self._matrix.reset()
        for _, conn in self._readers:
            conn.close()
        self._readers.clear()
        if self._writer is not None:
            self._writer.close()
            self._writer = None

    def _require_open(self) -> None:
        if self._writer is None:
            raise ClosedError("the memory engine is not running; use it inside 'async with MemoryEngine(...)'")

    # Thread plumbing ----------------------------------------------------------------------------

    async def _write(self, fn: Callable[..., T], *args: Any, conn: Any = None) -> T:
        """Run ``fn(connection, *args)`` on the one writer (or on ``conn``, a rebuild's writer)."""
        self._require_open()
        return await anyio.to_thread.run_sync(
            lambda: fn(conn if conn is not None else self._writer, *args), limiter=self._write_limiter
        )

    async def _write_indexed(self, fn: Callable[..., indexer.Written], *args: Any, conn: Any = None) -> indexer.Written:
        """``_write`` for the calls that change chunks and vectors.

        A change to the live index is passed on, in the same writer thread, to the in-memory copy
        of the vectors, and the cached counts are dropped.
        """

        def run(target: Any, *args: Any) -> indexer.Written:
            written = fn(target, *args)
            if target is self._writer:
                self._matrix.apply(written.vectors)
                self._counts = None
            return written

        return await self._write(run, *args, conn=conn)

    async def _read(self, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn(read_connection, *args)`` with a pooled read-only connection."""
        self._require_open()

        def run() -> T:
            generation = self._generation
            conn = None
            while self._readers and conn is None:
                born, candidate = self._readers.pop()
                if born == generation:
                    conn = candidate
                else:
                    candidate.close()  # opened on an index that has since been replaced
            if conn is None:
                conn = db.connect(self.index_path, readonly=True)
            try:
                result = fn(conn, *args)
            except BaseException:
                conn.close()
                raise
            self._readers.append((generation, conn))
            return result

        return await anyio.to_thread.run_sync(run, limiter=self._read_limiter)

    # Embeddings ---------------------------------------------------------------------------------

    def _chunk_identity(self) -> dict[str, Any]:
        return {
            "schema": store.SCHEMA_VERSION,
            "chunker": CHUNKER_VERSION,
            "chunk_tokens": self.settings.chunking.tokens,
            "chunk_overlap": self.settings.chunking.overlap,
            "fts_tokenizer": store.FTS_TOKENIZER,
        }

    def _vector_identity(self) -> dict[str, Any] | None:
        p = self._provider
        if p is None:
            return None
        return {"provider": p.id, "model": p.model, "fingerprint": p.fingerprint, "dims": p.dims}

    def _cache_key(self) -> store.CacheKey:
        assert self._provider is not None
        return store.CacheKey(self._provider.id, self._provider.model, self._provider.fingerprint)

    @property
    def built_with(self) -> dict[str, Any] | None:
        """The embedding setup the index's vectors come from (None: keyword-only so far)."""
        return None if self._stored is None else self._stored.get("vectors")

    @property
    def vectors_ready(self) -> bool:
        """True when searches can use vectors: a provider runs and the index was built with it."""
        return (
            self._provider is not None
            and self._stored is not None
            and self._stored.get("vectors") == self._vector_identity()
        )

    async def _ensure_provider(self) -> None:
        """Start the embedding provider once (a model load or download runs here, off the handshake)."""
        async with self._provider_lock:
            if self._provider_started:
                return
            choice = await open_provider(self.settings.embedding, frozenset(self._failed_providers))
            self._provider, self._provider_note = choice.provider, choice.note
            self._provider_started = True

    async def _embed(self, texts: dict[str, str], conn: Any = None) -> dict[str, list[float]]:
        """Vectors for chunk texts keyed by hash: cached ones, plus freshly embedded ones.

        An embedding failure is recorded (``_embedding_error``) and the chunks go without vectors;
        the rest of that sync then skips embedding instead of failing batch after batch.
        """
        if self._provider is None or not texts:
            return {}
        vectors = await self._cached_vectors(texts, conn)
        missing = [h for h in texts if h not in vectors]
        if missing and self._embedding_error is None:
            try:
                fresh = await self._provider.embed_batch([texts[h] for h in missing])
            except EmbeddingError as exc:
                self._embedding_error = f"{self._provider.id} embeddings failed: {exc}"
                logger.warning("%s; chunks are indexed for keyword search and embedded later", self._embedding_error)
                return vectors
            new = dict(zip(missing, fresh, strict=True))
            await self._write(store.cache_vectors, self._cache_key(), new, conn=conn)
            vectors.update(new)
        return vectors

    async def _cached_vectors(self, texts: dict[str, str], conn: Any = None) -> dict[str, list[float]]:
        """The vectors already in the embedding cache for these chunk texts (no model call)."""
        if self._provider is None or not texts:
            return {}
        return await self._write(store.cached_vectors, self._cache_key(), list(texts), conn=conn)

    async def _backfill_vectors(self, conn: Any = None, progress: ProgressCallback | None = None) -> int:
        """Embed the chunks that have no vector yet: a sync writes chunks first (keyword search has them
        at once) and embeds them here; also after an outage, or an index built keyword-only."""
        done, after, total = 0, 0, None
        while self._embedding_error is None:
            rows = await self._write(store.chunks_without_vectors, after, BACKFILL_CHUNKS, conn=conn)
            if not rows:
                break
            if progress and total is None:
                total = await self._write(store.count_without_vectors, conn=conn)
                progress(0, total, "chunks embedded")
            after = rows[-1][0]
            vectors = await self._embed({h: text for _, h, text in rows}, conn=conn)
            ready = [(cid, vectors[h]) for cid, h, _ in rows if h in vectors]
            if ready:
                await self._write_indexed(indexer.write_vectors, ready, conn=conn)
                done += len(ready)
            if progress and total is not None:
                progress(min(done, total), total, "chunks embedded")
        return done

    async def _switch_to_fallback(self) -> None:
        """After the provider failed while indexing, move to the configured fallback (if any)."""
        fallback = self.settings.embedding.fallback
        current = self._provider
        if current is None or fallback == "none" or fallback == current.id or fallback in self._failed_providers:
            return
        logger.warning("switching embeddings from %s to fallback %s; the index will be rebuilt", current.id, fallback)
        self._failed_providers.add(current.id)
        async with self._provider_lock:
            await current.aclose()
            self._provider, self._provider_started = None, False
        self.request_sync()

    # Sync ---------------------------------------------------------------------------------------

    async def _sync_in_background(self) -> None:
        try:
            await self.sync()
        except Exception:
            logger.exception("background sync failed; searches use what is indexed so far")

    def request_sync(self) -> None:
        """Schedule a full sync in the background (a no-op when one is already queued)."""
        if self._task_group is not None and not self._sync_wanted:
            self._task_group.start_soon(self._sync_in_background)

    def mark_dirty(self) -> None:
        """Note that files may have changed unseen; the next search schedules a sync."""
        self._dirty = True

    def add_change_listener(self, listener: ChangeListener) -> None:
        """Call ``listener(paths)`` after memory files change (watcher events and appends)."""
        self._listeners.append(listener)

    async def _notify(self, paths: list[str]) -> None:
        for listener in self._listeners:
            try:
                await listener(paths)
            except Exception:
                logger.exception("a change listener failed")

    async def sync(self, *, force: bool = False, progress: ProgressCallback | None = None) -> SyncReport:
        """Bring the index in line with the files; concurrent calls share runs.

        A call that arrives while a sync runs waits for it and then runs once more (changes made
        during the first run are not lost); every caller queued behind it shares that second run.
        """
        self._require_open()
        self._sync_wanted = True
        self._force_wanted |= force
        async with self._sync_lock:
            if not self._sync_wanted:
                return self._last_report
            self._sync_wanted, self._dirty = False, False
            force, self._force_wanted = self._force_wanted, False
            self._last_report = await self._run_sync(force, progress)
            return self._last_report

    async def _run_sync(self, force: bool, progress: ProgressCallback | None) -> SyncReport:
        started = time.perf_counter()
        self._state, self._error, self._embedding_error = "indexing", None, None
        self._progress = (0, 0)  # until this run has listed the files
        try:
            await self._ensure_provider()
            wanted = {"chunks": self._chunk_identity(), "vectors": self._vector_identity()}
            stored = self._stored
            rebuild = stored is not None and (
                stored.get("chunks") != wanted["chunks"]
                or (wanted["vectors"] is not None and stored.get("vectors") != wanted["vectors"])
            )
            if rebuild:
                changed, removed, stale = await self._rebuild(wanted, progress)
            else:
                changed, removed, stale = await self._sync_into(self._writer, force, progress)
                if self._provider is not None:
                    await self._backfill_vectors(progress=progress)
                identity = wanted if stored is None else stored
                await self._write(_record_sync, identity, time.time(), self.settings.cache.max_entries)
                self._stored = identity
            self._last_sync = time.time()
        except Exception as exc:
            self._state, self._error = "error", f"{type(exc).__name__}: {exc}"
            raise
        self._state = "ready"
        if self.vectors_ready and not self._matrix.loaded:
            self._load_matrix_soon()  # searches use sqlite-vec until it is in RAM
        if self._embedding_error:
            await self._switch_to_fallback()
        if stale:
            logger.info("%d file(s) changed while indexing; syncing again", len(stale))
            self.request_sync()
        report = SyncReport(self._progress[1], changed, removed, time.perf_counter() - started)
        logger.info("sync: %d files, %d re-indexed, %d removed in %.2fs", report.files, changed, removed, report.seconds)
        return report

    async def _sync_into(self, conn: Any, force: bool, progress: ProgressCallback | None) -> tuple[int, int, list[str]]:
        """Index the workspace into ``conn``; returns (files re-chunked, files removed, stale paths)."""
        files = await anyio.to_thread.run_sync(self.workspace.discover)
        known = await self._write(store.file_states, conn=conn)
        if self._provider is not None:
            await self._write(store.ensure_vector_table, self._provider.dims, conn=conn)
        self._progress = (0, len(files))
        if progress:
            progress(0, len(files), "files")
        changed = 0
        stale: list[str] = []
        deferred: list[str] = []
        for start in range(0, len(files), BATCH_FILES):
            batch = files[start : start + BATCH_FILES]
            changes, vanished = await anyio.to_thread.run_sync(
                lambda: self._prepare(batch, known, force=force, deferred=deferred)
            )
            if changes or vanished:
                vectors = await self._cached_vectors(indexer.chunk_texts(changes), conn=conn)
                stale += (await self._write_indexed(indexer.write, changes, vanished, vectors, conn=conn)).stale
                changed += sum(1 for c in changes if c.chunks is not None)
            self._progress = (start + len(batch), len(files))
            if progress:
                progress(*self._progress, "files")
        removed = sorted(known.keys() - {f.rel for f in files})
        if removed:
            await self._write_indexed(indexer.write, [], removed, conn=conn)
        self._defer(deferred)
        return changed, len(removed), stale

    def _prepare(
        self, files: Sequence[MemoryFile], known: dict[str, store.FileState], *, force: bool, deferred: list[str]
    ) -> tuple[list[indexer.Prepared], list[str]]:
        """``indexer.prepare`` with this engine's chunking and transcript delta settings (a worker thread)."""
        chunking, sessions = self.settings.chunking, self.settings.sessions
        return indexer.prepare(
            files, known, tokens=chunking.tokens, overlap=chunking.overlap, force=force,
            delta_bytes=sessions.delta_bytes, delta_lines=sessions.delta_lines, deferred=deferred,
        )

    def _defer(self, paths: Iterable[str]) -> None:
        """Look at these growing transcripts again once they have had time to go quiet."""
        self._deferred.update(paths)
        if self._deferred and not self._deferred_waiting and self._task_group is not None:
            self._deferred_waiting = True
            self._task_group.start_soon(self._index_quiet_transcripts)

    async def _index_quiet_transcripts(self) -> None:
        """Index deferred transcripts whose writer has stopped (the "closed" case of the delta rule).

        A transcript still being written is deferred again by ``sync_paths`` and waits another round.
        """
        try:
            while self._deferred:
                await anyio.sleep(indexer.TRANSCRIPT_QUIET_SECONDS + 1)
                paths, self._deferred = self._deferred, set()
                try:
                    await self.sync_paths(paths)
                except Exception:
                    logger.exception("indexing %d quiet transcript(s) failed; a full sync will retry", len(paths))
                    self.mark_dirty()
        finally:
            self._deferred_waiting = False

    async def _rebuild(
        self, identity: dict[str, Any], progress: ProgressCallback | None
    ) -> tuple[int, int, list[str]]:
        """Build a complete new index beside the old one and swap it in; the old one serves meanwhile."""
        logger.info("index settings changed; rebuilding %s in the background", self.index_path)
        self._rebuilding = True
        temp = swap.temp_path(self.index_path)
        conn = await anyio.to_thread.run_sync(store.open_index, temp)
        try:
            await self._write(store.seed_cache, self.index_path, conn=conn)
            changed, removed, stale = await self._sync_into(conn, True, progress)
            if self._provider is not None:
                await self._backfill_vectors(conn, progress)
            if self._embedding_error:
                raise EmbeddingError(f"rebuild abandoned, the previous index stays in service: {self._embedding_error}")
            await self._write(_record_sync, identity, time.time(), self.settings.cache.max_entries, conn=conn)
            await self._write(store.checkpoint, conn=conn)
            conn.close()
            async with self._write_limiter:  # no write is in flight on the old index while it is replaced
                await anyio.to_thread.run_sync(self._swap_in, temp)
            self._stored = identity
        except BaseException:
            conn.close()
            swap.remove(temp)
            raise
        finally:
            self._rebuilding = False
        self.request_sync()  # pick up anything written to the old index while the new one was built
        return changed, removed, stale

    def _swap_in(self, temp: Any) -> None:
        self._writer.close()
        try:
            swap.swap(self.index_path, temp)
        finally:
            self._writer = store.open_index(self.index_path)
            self._generation += 1
            self._matrix.reset()
            self._counts = None

    async def sync_paths(self, paths: Iterable[str]) -> None:
        """Re-index these answer paths now: changed files are re-chunked, missing ones removed.

        A path that is now a symlink is removed from the index, never followed.
        """
        files = [self.workspace.file_for(rel) for rel in sorted(set(paths))]
        gone = [f.rel for f in files if f.path.is_symlink()]
        present = [f for f in files if f.rel not in gone]
        # Memory files are re-read whatever the index says; a transcript is compared with its indexed
        # state, so that one more appended message is not a re-index (the delta rule).
        transcripts = {f.rel for f in present if f.source == "sessions"}
        known: dict[str, store.FileState] = {}
        if transcripts:
            known = {rel: s for rel, s in (await self._write(store.file_states)).items() if rel in transcripts}
        deferred: list[str] = []
        changes, vanished = await anyio.to_thread.run_sync(
            lambda: self._prepare(present, known, force=False, deferred=deferred)
        )
        self._defer(deferred)
        vectors = await self._embed(indexer.chunk_texts(changes)) if self.vectors_ready else None
        if (await self._write_indexed(indexer.write, changes, [*vanished, *gone], vectors)).stale:
            self.request_sync()
        await self._notify([f.rel for f in files])

    # Queries ------------------------------------------------------------------------------------

    async def _index_counts(self) -> tuple[int, int]:
        """(files, chunks), cached for a moment: counting 100k chunks takes ~2 ms, too long for every search.

        Writes by this engine drop the cache; another process's writes show within COUNTS_TTL seconds.
        """
        cached = self._counts
        if cached is not None and time.monotonic() - cached[0] < COUNTS_TTL:
            return cached[1], cached[2]
        taken = time.monotonic()
        files, chunks = await self._read(store.counts)
        self._counts = (taken, files, chunks)
        return files, chunks

    async def status(self) -> IndexStatus:
        files, chunks = await self._index_counts()
        done, total = self._progress if self._state == "indexing" else (0, 0)
        last = None
        if self._last_sync is not None:
            last = dt.datetime.fromtimestamp(self._last_sync, dt.timezone.utc).isoformat(timespec="seconds")
        provider = self._provider
        note = self._embedding_error or self._provider_note
        if provider is not None and not self.vectors_ready:
            note = f"embedding the index with {provider.id} {provider.model}; keyword results until it is ready"
        return IndexStatus(
            state=self._state, files=files, chunks=chunks, files_done=done, files_total=total,
            last_sync=last, error=self._error, mode="hybrid" if self.vectors_ready else "keyword",
            provider=provider.id if provider else None, model=provider.model if provider else None, note=note,
        )

    async def search(
        self, query: str, max_results: int | None = None, min_score: float | None = None
    ) -> SearchAnswer:
        """Rank memory chunks for ``query``: hybrid when vectors are ready, keyword-only otherwise."""
        text = query.strip() if isinstance(query, str) else ""
        if not text:
            raise InputError("query is empty; pass the words to look for, e.g. 'database migration decision'")
        q = self.settings.query
        limit = q.max_results if max_results is None else max_results
        if not 1 <= limit <= 50:
            raise InputError(f"maxResults must be between 1 and 50 (got {limit})")
        threshold = q.min_score if min_score is None else min_score
        if not 0.0 <= threshold <= 1.0:
            raise InputError(f"minScore must be between 0 and 1 (got {threshold})")
        if self._dirty:
            self.request_sync()  # answer from the index as it is; the sync runs meanwhile
        status = await self.status()
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

        async def keyword_side() -> None:
            nonlocal keyword_rows
            keyword_rows = await self._read(store.keyword_search, terms, candidates, status.chunks)

        async def vector_side() -> None:
            nonlocal vector, vector_rows
            vector = await self._query_vector(text, warnings)
            if vector is not None:
                vector_rows = await self._nearest(vector, candidates)

        async with anyio.create_task_group() as tg:  # the two sides run side by side
            tg.start_soon(keyword_side)
            if self.vectors_ready:
                tg.start_soon(vector_side)
        if vector is None:
            if not terms:
                warnings.append("the query has no words or numbers to search for; rephrase it with words")
            hits = rank_keyword(keyword_rows, terms, limit, q, self.today())
            mode: Literal["hybrid", "keyword"] = "keyword"
        else:
            hits = rank_hybrid(keyword_rows, vector_rows, terms, limit, threshold, q, self.today())
            mode = "hybrid"
        provider = self._provider
        return SearchAnswer(
            results=hits, mode=mode, provider=provider.id if provider else None,
            model=provider.model if provider else None, warning=" ".join(warnings) or None, index_status=status,
        )

    async def _nearest(self, vector: list[float], k: int) -> list[store.ChunkRow]:
        """The ``k`` chunks nearest to ``vector``: from the in-memory copy when it is in step with the
        index, else from sqlite-vec while the copy (re)loads in the background."""

        def nearest(conn: Any) -> list[store.ChunkRow] | None:
            hits = self._matrix.search(store.read_meta(conn, store.VECTORS_VERSION), vector, k)
            return None if hits is None else store.chunks_by_id(conn, hits)

        rows = await self._read(nearest)
        if rows is not None:
            return rows
        self._load_matrix_soon()
        return await self._read(store.vector_search, vector, k)

    async def vectors_in_ram(self) -> bool:
        """True when vector searches are served from the in-memory copy (it is loaded and current)."""
        return self._matrix.in_step(await self._read(store.read_meta, store.VECTORS_VERSION))

    def _load_matrix_soon(self) -> None:
        """Start loading the in-memory vectors, unless a load runs or one finished too recently."""
        if self._matrix_loading or self._task_group is None or time.monotonic() < self._matrix_next_load:
            return
        self._matrix_loading = True
        self._task_group.start_soon(self._load_matrix)

    async def _load_matrix(self) -> None:
        started = time.monotonic()
        try:
            await self._read(self._matrix.load)
            logger.info("vectors in RAM: %d rows, %.1f MB, loaded in %.2fs",
                        self._matrix.rows, self._matrix.nbytes / 1e6, time.monotonic() - started)  # fmt: skip
        except Exception:
            logger.exception("loading the vectors into RAM failed; searches use sqlite-vec")
        finally:
            # Another process writing all the time would otherwise keep a core busy reloading.
            self._matrix_next_load = time.monotonic() + 4 * (time.monotonic() - started)
            self._matrix_loading = False

    async def _query_vector(self, text: str, warnings: list[str]) -> list[float] | None:
        """The query's embedding, or None (with a warning) when it fails or is too slow."""
        assert self._provider is not None
        timeout = self.settings.embedding.query_timeout
        try:
            with anyio.fail_after(timeout):
                return await self._provider.embed_query(text)
        except TimeoutError:
            warnings.append(f"the query embedding took over {timeout:g}s; these are keyword results")
        except EmbeddingError as exc:
            warnings.append(f"the query embedding failed ({exc}); these are keyword results")
        return None

    async def read(self, path: str, from_line: int = 1, lines: int | None = None) -> Excerpt:
        """Read lines of a memory file from disk (always the current truth, indexed or not)."""
        return await anyio.to_thread.run_sync(
            lambda: read_excerpt(self.workspace.resolve(path), from_line, lines)
        )

    # Writes -------------------------------------------------------------------------------------

    def today(self) -> dt.date:
        """Today's date in the configured time zone."""
        return dt.datetime.now(self.settings.zone).date()

    async def append(
        self, text: str, target: Literal["daily", "long_term"] = "daily", heading: str | None = None
    ) -> AppendReceipt:
        """Append a note to today's daily log or to MEMORY.md, then index it at once."""
        self._require_open()
        if self.settings.read_only:
            raise InputError("this memdex server is read-only; memory_append is disabled")
        entry = format_entry(text, heading)
        if target == "daily":
            day = self.today()
            file, title = self.workspace.daily_file(day), f"# {day.isoformat()}"
        elif target == "long_term":
            file, title = self.workspace.long_term_file(), None
        else:
            raise InputError(f"target must be 'daily' or 'long_term' (got {target!r})")

        def run() -> AppendReceipt:
            checked = self.workspace.resolve(file.rel, must_exist=False)
            return append_entry(checked, entry, title=title)

        receipt = await anyio.to_thread.run_sync(run)
        if not receipt.duplicate:
            await self.sync_paths([file.rel])
        return receipt


def _record_sync(conn: Any, identity: dict[str, Any], finished: float, max_cache: int) -> None:
    """Store the index identity and sync time, and bound the embedding cache, in one transaction."""
    with store.transaction(conn):
        store.write_meta(conn, "identity", identity)
        store.write_meta(conn, "last_sync", finished)
        store.prune_cache(conn, max_cache)

