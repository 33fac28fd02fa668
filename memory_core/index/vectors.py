"""Vectors in the background: embed the chunks that lack one, fall back when the provider fails, load the RAM copy.

A sync writes chunks with the vectors the cache already has, so keyword search has a change at once; this
worker then embeds whatever still lacks a vector, whenever asked, retrying with backoff while the provider
fails. A provider whose vectors differ from the index's needs a rebuild, which it asks of the syncer.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import anyio
from anyio.abc import TaskGroup

from ..config_sections import EmbeddingSettings
from ..embeddings.embedder import RETRY_FIRST, RETRY_MAX, Embedder
from ..errors import EmbeddingError, MemdexError
from ..stores.base import IndexOwner
from . import indexer

logger = logging.getLogger(__name__)

ProgressCallback = Callable[[int, int, str], None]  # (done, total, "files" or "chunks embedded")

BACKFILL_CHUNKS = 256  # chunks embedded (and stored, so a kill loses little) per step
BULK_CHUNKS = 10_000  # per step of a planned backfill or rebuild when OpenAI's Batch API may serve it


@dataclass
class BuiltWith:
    """How the live index was built, as its meta says: ``{"chunks": …, "vectors": …}``, and its last sync.

    The syncer records both after each sync and rebuild; the worker adds the vectors' identity when the
    first provider embeds an index that had none.
    """

    identity: dict[str, Any] | None = None
    last_sync: float | None = None

    @property
    def vectors(self) -> dict[str, Any] | None:
        """The embedding setup the index's vectors come from (None: keyword-only so far)."""
        return None if self.identity is None else self.identity.get("vectors")

    def serves(self, embedder: Embedder) -> bool:
        """True when searches can use vectors: a provider runs and the index was built with it."""
        running = embedder.identity()
        return running is not None and self.identity is not None and self.vectors == running


class VectorWorker:
    """Gives every chunk of an index a vector of the running provider, in the background."""

    def __init__(
        self,
        index: IndexOwner,
        embedder: Embedder,
        settings: EmbeddingSettings,
        built: BuiltWith,
        rebuild: Callable[[ProgressCallback | None], Awaitable[object]],
    ) -> None:
        self.index = index
        self.ops = index.ops
        self.embedder = embedder
        self.settings = settings
        self.built = built
        self._rebuild = rebuild
        self._write_vectors = functools.partial(indexer.write_vectors, index.ops)
        self._tg: TaskGroup | None = None
        self._wanted = anyio.Event()
        self._bulk_wanted = False
        self._lock = anyio.Lock()
        self._loading = False
        self._next_load = 0.0  # monotonic time before which no reload of the RAM copy starts

    def open(self, task_group: TaskGroup) -> None:
        """Run the embedding loop in ``task_group``."""
        self._tg = task_group
        task_group.start_soon(self._loop)

    def start_provider(self, *, embed: bool = True) -> None:
        """Start the embedding provider; once it runs, embed the chunks that lack vectors (unless not ``embed``)."""
        assert self._tg is not None
        self.embedder.start_soon(self._tg.start_soon, lambda: self.want(bulk=True) if embed else None)

    def want(self, *, bulk: bool = False) -> None:
        """Wake the loop that embeds chunks without vectors (``bulk``: a planned backfill, batch API allowed)."""
        self._bulk_wanted |= bulk
        self._wanted.set()

    async def _loop(self) -> None:
        """Embed what lacks a vector whenever asked; retry with backoff while the provider fails."""
        delay = RETRY_FIRST
        while True:
            await self._wanted.wait()
            self._wanted = anyio.Event()
            bulk, self._bulk_wanted = self._bulk_wanted, False
            try:
                await self.complete(None, bulk=bulk)
                delay = RETRY_FIRST
            except EmbeddingError as exc:
                logger.warning("%s; keyword search meanwhile, embedding again in %.0fs", exc, delay)
                if not await self.fall_back():
                    await anyio.sleep(delay)
                    delay = min(RETRY_MAX, delay * 2)
                    self.want(bulk=bulk)
            except MemdexError as exc:
                logger.warning("embedding the index failed: %s; a later sync retries", exc)

    async def fall_back(self) -> bool:
        """Move to the fallback provider if there is one (its vectors need a rebuild); True if moved."""
        assert self._tg is not None
        return await self.embedder.switch_to_fallback(self._tg.start_soon, lambda: self.want(bulk=True))

    async def complete(self, progress: ProgressCallback | None, *, bulk: bool) -> None:
        """Give every chunk a vector of the running provider: a backfill, or a rebuild for a new model."""
        provider = self.embedder.provider
        if provider is None:
            return
        async with self._lock:
            if self.built.identity is None:
                return  # no sync has run yet; it will ask again
            stored = self.built.vectors
            if stored is not None and stored != self.embedder.identity():
                if self.embedder.adopts(stored):
                    await self._rebuild(progress)
                else:
                    self.embedder.decline(stored)
                return
            await self.index.write(self.ops.ensure_vector_table, provider.dims)
            if stored is None:
                identity = {**self.built.identity, "vectors": self.embedder.identity()}
                await self.index.write(self.ops.write_meta, "identity", identity)
                self.built.identity = identity
            await self.backfill(None, progress, bulk=bulk)
        # Loaded before this provider made the vector table (a rebuild that ran while the model loaded), the RAM
        # copy is out of step with the index however its writes follow it: load it again.
        if not self.index.vectors_loaded or not await self.index.vectors_in_ram():
            self.load_soon()

    async def backfill(self, conn: Any, progress: ProgressCallback | None, *, bulk: bool) -> int:
        """Embed the chunks of ``conn`` (None: live) that have no vector yet, in id order; returns how many."""
        done, after, total = 0, 0, None
        page = BULK_CHUNKS if bulk and self.settings.openai.batch_api else BACKFILL_CHUNKS
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

    def load_soon(self) -> None:
        """Start loading the in-memory vectors, unless a load runs or one finished too recently."""
        if self._tg is not None:
            self._tg.start_soon(self._load)

    async def _load(self) -> None:
        if self._loading or time.monotonic() < self._next_load:
            return
        self._loading = True
        started = time.monotonic()
        try:
            await self.index.load_vectors()
        except Exception:
            logger.exception("loading the vectors into RAM failed; searches use sqlite-vec")
        finally:
            # Another process writing all the time would otherwise keep a core busy reloading.
            self._next_load = time.monotonic() + 4 * (time.monotonic() - started)
            self._loading = False
