"""An index's (files, chunks) counts, reused for a moment: counting 100k chunks takes milliseconds, too
long for every search, and status and search ask for them all the time."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable

COUNTS_TTL = 2.0  # seconds the counts are reused; this process's own writes drop them at once


class CountsCache:
    """Counts reused for ``ttl`` seconds; another process's writes show within that time."""

    def __init__(self, ttl: float = COUNTS_TTL) -> None:
        self._ttl = ttl
        self._cached: tuple[float, int, int] | None = None  # (monotonic time, files, chunks)

    def drop(self) -> None:
        """Forget the counts (after a write by this process)."""
        self._cached = None

    async def get(self, count: Callable[[], Awaitable[tuple[int, int]]]) -> tuple[int, int]:
        cached = self._cached
        if cached is not None and time.monotonic() - cached[0] < self._ttl:
            return cached[1], cached[2]
        taken = time.monotonic()
        files, chunks = await count()
        self._cached = (taken, files, chunks)
        return files, chunks
