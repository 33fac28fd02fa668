"""One task holding off every other writer of an index in this process (a rebuild's catch-up and
install), while that task itself goes on writing. Owners add the cross-process half (a file lock, an
advisory lock)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

import anyio


class WritePause:
    """Writers enter :meth:`writing`; :meth:`paused` waits for them to leave and keeps new ones out.

    Waiters sleep on events (no polling): the pause's end wakes the held writers and the next pauser,
    and the last writer to leave wakes the pauser waiting for it.
    """

    def __init__(self) -> None:
        self._pauser: int | None = None  # the task that holds the others off
        self._resumed: anyio.Event | None = None  # set when that pause ends (None: no pause)
        self._drained: anyio.Event | None = None  # set when the last write in progress ends
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
        while self._resumed is not None:
            await self._resumed.wait()
        self._writers += 1
        try:
            yield False
        finally:
            self._writers -= 1
            if self._writers == 0 and self._drained is not None:
                self._drained.set()

    @contextlib.asynccontextmanager
    async def paused(self) -> AsyncIterator[None]:
        """Hold every other task's writes off; writes already started finish first."""
        while self._resumed is not None:
            await self._resumed.wait()
        self._pauser, self._resumed = anyio.get_current_task().id, anyio.Event()
        try:
            if self._writers:
                self._drained = anyio.Event()
                await self._drained.wait()
            yield
        finally:
            resumed = self._resumed
            self._pauser = self._resumed = self._drained = None
            resumed.set()
