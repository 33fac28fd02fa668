"""The change listener of one database in this process: one LISTEN connection that tells every memory the
process follows there what other processes change (:meth:`~.owner.PostgresIndex.follow`)."""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections.abc import Callable
from typing import Protocol

import anyio
import psycopg

from . import notify
from .outage import PROBE_EVERY, unreachable

logger = logging.getLogger(__name__)


class Follower(Protocol):
    """A memory's owner, as the listener sees it."""

    def heard(self, note: psycopg.Notify, changed: Callable[[list[str] | None], None]) -> None:
        """Pass on ``note`` if it tells of another session's change to this memory."""

    def lost(self, exc: psycopg.Error) -> None:
        """The listener lost the database (``exc``)."""


class SharedListener:
    """The change listener of one database in this process (one per event loop), shared by every
    memory the process follows there: one LISTEN connection instead of one per memory. The first
    follower to find no one listening listens for all; when it stops, a waiting follower takes over."""

    _all: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, SharedListener]] = weakref.WeakKeyDictionary()

    def __init__(self, url: str, timeout: int, where: str) -> None:
        self.url = url
        self.timeout = timeout
        self.where = where
        self.followers: dict[Follower, Callable[[list[str] | None], None]] = {}
        self.listening = False
        self.idle = anyio.Event()

    @classmethod
    def of(cls, url: str, timeout: int, where: str) -> SharedListener:
        per_loop = cls._all.setdefault(asyncio.get_running_loop(), {})
        if url not in per_loop:
            per_loop[url] = cls(url, timeout, where)
        return per_loop[url]

    async def follow(self, index: Follower, changed: Callable[[list[str] | None], None]) -> None:
        self.followers[index] = changed
        try:
            while True:
                if self.listening:
                    await self.idle.wait()
                    continue
                self.listening = True
                try:
                    await self._listen()
                finally:
                    self.listening = False
                    self.idle.set()
                    self.idle = anyio.Event()
        finally:
            del self.followers[index]

    async def _listen(self) -> None:
        """Listen. After a lost session connect again at once, then every PROBE_EVERY while that fails: an
        unreachable database is each follower's outage (logged there); any other failure is logged here,
        once until listening works again."""
        logged = retry_now = False
        while True:
            try:
                async with await psycopg.AsyncConnection.connect(
                    self.url, autocommit=True, connect_timeout=self.timeout
                ) as listener:
                    await listener.execute(f"LISTEN {notify.CHANGES_CHANNEL}")
                    logged, retry_now = False, True
                    async for note in listener.notifies():
                        for index, changed in list(self.followers.items()):
                            index.heard(note, changed)
            except psycopg.Error as exc:
                if retry_now:  # only this session may have been lost (pg_terminate_backend): connecting tells
                    retry_now = False
                    continue
                for index in list(self.followers):
                    index.lost(exc)
                if not (logged or unreachable(exc)):
                    logger.warning("listening for changes in the %s failed (%s); trying again every %.0f s",
                                   self.where, str(exc).strip().splitlines()[0], PROBE_EVERY)  # fmt: skip
                    logged = True
            await anyio.sleep(PROBE_EVERY)
