"""What changed in the index, told to listeners without ever making a writer wait for them.

Every sync publishes the answer paths it changed. Publishing only adds them to a pending set
(bounded by the number of memory files, as repeated paths coalesce) and wakes a dispatcher task,
which hands each batch to every listener with a time limit: a stuck listener (say, a client that
stopped reading) delays only the next notification, never an append or a sync.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable

import anyio

logger = logging.getLogger(__name__)

ChangeListener = Callable[[list[str]], Awaitable[None]]

LISTENER_TIMEOUT = 5.0  # seconds one listener may take for one batch


class ChangeFeed:
    """Changed answer paths, coalesced and delivered by one background task."""

    def __init__(self) -> None:
        self._listeners: list[ChangeListener] = []
        self._pending: set[str] = set()
        self._wake = anyio.Event()

    def add_listener(self, listener: ChangeListener) -> None:
        self._listeners.append(listener)

    def publish(self, paths: Iterable[str]) -> None:
        """Queue these paths for the listeners (returns at once)."""
        before = len(self._pending)
        self._pending.update(paths)
        if len(self._pending) > before:
            self._wake.set()

    async def run(self) -> None:
        """Deliver batches until cancelled."""
        while True:
            await self._wake.wait()
            self._wake = anyio.Event()
            paths, self._pending = sorted(self._pending), set()
            for listener in list(self._listeners):
                with anyio.move_on_after(LISTENER_TIMEOUT) as scope:
                    try:
                        await listener(paths)
                    except Exception:
                        logger.exception("a change listener failed")
                if scope.cancelled_caught:
                    logger.warning("a change listener took over %.0fs; moving on", LISTENER_TIMEOUT)
