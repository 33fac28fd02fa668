"""One task holding off every other writer of an index in this process (a rebuild's catch-up and
install), while that task itself goes on writing. Owners add the cross-process half (a file lock, an
advisory lock)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

import anyio

POLL = 0.005  # seconds between looks (a pause or a write lasts milliseconds)


class WritePause:
    """Writers enter :meth:`writing`; :meth:`paused` waits for them to leave and keeps new ones out."""

    def __init__(self) -> None:
        self._pauser: int | None = None  # the task that holds the others off
        self._writers = 0

    @property
    def writers(self) -> int:
        """Writes in progress (not counting the pausing task's)."""
        return self._writers

    @contextlib.asynccontextmanager
    async def writing(self) -> AsyncIterator[bool]:
        """Around one write; yields True for the pausing task's own writes (which pass at once)."""
        if self._pauser is not None and self._pauser == anyio.get_current_task().id:
            yield True
            return
        while self._pauser is not None:
            await anyio.sleep(POLL)
        self._writers += 1
        try:
            yield False
        finally:
            self._writers -= 1

    @contextlib.asynccontextmanager
    async def paused(self) -> AsyncIterator[None]:
        """Hold every other task's writes off; writes already started finish first."""
        me = anyio.get_current_task().id
        while self._pauser is not None:
            await anyio.sleep(POLL)
        self._pauser = me
        try:
            while self._writers:
                await anyio.sleep(POLL)
            yield
        finally:
            self._pauser = None
