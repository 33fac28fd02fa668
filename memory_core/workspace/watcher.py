"""Keep the index in step with the files while the engine runs.

Two watchers run side by side: one recursive over ``memory/`` and the extra folders, one flat over
the workspace root (for ``MEMORY.md``, and to see ``memory/`` appear or vanish — the watchers are
then re-armed). Nothing else in the workspace is watched, so a large repository around the notes
costs no watch handles. Each burst of events becomes one targeted sync of just the touched files.
A watcher that fails is restarted with backoff, and a periodic stat-only sync catches anything a
watcher missed.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Protocol

import anyio
from watchfiles import Change, awatch

from ..config_sections import WatchSettings
from ..errors import MemdexError
from .files import DAILY_DIR, Workspace
from .spelling import Listings

logger = logging.getLogger(__name__)

STEP_MS = 100  # a burst ends after this long without events (capped by watch.debounce_ms)
RUST_TIMEOUT_MS = 500  # the watch thread wakes this often, so stopping never waits longer
MAX_BACKOFF = 60.0


class SyncTarget(Protocol):
    """What the watcher needs of the index's owner."""

    workspace: Workspace

    async def sync_paths(self, paths: Iterable[str]) -> None: ...

    def request_sync(self) -> None: ...

    def mark_dirty(self) -> None: ...


class Watcher:
    """File watching for one workspace; ``run()`` until cancelled."""

    def __init__(self, engine: SyncTarget, settings: WatchSettings) -> None:
        self.engine = engine
        self.settings = settings
        self.restarts = 0
        self.events = 0
        self._stops: set[anyio.Event] = set()
        self._closing = False

    def close(self) -> None:
        """End watching for good; call before cancelling ``run()``, which would otherwise wait for the threads."""
        self._closing = True
        self._stop_threads()

    def _stop_threads(self) -> None:
        for event in self._stops:
            event.set()

    async def run(self) -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._supervise)
            if self.settings.reconcile_minutes > 0:
                tg.start_soon(self._reconcile)

    async def _supervise(self) -> None:
        """Run the watchers forever, restarting them with backoff when they fail."""
        delay = 1.0
        while True:
            started = time.monotonic()
            try:
                await self._watch_until_roots_change()
                self.engine.request_sync()  # events in flight when the roots changed are reconciled here
                continue  # memory/ appeared or vanished: re-arm at once
            except Exception:
                logger.exception("file watcher failed; restarting in %.0fs (searches meanwhile use the index as is)", delay)
            self.restarts += 1
            self.engine.mark_dirty()
            await anyio.sleep(delay)
            delay = 1.0 if time.monotonic() - started > MAX_BACKOFF else min(MAX_BACKOFF, delay * 2)
            self.engine.request_sync()  # catch up on whatever happened while nothing watched

    async def _watch_until_roots_change(self) -> None:
        trees, flat = await anyio.to_thread.run_sync(self.engine.workspace.watch_roots)
        roots_changed = anyio.Event()
        async with anyio.create_task_group() as tg:
            if trees:
                tg.start_soon(self._watch, trees, True, roots_changed)
            tg.start_soon(self._watch, flat, False, roots_changed)
            await roots_changed.wait()
            self._stop_threads()

    async def _watch(self, paths: list[Path], recursive: bool, roots_changed: anyio.Event) -> None:
        stop = anyio.Event()
        self._stops.add(stop)
        try:
            async for changes in awatch(
                *paths,
                watch_filter=None,
                recursive=recursive,
                debounce=self.settings.debounce_ms,
                step=STEP_MS,
                stop_event=stop,
                rust_timeout=RUST_TIMEOUT_MS,
                ignore_permission_denied=True,
            ):
                self.events += len(changes)
                touched, memory_dir_changed = await anyio.to_thread.run_sync(
                    _classify, self.engine.workspace, changes, recursive
                )
                if memory_dir_changed:
                    roots_changed.set()
                if touched:
                    await self._sync(touched)
        finally:
            stop.set()
            self._stops.discard(stop)
        if not (roots_changed.is_set() or self._closing):
            raise RuntimeError(f"watching {', '.join(map(str, paths))} stopped unexpectedly")

    async def _sync(self, paths: set[str]) -> None:
        try:
            await self.engine.sync_paths(paths)
        except Exception as exc:
            known = isinstance(exc, MemdexError)  # the store unreachable, say: one line; a bug has its traceback
            logger.log(logging.WARNING if known else logging.ERROR, "re-indexing %d changed file(s) failed: %s; a full "
                       "sync will retry", len(paths), exc, exc_info=not known)  # fmt: skip
            self.engine.mark_dirty()
            self.engine.request_sync()

    async def _reconcile(self) -> None:
        """A cheap full sync now and then (mtime/size checks only), for anything the watchers missed."""
        while True:
            await anyio.sleep(self.settings.reconcile_minutes * 60)
            self.engine.request_sync()


def _classify(workspace: Workspace, changes: Iterable[tuple[Change, str]], recursive: bool) -> tuple[set[str], bool]:
    """(the answer paths a burst of events touched, whether ``memory/`` appeared or vanished).

    It reads the disk (each path's spelling, a new folder's files), so the watcher runs it on a
    worker thread, once per burst.
    """
    memory_dir = workspace.root / DAILY_DIR
    listings = Listings()  # one listing of a big folder for the whole burst, not one per file
    touched: set[str] = set()
    memory_dir_changed = False
    for change, raw in changes:
        path = Path(raw)
        if path == memory_dir and change in (Change.added, Change.deleted):
            memory_dir_changed = True
        if (rel := workspace.classify(path, listings)) is not None:
            touched.add(rel)
        elif change == Change.added and recursive:
            # Files written into a new folder before its watch was set up raise no event.
            touched.update(workspace.files_in(path))
    return touched, memory_dir_changed
