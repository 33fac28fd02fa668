"""What every index owner (:class:`~.base.IndexOwner`) does alike, whatever its database: run an operation on
a worker thread behind a limiter with the database's errors turned into memdex errors, refuse calls when
closed, cache the counts, and send live writes one at a time through the in-process write pause."""

from __future__ import annotations

import contextlib
from abc import ABC, abstractmethod
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar

import anyio
import anyio.to_thread

from ..errors import ClosedError, MemdexError
from .base import StoreOps
from .counts_cache import CountsCache
from .write_pause import WritePause

T = TypeVar("T")


class OwnerBase(ABC):
    """The shared half of an owner; a store adds its connections (``_writer``, :meth:`read`, :meth:`_live_write`),
    the limiters its :meth:`open` makes, and :meth:`_store_error`."""

    ops: StoreOps
    _writer: Any  # the one writing connection; None while closed
    _write_limiter: anyio.CapacityLimiter  # one slot: the one writer
    _read_limiter: anyio.CapacityLimiter

    def __init__(self) -> None:
        self._writer = None
        self._counts = CountsCache()
        self._pause = WritePause()  # one task may hold every other writer off (writes_paused)

    def require_open(self) -> None:
        """ClosedError unless the index is open (the one check every caller of the engine goes through)."""
        if self._writer is None:
            raise ClosedError("the memory engine is not running; use it inside 'async with MemoryEngine(...)'")

    @abstractmethod
    def _store_error(self, exc: Exception) -> MemdexError | None:
        """The memdex error ``exc`` (raised by the database or the OS) stands for; None for a bug."""

    async def _mapped(self, fn: Callable[[], T], limiter: anyio.CapacityLimiter | None = None) -> T:
        """Run ``fn`` on a worker thread; database errors come back as memdex errors (:meth:`_store_error`)."""
        try:
            return await anyio.to_thread.run_sync(fn, limiter=limiter)
        except Exception as exc:
            error = self._store_error(exc)
            if error is None:
                raise
            raise error from exc

    @abstractmethod
    async def read(self, fn: Callable[..., T], *args: Any) -> T: ...

    def alongside(self, fn: Callable[[Any], T]) -> Future[T] | None:
        """None: a store lends no second reader unless it says so (:meth:`~.base.IndexOwner.alongside`)."""
        return None

    def _live_write(self) -> contextlib.AbstractAsyncContextManager[Any]:
        """Held around each write to the live index: the in-process pause; a store may add its own lock."""
        return self._pause.writing()

    def _ready_writer(self) -> Any:
        """The live writer, made ready for one call (on its worker thread)."""
        return self._writer

    async def write(self, fn: Callable[..., T], *args: Any, conn: Any = None) -> T:
        """Run ``fn(connection, *args)`` on the one writer (or on ``conn``, a shadow's writer)."""
        self.require_open()
        if conn is not None and conn is not self._writer:
            return await self._mapped(lambda: fn(conn, *args), self._write_limiter)
        async with self._live_write():
            return await self._mapped(lambda: fn(self._ready_writer(), *args), self._write_limiter)

    async def counts(self) -> tuple[int, int]:
        """(files, chunks), cached for a moment (:class:`~.counts_cache.CountsCache`)."""
        return await self._counts.get(lambda: self.read(self.ops.counts))
