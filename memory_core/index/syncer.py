"""Keeping the index in line with the files: full and targeted syncs, and rebuilds.

Chunks come first, vectors after. A sync (full, or targeted at the files an edit or an append
touched) writes chunks with whatever vectors the cache already has and returns: keyword search
has the change at once. The :class:`~.vectors.VectorWorker` then embeds what lacks a vector.

A rebuild (the chunking or the embedding model changed) fills a shadow index beside the live one
while the live one keeps serving and taking edits; under the sync lock it catches up with those
edits and is copied into the live file. One rebuild runs at a time per index, across processes.

Every sync publishes the answer paths it changed to the :class:`~.changes.ChangeFeed`.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

import anyio
from anyio.abc import TaskGroup

from ..config import Settings
from ..embeddings.embedder import Embedder
from ..errors import EmbeddingError, IndexCorrupt, MemdexError
from ..stores.base import IndexOwner
from ..stores.records import FileState, IndexedTail
from ..text.chunking import CHUNKER_VERSION
from ..text.terms import TERMS_IDENTITY
from ..workspace.files import MemoryFile, Workspace
from . import indexer
from .changes import ChangeFeed
from .shared_passes import SharedPasses
from .vectors import BuiltWith, ProgressCallback, VectorWorker

logger = logging.getLogger(__name__)

BATCH_FILES = 64
STALE_RETRIES = 5  # a targeted sync re-reads a file that changed while it was being indexed
TAIL_CHUNKS = 8  # a grown file's last chunks read to find where its re-chunk may start


@dataclass(frozen=True)
class SyncReport:
    """What one sync did."""

    files: int
    changed: int
    removed: int
    seconds: float


@dataclass(frozen=True)
class SyncStatus:
    """Where syncing stands: the state, the running sync's progress in files, the last sync and its error."""

    state: Literal["starting", "indexing", "ready", "error"]
    files_done: int
    files_total: int
    last_sync: float | None  # Unix time the last sync finished
    error: str | None


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
        self.embedder = embedder
        self.feed = feed
        self.clock = clock
        self.built = BuiltWith()
        self.vectors = VectorWorker(index, embedder, settings.embedding, self.built, self.rebuild)
        self._state: Literal["starting", "indexing", "ready", "error"] = "starting"
        self._progress = (0, 0)
        self._error: str | None = None
        self._dirty = False  # files may have changed without the index knowing (e.g. the watcher died)
        self._failing = False  # the last background sync failed with a memdex error (logged once)
        self._tg: TaskGroup | None = None
        self._sync_wanted = False
        self._force_wanted = False
        self._last_report = SyncReport(0, 0, 0, 0.0)
        self._deferred: set[str] = set()  # growing transcripts to look at again once they are quiet
        self._deferred_waiting = False

    async def open(self, task_group: TaskGroup) -> None:
        """Learn how the index was built; background work runs in ``task_group``."""
        self._sync_lock = anyio.Lock()
        self._rebuild_lock = anyio.Lock()
        self._passes = SharedPasses(lambda rels, until_current: self._run_paths(rels, until_current))
        self._tg = task_group
        await self.learn_identity()
        self.vectors.open(task_group)

    def status(self) -> SyncStatus:
        """Where syncing stands now."""
        done, total = self._progress if self._state == "indexing" else (0, 0)
        return SyncStatus(self._state, done, total, self.built.last_sync, self._error)

    async def learn_identity(self) -> None:
        """Read how the index was built and when it was last synced (at open, and on a host that serves
        an index another host builds)."""
        ops, built = self.ops, self.built
        built.identity, built.last_sync = await self.index.read(
            lambda conn: (ops.read_meta(conn, "identity"), ops.read_meta(conn, "last_sync"))
        )
        # A replica never chunks anything: the index is the indexing host's, whatever its own settings say.
        built_here = self.settings.replica or (built.identity or {}).get("chunks") == self.chunk_identity()
        if built.last_sync is not None and built.identity and built_here and self._state == "starting":
            self._state = "ready"  # complete as of the last sync; the first sync catches up

    def chunk_identity(self) -> dict[str, Any]:
        return {
            "schema": self.ops.SCHEMA_VERSION,
            "chunker": CHUNKER_VERSION,
            "chunk_tokens": self.settings.chunking.tokens,
            "chunk_overlap": self.settings.chunking.overlap,
            "fts_tokenizer": TERMS_IDENTITY,
        }

    @property
    def vectors_ready(self) -> bool:
        """True when searches can use vectors: a provider runs and the index was built with it."""
        return self.built.serves(self.embedder)

    # Scheduling ---------------------------------------------------------------------------------

    def request_sync(self) -> None:
        """Schedule a full sync in the background (a no-op when one is already queued)."""
        if self._tg is not None and not self._sync_wanted:
            self._tg.start_soon(self._sync_in_background)

    def mark_dirty(self) -> None:
        """Note that files may have changed unseen; :meth:`sync_if_dirty` then schedules a sync."""
        self._dirty = True

    def sync_if_dirty(self) -> None:
        """Schedule a full sync when files may have changed unseen (a search calls this)."""
        if self._dirty:
            self.request_sync()

    async def _sync_in_background(self) -> None:
        """A sync whose failure is logged: a bug with its traceback, a memdex error (the store unreachable,
        say) in one line, once until a sync works again (every search of an outage asks for one)."""
        try:
            await self.sync(vectors=False)
        except MemdexError as exc:
            if not self._failing:
                logger.warning("background sync failed: %s; searches use what is indexed so far", exc)
            self._failing = True
        except Exception:
            logger.exception("background sync failed; searches use what is indexed so far")
        else:
            self._failing = False

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
        self.vectors.start_provider()
        rebuild = False
        async with self._sync_lock:
            if self._sync_wanted:
                self._sync_wanted, self._dirty = False, False
                force, self._force_wanted = self._force_wanted, False
                try:
                    self._last_report, rebuild = await self._run_or_repair(force, progress)
                except BaseException:
                    self._dirty = True  # the files it did not index are still unseen: the next chance retries
                    raise
            report = self._last_report
        if rebuild:
            done = await self.rebuild(progress)
            report = SyncReport(self._progress[1], len(done.changed), len(done.removed), 0.0)
        if vectors:
            await self.embedder.settled.wait()
            try:
                await self.vectors.complete(progress, bulk=True)
            except EmbeddingError as exc:
                moved = await self.vectors.fall_back()
                if self._state == "error":
                    raise  # a rebuild was abandoned: the caller asked for the complete new index
                logger.warning("%s; chunks are indexed for keyword search and embedded later", exc)
                if not moved:
                    self.vectors.want(bulk=True)
        else:
            self.vectors.want(bulk=True)
        return replace(report, seconds=time.perf_counter() - started)  # vectors included

    async def _run_or_repair(self, force: bool, progress: ProgressCallback | None) -> tuple[SyncReport, bool]:
        try:
            return await self._run_sync(force, progress)
        except IndexCorrupt:
            if not self.index.damaged:
                raise
            return await self._run_sync(force, progress)  # repairs first

    async def _run_sync(self, force: bool, progress: ProgressCallback | None) -> tuple[SyncReport, bool]:
        """One full pass into the live index; True when the index must be rebuilt instead."""
        started = time.perf_counter()
        self._state, self._error, self._progress = "indexing", None, (0, 0)
        built = self.built
        try:
            if self.index.damaged or (force and not await self.index.check_integrity()):
                await self.index.repair()
            built.identity = await self.index.read(self.ops.read_meta, "identity")  # another process may have rebuilt
            if built.identity is not None and built.identity.get("chunks") != self.chunk_identity():
                return SyncReport(0, 0, 0, time.perf_counter() - started), True
            if built.identity is None and (await self.index.read(self.ops.counts))[0]:
                force = True  # a first sync was cut short: its chunks' settings are unknown, re-chunk them
            done = await self._sync_into(None, force, progress)
            identity = {"chunks": self.chunk_identity(), "vectors": built.vectors}
            finished = self.clock()
            await self.index.write(self._record_sync, identity, finished, self.settings.cache.max_entries)
            built.identity, built.last_sync = identity, finished
        except Exception as exc:
            self._state, self._error = "error", f"{type(exc).__name__}: {exc}"
            if self.index.damaged:
                self.request_sync()  # the next run repairs the index
            raise
        self._state = "ready"
        self.feed.publish([*done.changed, *done.removed])
        if done.stale:
            logger.info("%d file(s) changed while indexing; syncing again", len(done.stale))
            self.request_sync()
        report = SyncReport(self._progress[1], len(done.changed), len(done.removed), time.perf_counter() - started)
        logger.info("sync: %d files, %d re-indexed, %d removed in %.2fs", report.files, report.changed,
                    report.removed, report.seconds)  # fmt: skip
        return report, False

    async def _sync_into(self, conn: Any, force: bool, progress: ProgressCallback | None) -> _Pass:
        """Index the workspace into ``conn`` (None: the live index), chunks with cached vectors only."""
        files = await anyio.to_thread.run_sync(self.workspace.discover)
        known = await self.index.write(self.ops.file_states, conn=conn)
        self._progress = (0, len(files))
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
            self._progress = (start + len(batch), len(files))
            if progress:
                progress(*self._progress, "files")
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
        self,
        files: Sequence[MemoryFile],
        known: dict[str, FileState],
        *,
        force: bool,
        deferred: list[str],
        tails: Mapping[str, IndexedTail] | None = None,
        recall: bool = False,
    ) -> tuple[list[indexer.Prepared], list[str]]:
        """``indexer.prepare`` with this workspace's chunking and transcript delta settings (a worker thread)."""
        chunking, sessions = self.settings.chunking, self.settings.sessions
        return indexer.prepare(
            files, known, tokens=chunking.tokens, overlap=chunking.overlap, force=force,
            delta_bytes=sessions.delta_bytes, delta_lines=sessions.delta_lines, deferred=deferred, tails=tails,
            recall=recall, whole_text=self.ops.KEEPS_TEXT,
        )

    # Targeted sync ------------------------------------------------------------------------------

    async def sync_paths(self, paths: Iterable[str], *, until_current: bool = False) -> None:
        """Re-index these answer paths now: changed files are re-chunked, missing ones removed.

        A file that changed while it was being read is skipped and left to a full sync, or, with
        ``until_current`` (an append that must be searchable when acknowledged), read again until
        the index holds it as it was at some moment after this call began. Vectors follow in the
        background. A file now reached through a symlink is removed from the index, never followed.

        Calls share passes: one that arrives while a pass runs joins the next pass, which begins after
        it arrived, so eight writers appending to one log wait for two passes, not eight.
        """
        await self._passes.request(set(paths), until_current)

    async def _run_paths(self, rels: list[str], until_current: bool) -> None:
        pending = await self._write_paths(rels)
        for _ in range(STALE_RETRIES if until_current else 0):
            if not pending:
                break
            pending = await self._write_paths(pending)
        if pending:
            self.request_sync()
        if self.vectors_ready:
            self.vectors.want()
        self.feed.publish(rels)

    async def _write_paths(self, rels: list[str]) -> list[str]:
        """One targeted pass; returns the paths that changed again while they were being written."""
        present = await anyio.to_thread.run_sync(lambda: [self.workspace.file_for(rel) for rel in rels])
        # Each file is compared with its indexed state: an unchanged one is not re-chunked, one more
        # message in a transcript is not a re-index (the delta rule), and a Markdown file that only grew
        # has only its tail re-chunked, when its chunks were cut with the settings in force.
        tails = await self.index.read(self.ops.indexed_tails, [f.rel for f in present], TAIL_CHUNKS)
        known = {rel: tail.state for rel, tail in tails.items()}
        if (self.built.identity or {}).get("chunks") != self.chunk_identity():
            tails = {}
        deferred: list[str] = []
        changes, vanished = await anyio.to_thread.run_sync(
            lambda: self._prepare(present, known, force=False, deferred=deferred, tails=tails, recall=True)
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
                    self._dirty = True
        finally:
            self._deferred_waiting = False

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
                self.built.identity = current
                return _Pass([], [], [])
            # The old index is complete and keeps serving: the state stays as it is until the swap.
            logger.info(
                "index settings changed (%s); rebuilding %s in the background",
                ", ".join(changed_settings(current, wanted)), self.index.location,
            )
            try:
                async with self.index.shadow() as shadow:
                    if provider is not None:
                        await self.index.write(self.ops.ensure_vector_table, provider.dims, conn=shadow)
                    done = await self._sync_into(shadow, True, progress)
                    if provider is not None:
                        await self.vectors.backfill(shadow, progress, bulk=True)
                    async with self._sync_lock, self.index.writes_paused():  # catch up, then swap
                        await self._sync_into(shadow, False, None)
                        old = await self.index.write(self.ops.file_states)
                        new = await self.index.write(self.ops.file_states, conn=shadow)
                        finished = self.clock()
                        await self.index.write(
                            self._record_sync, wanted, finished, self.settings.cache.max_entries, conn=shadow
                        )
                        await self.index.install(shadow)
                        self.built.identity, self.built.last_sync = wanted, finished
            except Exception as exc:
                self._state, self._error = "error", f"rebuild abandoned, the previous index stays in service: {exc}"
                if isinstance(exc, EmbeddingError):
                    raise EmbeddingError(self._error) from exc
                raise
            self._state, self._error = "ready", None
        self.feed.publish(rel for rel in old.keys() | new.keys() if old.get(rel) != new.get(rel))
        self.vectors.want()  # chunks written during the catch-up got cached vectors only
        self.vectors.load_soon()
        return done

    def _record_sync(self, conn: Any, identity: dict[str, Any], finished: float, max_cache: int) -> None:
        """Store the index identity and sync time, and bound the embedding cache, in one transaction."""
        with self.ops.transaction(conn):
            self.ops.write_meta(conn, "identity", identity)
            self.ops.write_meta(conn, "last_sync", finished)
            self.ops.prune_cache(conn, max_cache)


def changed_settings(built: dict[str, Any] | None, wanted: dict[str, Any]) -> list[str]:
    """The settings (``chunks.fts_tokenizer``, ``vectors``) in which an index built with ``built`` differs from
    ``wanted``; ``everything`` for an index that records none."""
    if not built:
        return ["everything"]
    changed: list[str] = []
    for part, value in wanted.items():
        old = built.get(part)
        if isinstance(value, dict) and isinstance(old, dict):
            changed += [f"{part}.{key}" for key in sorted(value.keys() | old.keys()) if value.get(key) != old.get(key)]
        elif value != old:
            changed.append(part)
    return changed
