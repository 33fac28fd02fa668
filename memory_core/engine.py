"""The async face of memdex: one object that owns the index, its threads and background work.

Thread model: every SQLite call runs on a worker thread. Writes go through one connection behind
a one-slot limiter, so there is exactly one writer; reads borrow connections from a small pool and,
thanks to WAL, never wait for the writer and never see half of a file's update. File reading,
hashing and chunking run on worker threads too, so the event loop only coordinates.

``async with MemoryEngine(settings) as engine`` opens the index and starts the first sync in the
background; entering the same engine again (e.g. once per SSE connection) only counts users.
"""

from __future__ import annotations

import datetime as dt
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

import anyio
import anyio.to_thread
from anyio.abc import TaskGroup

from . import db, indexer, store
from .appender import append_entry, format_entry
from .chunking import CHUNKER_VERSION
from .config import Settings
from .errors import ClosedError, InputError
from .fts import build_fts_query, query_terms
from .models import AppendReceipt, Excerpt, IndexStatus, SearchAnswer
from .ranking import rank_keyword
from .reader import read_excerpt
from .workspace import MemoryFile, Workspace

logger = logging.getLogger(__name__)

T = TypeVar("T")
ProgressCallback = Callable[[int, int], None]

BATCH_FILES = 64
CANDIDATE_MULTIPLIER = 4
MAX_CANDIDATES = 200
READ_CONNECTIONS = 4


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
        self.workspace = Workspace(settings.workspace_dir, settings.extra_paths)
        self.index_path = settings.index_file
        self._background_sync = background_sync
        self._identity = {
            "schema": store.SCHEMA_VERSION,
            "chunker": CHUNKER_VERSION,
            "chunk_tokens": settings.chunking.tokens,
            "chunk_overlap": settings.chunking.overlap,
            "fts_tokenizer": store.FTS_TOKENIZER,
        }
        self._users = 0
        self._writer: Any = None
        self._readers: list[Any] = []
        self._task_group: TaskGroup | None = None
        self._state: Literal["starting", "indexing", "ready", "error"] = "starting"
        self._progress = (0, 0)
        self._last_sync: float | None = None
        self._error: str | None = None
        self._identity_stale = False
        self._sync_wanted = False
        self._force_wanted = False
        self._last_report = SyncReport(0, 0, 0, 0.0)

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
        self._writer = await anyio.to_thread.run_sync(store.open_index, self.index_path)
        stored = await self._write(store.read_meta, "identity")
        self._last_sync = await self._write(store.read_meta, "last_sync")
        if self._last_sync is not None and stored == self._identity:
            self._state = "ready"  # complete as of the last sync; the first sync below catches up
        self._identity_stale = stored != self._identity
        if self._identity_stale and stored is not None:
            logger.info("index settings changed (%s -> %s); every file will be re-indexed", stored, self._identity)
        self._task_group = anyio.create_task_group()
        await self._task_group.__aenter__()
        if self._background_sync:
            self._task_group.start_soon(self._sync_in_background)
        logger.info("memdex: workspace %s, index %s", self.workspace.root, self.index_path)

    async def _close(self) -> None:
        if self._task_group is not None:
            self._task_group.cancel_scope.cancel()
            await self._task_group.__aexit__(None, None, None)
            self._task_group = None
        for conn in self._readers:
            conn.close()
        self._readers.clear()
        if self._writer is not None:
            self._writer.close()
            self._writer = None

    def _require_open(self) -> None:
        if self._writer is None:
            raise ClosedError("the memory engine is not running; use it inside 'async with MemoryEngine(...)'")

    # Thread plumbing ----------------------------------------------------------------------------

    async def _write(self, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn(writer_connection, *args)`` on the one writer."""
        self._require_open()
        return await anyio.to_thread.run_sync(lambda: fn(self._writer, *args), limiter=self._write_limiter)

    async def _read(self, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn(read_connection, *args)`` with a pooled read-only connection."""
        self._require_open()

        def run() -> T:
            conn = self._readers.pop() if self._readers else db.connect(self.index_path, readonly=True)
            try:
                result = fn(conn, *args)
            except BaseException:
                conn.close()
                raise
            self._readers.append(conn)
            return result

        return await anyio.to_thread.run_sync(run, limiter=self._read_limiter)

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
            self._sync_wanted = False
            force, self._force_wanted = self._force_wanted, False
            self._last_report = await self._run_sync(force, progress)
            return self._last_report

    async def _run_sync(self, force: bool, progress: ProgressCallback | None) -> SyncReport:
        started = time.perf_counter()
        self._state, self._error = "indexing", None
        try:
            files = await anyio.to_thread.run_sync(self.workspace.discover)
            known = await self._read(store.file_states)
            force = force or self._identity_stale
            self._progress = (0, len(files))
            if progress:
                progress(0, len(files))
            changed = 0
            stale: list[str] = []
            for start in range(0, len(files), BATCH_FILES):
                batch = files[start : start + BATCH_FILES]
                changes, vanished = await anyio.to_thread.run_sync(
                    lambda: indexer.prepare(
                        batch, known, tokens=self.settings.chunking.tokens,
                        overlap=self.settings.chunking.overlap, force=force,
                    )
                )
                if changes or vanished:
                    stale += await self._write(indexer.write, changes, vanished)
                    changed += sum(1 for c in changes if c.chunks is not None)
                self._progress = (start + len(batch), len(files))
                if progress:
                    progress(*self._progress)
            removed = sorted(known.keys() - {f.rel for f in files})
            if removed:
                await self._write(indexer.write, [], removed)
            self._last_sync = time.time()
            await self._write(self._record_sync, self._last_sync)
        except Exception as exc:
            self._state, self._error = "error", f"{type(exc).__name__}: {exc}"
            raise
        self._state = "ready"
        if stale:
            logger.info("%d file(s) changed while indexing; syncing again", len(stale))
            self.request_sync()
        report = SyncReport(len(files), changed, len(removed), time.perf_counter() - started)
        logger.info(
            "sync: %d files, %d re-indexed, %d removed in %.2fs", report.files, changed, len(removed), report.seconds
        )
        return report

    def _record_sync(self, conn: Any, finished: float) -> None:
        with store.transaction(conn):
            store.write_meta(conn, "last_sync", finished)
            if self._identity_stale:
                store.write_meta(conn, "identity", self._identity)
        self._identity_stale = False

    async def sync_files(self, files: Sequence[MemoryFile]) -> None:
        """Re-index just these files now (used after memdex itself writes one)."""
        changes, vanished = await anyio.to_thread.run_sync(
            lambda: indexer.prepare(
                files, {}, tokens=self.settings.chunking.tokens, overlap=self.settings.chunking.overlap, force=True
            )
        )
        if await self._write(indexer.write, changes, vanished):
            self.request_sync()

    # Queries ------------------------------------------------------------------------------------

    async def status(self) -> IndexStatus:
        files, chunks = await self._read(store.counts)
        done, total = self._progress if self._state == "indexing" else (0, 0)
        last = None
        if self._last_sync is not None:
            last = dt.datetime.fromtimestamp(self._last_sync, dt.timezone.utc).isoformat(timespec="seconds")
        return IndexStatus(
            state=self._state, files=files, chunks=chunks, files_done=done, files_total=total,
            last_sync=last, error=self._error,
        )

    async def search(
        self, query: str, max_results: int | None = None, min_score: float | None = None
    ) -> SearchAnswer:
        """Rank memory chunks for ``query``."""
        text = query.strip() if isinstance(query, str) else ""
        if not text:
            raise InputError("query is empty; pass the words to look for, e.g. 'database migration decision'")
        limit = self.settings.query.max_results if max_results is None else max_results
        if not 1 <= limit <= 50:
            raise InputError(f"maxResults must be between 1 and 50 (got {limit})")
        if min_score is not None and not 0.0 <= min_score <= 1.0:
            raise InputError(f"minScore must be between 0 and 1 (got {min_score})")
        status = await self.status()
        fts_query = build_fts_query(text)
        if fts_query is None:
            return SearchAnswer(
                results=[], mode="keyword", index_status=status,
                warning="the query has no words or numbers to search for; rephrase it with words",
            )
        candidates = min(MAX_CANDIDATES, limit * CANDIDATE_MULTIPLIER)
        rows = await self._read(store.keyword_search, fts_query, candidates)
        hits = rank_keyword(rows, query_terms(text), limit, self.settings.query, self.today())
        warning = None
        if status.state in ("starting", "indexing"):
            warning = (
                f"the index is still being built ({status.files_done}/{status.files_total} files); "
                "results may be incomplete, search again shortly"
            )
        return SearchAnswer(results=hits, mode="keyword", warning=warning, index_status=status)

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
            await self.sync_files([file])
        return receipt
