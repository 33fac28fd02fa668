"""Targeted passes shared by the callers that ask at once: eight writers appending to one log wait for two
passes, not eight, and never race each other for the writer."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import anyio


@dataclass
class _Pass:
    """One pass and the callers that share it: every path they asked for, and how it ended."""

    paths: set[str] = field(default_factory=set)
    until_current: bool = False
    done: bool = False
    error: Exception | None = None


class SharedPasses:
    """Runs ``run(paths, until_current)`` for callers; one that arrives while a pass runs joins the next pass,
    which begins after it arrived, so the pass that answers it has seen the files as they were when it asked."""

    def __init__(self, run: Callable[[list[str], bool], Awaitable[None]]) -> None:
        self._run = run
        self._next: _Pass | None = None  # the pass that callers arriving now join
        self._lock = anyio.Lock()

    async def request(self, paths: set[str], until_current: bool) -> None:
        """Return once a pass that began after this call has covered ``paths`` (its error is raised here)."""
        joined = self._next or _Pass()
        self._next = joined
        joined.paths |= paths
        joined.until_current |= until_current
        async with self._lock:
            if self._next is joined:  # nobody has started it: this caller runs it for all who joined
                self._next = None
                try:
                    await self._run(sorted(joined.paths), joined.until_current)
                except Exception as exc:
                    joined.error = exc
                    raise
                joined.done = True
            elif joined.error is not None:
                raise joined.error
            elif not joined.done:  # its runner was cancelled: run this call's own paths
                await self._run(sorted(paths), until_current)
