"""Knowing that the database is down: once a call finds it unreachable, calls fail at once with one line
instead of each waiting for a timeout (one a second first tries a new connection), and the owner's
probe (:meth:`~.owner.PostgresIndex.follow`) notices its return within a second. An outage logs one line when
it starts and one when it ends."""

from __future__ import annotations

import logging
import time
from typing import TypeGuard

import anyio
import psycopg
from psycopg_pool import PoolTimeout

from ...errors import StoreError

logger = logging.getLogger(__name__)

PROBE_EVERY = 1.0  # seconds between tries of a database known to be down
_LOST_SESSION = ("57P01", "57P02", "57P03")  # admin_shutdown, crash_shutdown, cannot_connect_now


def unreachable(exc: BaseException | None) -> TypeGuard[BaseException]:
    """True for an error that says the database cannot be reached, not one about the query."""
    if isinstance(exc, PoolTimeout):
        return True
    if isinstance(exc, psycopg.OperationalError):
        state = exc.sqlstate
        return state is None or state.startswith("08") or state in _LOST_SESSION
    return False


class Outage:
    """Whether the database is known to be unreachable from this process, and since when (event-loop side)."""

    def __init__(self, where: str) -> None:
        self.where = where
        self.since: float | None = None
        self._reason = ""
        self._next_try = 0.0
        self._news: anyio.Event | None = None

    @property
    def down(self) -> bool:
        return self.since is not None

    def due(self) -> bool:
        """While the database is known down: True once a PROBE_EVERY (the caller tries it), False otherwise."""
        now = time.monotonic()
        if now < self._next_try:
            return False
        self._next_try = now + PROBE_EVERY
        return True

    def error(self) -> StoreError:
        """What a call gets while the database is known down."""
        down_for = time.monotonic() - (self.since or time.monotonic())
        return StoreError(
            f"cannot reach the {self.where} (unreachable for {down_for:.0f} s: {self._reason}); "
            f"memdex tries it every {PROBE_EVERY:.0f} s, retry shortly"
        )

    def lost(self, exc: BaseException) -> None:
        """A call found the database unreachable (``exc``); the first such call of an outage logs it."""
        if self.since is None:
            self.since = time.monotonic()
            self._next_try = self.since + PROBE_EVERY
            self._reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            logger.warning("lost the %s (%s); calls fail at once until it answers again", self.where, self._reason)
            self._tell()

    def back(self) -> bool:
        """The database answered again; True when that ends an outage (logged)."""
        if self.since is None:
            return False
        logger.warning("the %s answers again after %.0f s", self.where, time.monotonic() - self.since)
        self.since = None
        self._tell()
        return True

    async def wait_down(self) -> None:
        """Until the database is known down."""
        while not self.down:
            if self._news is None:
                self._news = anyio.Event()
            await self._news.wait()

    def _tell(self) -> None:
        news, self._news = self._news, None
        if news is not None:
            news.set()
