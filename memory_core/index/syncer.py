"""Keeping the index in line with the files: full and targeted syncs, vectors, rebuilds.

Chunks come first, vectors after. A sync (full, or targeted at the files an edit or an append
touched) writes chunks with whatever vectors the cache already has and returns: keyword search
has the change at once. A background task then embeds what lacks a vector, retrying with backoff
when the provider fails and moving to the fallback provider when one is configured.

A rebuild (the chunking or the embedding model changed) fills a shadow index beside the live one
while the live one keeps serving and taking edits; under the sync lock it catches up with those
edits and is copied into the live file. One rebuild runs at a time per index, across processes.

Every sync publishes the answer paths it changed to the :class:`~.changes.ChangeFeed`.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

import anyio
from anyio.abc import TaskGroup

from ..config import Settings
from ..embeddings.embedder import RETRY_FIRST, RETRY_MAX, Embedder
from ..errors import EmbeddingError, IndexCorrupt, MemdexError
from ..stores.base import IndexOwner
from ..stores.records import FileState
from ..text.chunking import CHUNKER_VERSION
from ..text.terms import FTS_TOKENIZER
from ..workspace.files import MemoryFile, Workspace
from . import indexer
from .changes import ChangeFeed

logger = logging.getLogger(__name__)

ProgressCallback = Callable[[int, int, str], None]  # (done, total, "files" or "chunks embedded")

BATCH_FILES = 64
BACKFILL_CHUNKS = 256  # chunks embedded (and stored, so a kill loses little) per step
BULK_CHUNKS = 10_000  # per step of a planned backfill or rebuild when OpenAI's Batch API may serve it
STALE_RETRIES = 5  # a targeted sync re-reads a file that changed while it was being indexed


@dataclass(frozen=True)
class SyncReport:
    """What one sync did."""

    files: int
    changed: int
    removed: int
    seconds: float


@dataclass(frozen=True)
class _Pass:
    """What writing one pass over the files into an index did."""

    changed: list[str]
    removed: list[str]
    stale: list[str]


class Syncer:
    """Full and targeted syncs of one workspace into one index."""

    def __init__(
        self,
        settings: Settings,
        workspace: Workspace,
        index: IndexOwner,
        embedder: Embedder,
        feed: ChangeFeed,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.settings = settings
        self.workspace = workspace
        self.index = index
        self.ops = index.ops
        self._write_files = functools.partial(indexer.write, index.ops)
        self._write_vectors = functools.partial(indexer.write_vectors, index.ops)
        self.embedder = embedder
        self.feed = feed
        self.clock = clock
        self.state: Literal["starting", "indexing", "ready", "error"] = "starting"
        self.progress = (0, 0)
        self.last_sync: float | None = None
        self.error: str | None = None
        self.stored: dict[str, Any] | None = None  # the identity the index was built with
        self.dirty = False  # files may have changed without the index knowing (e.g. the watcher died)
        self._tg: TaskGroup | None = None
        self._sync_wanted = False
        self._force_wanted = False
        self._last_report = SyncReport(0, 0, 0, 0.0)
        self._deferred: set[str] = set()  # growing transcripts to look at again once they are quiet
        self._deferred_waiting = False
        self._vectors_wanted = anyio.Event()
        self._bulk_wanted = False
        self._vectors_loading = False
        self._vectors_next_load = 0.0  # monotonic time before which no reload starts

    async def open(self, task_group: TaskGroup) -> None:
        """Learn how the index was built; background work runs in ``task_group``."""
        self._sync_lock = anyio.Lock()
        self._vector_lock = anyio.Lock()
        self._rebuild_lock = anyio.Lock()
        self._tg = task_group
        await self.learn_identity()
        task_group.start_soon(self._vector_loop)

    async def learn_identity(self) -> None:
        """Read how the index was built and when it was last synced (at open, and on a host that serves
        an index another host builds)."""
        ops = self.ops
        self.stored, self.last_sync = await self.index.read(
            lambda conn: (ops.read_meta(conn, "identity"), ops.read_meta(conn, "last_sync"))
        )
        # A replica never chunks anything: the index is the indexing host's, whatever its own settings say.
        built_here = self.settings.replica or (self.stored or {}).get("chunks") == self.chunk_identity()
        if self.last_sync is not None and self.stored and built_here and self.state == "starting":
            self.state = "ready"  # complete as of the last sync; the first sync catches up

    def chunk_identity(self) -> dict[str, Any]:
        return {
            "schema": self.ops.SCHEMA_VERSION,
            "chunker": CHUNKER_VERSION,
            "chunk_tokens": self.settings.chunking.tokens,
            "chunk_overlap": self.settings.chunking.overlap,
            "fts_tokenizer": FTS_TOKENIZER,
        }

    @property
    def vectors_ready(self) -> bool:
        """True when searches can use vectors: a provider runs and the index was built with it."""
        identity = self.embedder.identity()
        return identity is not None and self.stored is not None and self.stored.get("vectors") == identity

    # Scheduling ---------------------------------------------------------------------------------

    def request_sync(self) -> None:
        """Schedule a full sync in the background (a no-op when one is already queued)."""
        if self._tg is not None and not self._sync_wanted:
            self._tg.start_soon(self._sync_in_background)

    async def _sync_in_background(self) -> None:
        try:
            await self.sync(vectors=False)
        except Exception:
            logger.exception("background sync failed; searches use what is indexed so far")

    def want_vectors(self, *, bulk: bool = False) -> None:
        """Wake the background task that embeds chunks without vectors."""
        self._bulk_wanted |= bulk
        self._vectors_wanted.set()

    def start_provider(self, *, embed: bool = True) -> None:
        """Start the embedding provider; once it runs, embed the chunks that lack vectors (unless not ``embed``)."""
        assert self._tg is not None
        self.embedder.start_soon(self._tg.start_soon, lambda: self.want_vectors(bulk=True) if embed else None)

    # Full sync ----------------------------------------------------------------------------------

    async def sync(
        self, *, force: bool = False, progress: ProgressCallback | None = None, vectors: bool = True
    ) -> SyncReport:
        """Bring the index in line with the files; concurrent calls share runs.

        A call that arrives while a sync runs waits for it and then runs once more (changes made
        during the first run are not lost); every caller queued behind it shares that second run.
        With ``vectors`` the call also waits for the provider and embeds every chunk (or rebuilds);
        without, that happens in the background.
        """
        started = time.perf_counter()
        self._sync_wanted = True
        self._force_wanted |= force
        self.start_provider()
        rebuild = False
        async with self._sync_lock:
            if self._sync_wanted:
                self._sync_wanted, self.dirty = False, False
                force, self._force_wanted = self._force_wanted, False
                try:
                    self._last_report, rebuild = await self._run_sync(force, progress)
                except IndexCorrupt:
                    if not self.index.damaged:
                        raise
                    self._last_report, rebuild = await self._run_sync(force, progress)  # repairs first
            report = self._last_report
        if rebuild:
            done = await self.rebuild(progress)
            report = SyncReport(self.progress[1], len(done.changed), len(done.removed), 0.0)
        if vectors:
            await self.embedder.settled.wait()
            try:
                await self._complete_vectors(progress, bulk=True)
            except EmbeddingError as exc:
                moved = await self._after_embedding_failure()
                if self.state == "error":
                    raise  # a rebuild was abandoned: the caller asked for the complete new index
                logger.warning("%s; chunks are indexed for keyword search and embedded later", exc)
                if not moved:
                    self.want_vectors(bulk=True)
        else:
            self.want_vectors(bulk=True)
        return replace(report, seconds=time.perf_counter() - started)  # vectors included

    async def _run_sync(self, force: bool, progress: ProgressCallback | None) -> tuple[SyncReport, bool]:
        """One full pass into the live index; True when the index must be rebuilt instead."""
        started = time.perf_counter()
        self.state, self.error, self.progress = "indexing", None, (0, 0)
        try:
            if self.index.damaged or (force and not await self.index.check_integrity()):
                await self.index.repair()
            self.stored = await self.index.read(self.ops.read_meta, "identity")  # another process may have rebuilt
            if self.stored is not None and self.stored.get("chunks") != self.chunk_identity():
                return SyncReport(0, 0, 0, time.perf_counter() - started), True
            if self.stored is None and (await self.index.read(self.ops.counts))[0]:
                force = True  # a first sync was cut short: its chunks' settings are unknown, re-chunk them
            done = await self._sync_into(None, force, progress)
            identity = {"chunks": self.chunk_identity(), "vectors": (self.stored or {}).get("vectors")}
            finished = self.clock()
            await self.index.write(self._record_sync, identity, finished, self.settings.cache.max_entries)
            self.stored, self.last_sync = identity, finished
        except Exception as exc:
            self.state, self.error = "error", f"{type(exc).__name__}: {exc}"
            if self.index.damaged:
                self.request_sync()  # the next run repairs the index
            raise
        self.state = "ready"
        self.feed.publish([*done.changed, *done.removed])
        if done.stale:
            logger.info("%d file(s) changed while indexing; syncing again", len(done.stale))
            self.request_sync()
        report = SyncReport(self.progress[1], len(done.changed), len(done.removed), time.perf_counter() - started)
        logger.info("sync: %d files, %d re-indexed, %d removed in %.2fs", report.files, report.changed,
                    report.removed, report.seconds)  # fmt: skip
        return report, False

    async def _sync_into(self, conn: Any, force: bool, progress: ProgressCallback | None) -> _Pass:
        """Index the workspace into ``conn`` (None: the live index), chunks with cached vectors only."""
        files = await anyio.to_thread.run_sync(self.workspace.discover)
        known = await self.index.write(self.ops.file_states, conn=conn)
        self.progress = (0, len(files))
        if progress:
            progress(0, len(files), "files")
        changed: list[str] = []
        stale: list[str] = []
        deferred: list[str] = []
        for start in range(0, len(files), BATCH_FILES):
            batch = files[start : start + BATCH_FILES]
            prepare = functools.partial(self._prepare, batch, known, force=force, deferred=deferred)
            changes, vanished = await anyio.to_thread.run_sync(prepare)
            if changes or vanished:
                vectors = await self._cached_vectors(changes, conn)
                stale += (await self.index.write_indexed(self._write_files, changes, vanished, vectors, conn=conn)).stale
                changed += [c.file.rel for c in changes if c.chunks is not None and c.file.rel not in stale]
            self.progress = (start + len(batch), len(files))
            if progress:
                progress(*self.progress, "files")
        removed = sorted(known.keys() - {f.rel for f in files})
        if removed:
            await self.index.write_indexed(self._write_files, [], removed, conn=conn)
        self._defer(deferred)
        return _Pass(changed, removed, stale)

    async def _cached_vectors(
        self, changes: Sequence[indexer.Prepared], conn: Any
    ) -> dict[str, list[list[float]]] | None:
        if self.embedder.provider is None:
            return None
        if conn is None and not self.vectors_ready:
            return None  # the live index holds no vectors of this provider (yet)
        await self.index.write(self.ops.ensure_vector_table, self.embedder.provider.dims, conn=conn)
        return await self.embedder.cached(indexer.chunk_texts(changes), conn)

    def _prepare(
        self, files: Sequence[MemoryFile], known: dict[str, FileState], *, force: bool, deferred: list[str]
    ) -> tuple[list[indexer.Prepared], list[str]]:
        """``indexer.prepare`` with this workspace's chunking and transcript delta settings (a worker thread)."""
        chunking, sessions = self.settings.chunking, self.settings.sessions
        return indexer.prepare(
            files, known, tokens=chunking.tokens, overlap=chunking.overlap, force=force,
            delta_bytes=sessions.delta_bytes, delta_lines=sessions.delta_lines, deferred=deferred,
        )

    # Targeted sync ------------------------------------------------------------------------------

    async def sync_paths(self, paths: Iterable[str], *, until_current: bool = False) -> None:
        """Re-index these answer paths now: changed files are re-chunked, missing ones removed.

        A file that changed while it was being read is skipped and left to a full sync, or, with
        ``until_current`` (an append that must be searchable when acknowledged), read again until
        the index holds it as it was at some moment after this call began. Vectors follow in the
        background. A file now reached through a symlink is removed from the index, never followed.
        """
        rels = sorted(set(paths))
        pending = await self._write_paths(rels)
        for _ in range(STALE_RETRIES if until_current else 0):
            if not pending:
                break
            pending = await self._write_paths(pending)
        if pending:
            self.request_sync()
        if self.vectors_ready:
            self.want_vectors()
        self.feed.publish(rels)

    async def _write_paths(self, rels: list[str]) -> list[str]:
        """One targeted pass; returns the paths that changed again while they were being written."""
        present = await anyio.to_thread.run_sync(lambda: [self.workspace.file_for(rel) for rel in rels])
        # Memory files are re-read whatever the index says; a transcript is compared with its indexed
        # state, so that one more appended message is not a re-index (the delta rule).
        transcripts = {f.rel for f in present if f.source == "sessions"}
        known: dict[str, FileState] = {}
        if transcripts:
            known = {rel: s for rel, s in (await self.index.write(self.ops.file_states)).items() if rel in transcripts}
        deferred: list[str] = []
        changes, vanished = await anyio.to_thread.run_sync(
            lambda: self._prepare(present, known, force=False, deferred=deferred)
        )
        self._defer(deferred)
        vectors = await self._cached_vectors(changes, None)
        return (await self.index.write_indexed(self._write_files, changes, vanished, vectors)).stale

    def _defer(self, paths: Iterable[str]) -> None:
        """Look at these growing transcripts again once they have had time to go quiet."""
        self._deferred.update(paths)
        if self._deferred and not self._deferred_waiting and self._tg is not None:
            self._deferred_waiting = True
            self._tg.start_soon(self._index_quiet_transcripts)

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
                    self.dirty = True
        finally:
            self._deferred_waiting = False

    # Vectors ------------------------------------------------------------------------------------

    async def _vector_loop(self) -> None:
        """Embed what lacks a vector whenever asked; retry with backoff while the provider fails."""
        delay = RETRY_FIRST
        while True:
            await self._vectors_wanted.wait()
            self._vectors_wanted = anyio.Event()
            bulk, self._bulk_wanted = self._bulk_wanted, False
            try:
                await self._complete_vectors(None, bulk=bulk)
                delay = RETRY_FIRST
            except EmbeddingError as exc:
                logger.warning("%s; keyword search meanwhile, embedding again in %.0fs", exc, delay)
                if not await self._after_embedding_failure():
                    await anyio.sleep(delay)
                    delay = min(RETRY_MAX, delay * 2)
                    self.want_vectors(bulk=bulk)
            except MemdexError as exc:
                logger.warning("embedding the index failed: %s; a later sync retries", exc)

    async def _after_embedding_failure(self) -> bool:
        """Move to the fallback provider if there is one (its vectors need a rebuild); True if moved."""
        assert self._tg is not None
        return await self.embedder.switch_to_fallback(self._tg.start_soon, lambda: self.want_vectors(bulk=True))

    async def _complete_vectors(self, progress: ProgressCallback | None, *, bulk: bool) -> None:
        """Give every chunk a vector of the running provider: a backfill, or a rebuild for a new model."""
        provider = self.embedder.provider
        if provider is None:
            return
        async with self._vector_lock:
            stored = self.stored
            if stored is None:
                return  # no sync has run yet; it will ask again
            built = stored.get("vectors")
            if built is not None and built != self.embedder.identity():
                if self.embedder.adopts(built):
                    await self.rebuild(progress)
                else:
                    self.embedder.note = (
                        f"the index holds {built['provider']} vectors and embedding.provider is auto, which "
                        f"resolved to {provider.id} here: keyword search in this process (set the provider to use it)"
                    )
                return
            await self.index.write(self.ops.ensure_vector_table, provider.dims)
            if built is None:
                identity = {**stored, "vectors": self.embedder.identity()}
                await self.index.write(self.ops.write_meta, "identity", identity)
                self.stored = identity
            await self._backfill(None, progress, bulk=bulk)
        if not self.index.vectors_loaded:
            self.load_vectors_soon()

    async def _backfill(self, conn: Any, progress: ProgressCallback | None, *, bulk: bool) -> int:
        """Embed the chunks of ``conn`` (None: live) that have no vector yet, in id order."""
        done, after, total = 0, 0, None
        page = BULK_CHUNKS if bulk and self.settings.embedding.openai.batch_api else BACKFILL_CHUNKS
        while rows := await self.index.write(self.ops.chunks_without_vectors, after, page, conn=conn):
            if progress and total is None:
                total = await self.index.write(self.ops.count_without_vectors, conn=conn)
                progress(0, total, "chunks embedded")
            after = rows[-1][0]
            vectors = await self.embedder.embed({h: text for _, h, text in rows}, conn, bulk=bulk)
            ready = [(cid, h, vectors[h]) for cid, h, _ in rows if h in vectors]
            done += len(ready)
            await self.index.write_indexed(self._write_vectors, ready, conn=conn)
            if progress and total is not None:
                progress(min(done, total), total, "chunks embedded")
        return done

    def load_vectors_soon(self) -> None:
        """Start loading the in-memory vectors, unless a load runs or one finished too recently."""
        if self._tg is not None:
            self._tg.start_soon(self._load_vectors)

    async def _load_vectors(self) -> None:
        if self._vectors_loading or time.monotonic() < self._vectors_next_load:
            return
        self._vectors_loading = True
        started = time.monotonic()
        try:
            await self.index.load_vectors()
        except Exception:
            logger.exception("loading the vectors into RAM failed; searches use sqlite-vec")
        finally:
            # Another process writing all the time would otherwise keep a core busy reloading.
            self._vectors_next_load = time.monotonic() + 4 * (time.monotonic() - started)
            self._vectors_loading = False

    # Rebuild ------------------------------------------------------------------------------------

    async def rebuild(self, progress: ProgressCallback | None) -> _Pass:
        """Build a complete new index in a shadow and copy it over the live one, which serves meanwhile.

        Raises EmbeddingError (the live index unchanged) when the provider fails during the build.
        """
        async with self._rebuild_lock, self.index.rebuild_lock():
            provider = self.embedder.provider
            wanted = {"chunks": self.chunk_identity(), "vectors": self.embedder.identity()}
            current = await self.index.read(self.ops.read_meta, "identity")
            if current == wanted:  # another process has just built the same index
                self.stored = current
                return _Pass([], [], [])
            # The old index is complete and keeps serving: the state stays as it is until the swap.
            logger.info("index settings changed; rebuilding %s in the background", self.index.location)
            try:
                async with self.index.shadow() as shadow:
                    if provider is not None:
                        await self.index.write(self.ops.ensure_vector_table, provider.dims, conn=shadow)
                    done = await self._sync_into(shadow, True, progress)
                    if provider is not None:
                        await self._backfill(shadow, progress, bulk=True)
                    async with self._sync_lock, self.index.writes_paused():  # catch up, then swap
                        await self._sync_into(shadow, False, None)
                        old = await self.index.write(self.ops.file_states)
                        new = await self.index.write(self.ops.file_states, conn=shadow)
                        finished = self.clock()
                        await self.index.write(
                            self._record_sync, wanted, finished, self.settings.cache.max_entries, conn=shadow
                        )
                        await self.index.install(shadow)
                        self.stored, self.last_sync = wanted, finished
            except EmbeddingError as exc:
                self.state, self.error = "error", f"rebuild abandoned, the previous index stays in service: {exc}"
                raise EmbeddingError(self.error) from exc
            except Exception as exc:
                self.state, self.error = "error", f"rebuild abandoned, the previous index stays in service: {exc}"
                raise
            self.state, self.error = "ready", None
        self.feed.publish(rel for rel in old.keys() | new.keys() if old.get(rel) != new.get(rel))
        self.want_vectors()  # chunks written during the catch-up got cached vectors only
        self.load_vectors_soon()
        return done

    def _record_sync(self, conn: Any, identity: dict[str, Any], finished: float, max_cache: int) -> None:
        """Store the index identity and sync time, and bound the embedding cache, in one transaction."""
        with self.ops.transaction(conn):
            self.ops.write_meta(conn, "identity", identity)
            self.ops.write_meta(conn, "last_sync", finished)
            self.ops.prune_cache(conn, max_cache)
