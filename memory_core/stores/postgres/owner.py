"""The owner of a memory's index in a PostgreSQL database (:class:`~.backend.IndexOwner`), in this process.

Every call runs on a worker thread with psycopg's synchronous API. Writes go through one connection in
this process (one writer behind a one-slot limiter); across processes and hosts, each write transaction
takes the memory's advisory write lock, so writes to one memory happen one at a time wherever they come
from. Reads borrow pooled connections and run in a read-only REPEATABLE READ snapshot, so a search
sees one state of the index and never waits for a writer.

A rebuild fills a new index of the memory (a *shadow*) and switches the memory's live pointer to it in
one transaction; readers still in the old snapshot keep answering from the old index, which is then
deleted. There is no file to damage: ``damaged`` stays False, and :meth:`repair` starts an empty index.

While the database is unreachable, calls fail within seconds and then at once (:mod:`.outage`); when it
answers again, the connections are renewed and :meth:`follow` tells the engine, which indexes the files
saved meanwhile.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any, TypeVar

import anyio
import anyio.to_thread
import psycopg
from psycopg.conninfo import conninfo_to_dict
from psycopg_pool import ConnectionPool, PoolTimeout

from ...errors import IndexBusy, MemdexError, StoreError
from ..base import StoreOps
from ..filters import SearchFilter
from ..owner_base import OwnerBase
from ..records import ChunkRow, Written
from . import notify, schema
from . import ops as pg_store
from .connection import PgConn, follow_live, live_index, lock_name, transaction
from .listener import SharedListener
from .outage import PROBE_EVERY, Outage, unreachable

logger = logging.getLogger(__name__)

T = TypeVar("T")

LOCK_POLL = 0.25  # seconds between tries of another process's rebuild lock
READ_WORK_MEM = "16MB"  # per sort or hash of a pooled read; keyword searches at 100k chunks: -8 % p50
_TRY_LOCK = "SELECT pg_try_advisory_lock(hashtextextended(%s, 0))"
_UNLOCK = "SELECT pg_advisory_unlock(hashtextextended(%s, 0))"


def describe(url: str) -> str:
    """The database ``url`` names, for messages: host, port and name, never the password."""
    try:
        parts = conninfo_to_dict(url)
    except psycopg.ProgrammingError:
        return "the configured PostgreSQL database"
    host = parts.get("host") or "localhost"
    where = f"{host}:{parts['port']}" if parts.get("port") and not str(host).startswith("/") else str(host)
    return f"PostgreSQL database {parts.get('dbname') or parts.get('user') or ''!s} on {where}".replace("  ", " ")


def as_store_error(exc: psycopg.Error, where: str) -> StoreError:
    """A database error as the memdex error a caller acts on."""
    if isinstance(exc, psycopg.errors.LockNotAvailable | psycopg.errors.DeadlockDetected):
        return IndexBusy(f"the {where} is busy ({exc.sqlstate}); retry")
    if isinstance(exc, psycopg.errors.UndefinedFile | psycopg.errors.FeatureNotSupported) and "vector" in str(exc):
        return StoreError(f"the {where} lacks pgvector: install it and run CREATE EXTENSION vector as its owner")
    if isinstance(exc, psycopg.errors.InsufficientPrivilege):
        return StoreError(f"the {where} refused memdex ({str(exc).strip()}); grant it CREATE on the schema, "
                          "or have an owner run CREATE EXTENSION vector first")  # fmt: skip
    if isinstance(exc, psycopg.OperationalError):
        return StoreError(f"cannot reach the {where}: {str(exc).strip().splitlines()[0]}")
    return StoreError(f"the {where} failed: {str(exc).strip().splitlines()[0]}")


class PostgresIndex(OwnerBase):
    """Connections to one memory in a PostgreSQL database; its operations are :mod:`.pg_store`."""

    ops: StoreOps = pg_store
    _writer: PgConn | None

    def __init__(
        self, url: str, memory: str, *, pool_size: int = 4, exact_scan_rows: int = 20_000, ef_search: int = 100,
        connect_timeout: int = 5,
    ) -> None:  # fmt: skip
        super().__init__()
        self.url = url
        self.memory = memory
        self.damaged = False  # never set: a database is not a file to find corrupt
        self._where = describe(url)
        self._pool_size = pool_size
        self._exact_scan_rows = exact_scan_rows
        self._ef_search = ef_search
        self._timeout = connect_timeout  # seconds to connect, to wait for a pooled connection, between reconnects
        self._pool: ConnectionPool | None = None
        self._outage = Outage(self._where)
        self._writer_stale = False  # the database came back: the writer's session may be gone with the old one

    # Lifecycle ----------------------------------------------------------------------------------

    async def open(self) -> None:
        """Connect, bring the schema up to date and make sure the memory has a live index."""
        self._write_limiter = anyio.CapacityLimiter(1)
        self._read_limiter = anyio.CapacityLimiter(self._pool_size)

        def connect() -> PgConn:
            writer = PgConn(self._connect(), self.memory)
            # reconnect_timeout: the pool gives up a failing connection attempt after it, so its backoff
            # between attempts never grows past it however long the database is away.
            pool = ConnectionPool(
                self.url, min_size=1, max_size=self._pool_size, open=False, timeout=self._timeout,
                reconnect_timeout=self._timeout, kwargs={"connect_timeout": self._timeout}, configure=_read_only,
                name=f"memdex-{self.memory}",
            )  # fmt: skip
            try:
                schema.prepare(writer)
                follow_live(writer)
                pool.open(wait=True, timeout=self._timeout)
            except BaseException:  # a pool the database refuses (a role's connection limit) included
                pool.close()
                writer.raw.close()
                raise
            self._pool = pool
            return writer

        self._writer = await self._mapped(connect)

    def _connect(self) -> Any:
        """A writing connection. Its commits do not wait for the WAL to reach the disk: the index is
        derived data, and a database crash that loses the last half second of them loses nothing the
        next sync does not redo from the files (the database itself stays consistent)."""
        raw = psycopg.connect(self.url, autocommit=True, connect_timeout=self._timeout)
        try:
            raw.execute("SET synchronous_commit = off")
        except BaseException:
            raw.close()
            raise
        return raw

    def _reconnect(self, writer: PgConn) -> None:
        """Give ``writer`` a new connection in place of a broken one, freeing the old one first: psycopg's
        ``close()`` passes over a broken connection, whose libpq half would wait for the garbage collector."""
        writer.raw.pgconn.finish()
        writer.raw = self._connect()

    async def close(self) -> None:
        pool, writer, self._pool, self._writer = self._pool, self._writer, None, None
        if pool is not None:
            await anyio.to_thread.run_sync(pool.close)
        if writer is not None:
            writer.raw.close()

    @property
    def location(self) -> str:
        return f"memory {self.memory!r} in the {self._where}"

    @property
    def vectors_loaded(self) -> bool:
        return True  # the database scans its own vectors: there is nothing to load

    def _store_error(self, exc: Exception) -> MemdexError | None:
        """Database errors, a pool that stayed busy and a memory dropped from the database as memdex errors."""
        if isinstance(exc, psycopg.Error):
            return as_store_error(exc, self._where)
        if isinstance(exc, PoolTimeout):
            return StoreError(f"cannot reach the {self._where}: no connection within {self._timeout} s; retry shortly")
        if isinstance(exc, LookupError):
            return StoreError(str(exc))
        return None

    async def _mapped(self, fn: Callable[[], T], limiter: anyio.CapacityLimiter | None = None) -> T:
        """``OwnerBase._mapped``, failing at once while the database is known down (:class:`.Outage`): one
        call a second first tries a new connection, and goes on if the database answers again."""
        if self._outage.down:
            if not (self._outage.due() and await self._answers()):
                raise self._outage.error()
            await self._back()
        try:
            return await super()._mapped(fn, limiter)
        except MemdexError as error:
            cause = error.__cause__  # a lost session may be this one's alone (pg_terminate_backend): ask the database
            if unreachable(cause) and (isinstance(cause, PoolTimeout) or not await self._answers()):
                self._outage.lost(cause)
            raise

    async def _back(self) -> None:
        """The database answers again: renew the connections its restart may have dropped."""
        if self._outage.back():
            self._writer_stale = True
            pool = self._pool
            if pool is not None:
                await anyio.to_thread.run_sync(pool.check)  # replaces the broken ones, in the background

    # Reads and writes ---------------------------------------------------------------------------

    def _ready_writer(self) -> PgConn:
        """The writer, connected again if the server restarted or the network dropped it, on the live
        index (another host may have switched it; transactions look again)."""
        writer = self._writer
        assert writer is not None
        if writer.raw.closed or self._writer_stale:
            self._writer_stale = False
            self._reconnect(writer)
        follow_live(writer)
        return writer

    async def write_indexed(self, fn: Callable[..., Written], *args: Any, conn: Any = None) -> Written:
        """``write`` for the calls that change chunks and vectors (the cached counts are dropped)."""
        written = await self.write(fn, *args, conn=conn)
        if conn is None or conn is self._writer:
            self._counts.drop()
        return written

    async def read(self, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn(connection, *args)`` in one read-only snapshot of the memory's live index."""
        self.require_open()
        pool = self._pool
        assert pool is not None

        def run() -> T:
            with pool.connection() as raw, raw.transaction():
                conn = PgConn(raw, self.memory)
                follow_live(conn)
                return fn(conn, *args)

        return await self._mapped(run, self._read_limiter)

    # Vectors ------------------------------------------------------------------------------------

    async def nearest(
        self, vector: Sequence[float], k: int, where: SearchFilter | None = None
    ) -> tuple[list[ChunkRow], bool]:
        """The ``k`` chunks nearest to ``vector`` among those ``where`` allows: an exact scan for a
        small memory or a filter, HNSW otherwise. True: there is no copy to load."""
        exact = (await self.counts())[1] < self._exact_scan_rows
        rows = await self.read(lambda conn: pg_store.vector_search(conn, vector, k, where, exact=exact, ef_search=self._ef_search))
        return rows, True

    async def vectors_in_ram(self) -> bool:
        return False

    async def load_vectors(self) -> None:
        """Nothing to load: PostgreSQL searches its own vectors."""

    async def follow(self, changed: Callable[[list[str] | None], None]) -> None:
        """Until cancelled, pass on what other processes change in this memory, as PostgreSQL's
        LISTEN/NOTIFY tells it, through the listener this process shares for the database
        (:class:`.listener.SharedListener`: waiting holds no thread, and one connection serves every memory).

        This process's own writes are left out (its syncer tells of them). While the database is
        unreachable, it is tried every second; when it answers again, ``changed(None)``: anything may have
        changed meanwhile, and files saved here during the outage are still to be indexed.
        """
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(self._await_returns, changed)
            await SharedListener.of(self.url, self._timeout, self._where).follow(self, changed)

    async def _await_returns(self, changed: Callable[[list[str] | None], None]) -> None:
        """After each outage, once the database answers again (a probe each PROBE_EVERY), ``changed(None)``."""
        while True:
            await self._outage.wait_down()
            while self._outage.down:
                await anyio.sleep(PROBE_EVERY)
                if await self._answers():
                    await self._back()
            changed(None)

    async def _answers(self) -> bool:
        """True when a new connection to the database can be made."""
        try:
            await anyio.to_thread.run_sync(self._probe, abandon_on_cancel=True)
        except psycopg.Error:
            return False
        return True

    def _probe(self) -> None:
        psycopg.connect(self.url, connect_timeout=self._timeout).close()

    def lost(self, exc: psycopg.Error) -> None:
        """The change listener lost the database (``exc``): calls fail at once until it answers again."""
        if unreachable(exc):
            self._outage.lost(exc)

    def heard(self, note: psycopg.Notify, changed: Callable[[list[str] | None], None]) -> None:
        """Pass on ``note`` if it tells of another session's change to this memory (a closed writer, which
        a failed reconnection leaves until the next write, has no session to send any)."""
        ours, paths = notify.parse_announcement(note.payload, self.memory)
        writer = self._writer
        if ours and writer is not None and (writer.raw.closed or note.pid != writer.raw.info.backend_pid):
            self._counts.drop()
            changed(paths)

    # Rebuilds -----------------------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def rebuild_lock(self) -> AsyncIterator[None]:
        """Hold the memory's rebuild lock (one rebuild at a time, across every host) on a connection of
        its own; while another process rebuilds, wait without holding a thread."""
        name = lock_name(self.memory, "rebuild")
        raw = await self._mapped(self._connect)
        try:
            while not await self._mapped(lambda: bool(raw.execute(_TRY_LOCK, (name,)).fetchone()[0])):
                await anyio.sleep(LOCK_POLL)
            yield
        finally:
            with contextlib.suppress(psycopg.Error):
                raw.close()  # ends the session, and its lock with it

    @contextlib.asynccontextmanager
    async def shadow(self) -> AsyncIterator[Any]:
        """A new empty index of the memory, on a connection of its own; deleted on exit unless installed.

        The caller holds :meth:`rebuild_lock`, fills it through ``write(..., conn=shadow)`` and calls
        :meth:`install`. The embedding cache is the memory's, so the shadow shares it.
        """

        def create() -> PgConn:
            conn = PgConn(self._connect(), self.memory, fixed=True)
            try:
                with conn.raw.transaction():
                    conn.index_id = schema.new_index(conn)
            except BaseException:
                conn.raw.close()
                raise
            return conn

        shadow = await self._mapped(create)
        try:
            yield shadow
        finally:
            with anyio.CancelScope(shield=True):
                try:
                    await self._mapped(lambda: self._drop_unless_live(shadow))
                finally:
                    shadow.raw.close()

    @staticmethod
    def _drop_unless_live(shadow: PgConn) -> None:
        with shadow.raw.transaction():
            if live_index(shadow) != shadow.index_id:
                schema.drop_index(shadow, shadow.index_id)

    @contextlib.asynccontextmanager
    async def writes_paused(self) -> AsyncIterator[None]:
        """Hold off every other writer of the memory, in this process and on every host: the rebuild's
        last catch-up and its install see no other change in between. Readers are never held off."""
        self.require_open()
        writer = self._writer
        assert writer is not None
        name = lock_name(self.memory, "write")
        async with self._pause.paused():
            # A session lock on the writer's connection: other sessions' write transactions wait for it,
            # while this connection's own transactions (the calling task's writes) still pass.
            await self._mapped(lambda: writer.execute("SELECT pg_advisory_lock(hashtextextended(%s, 0))", (name,)), self._write_limiter)
            try:
                yield
            finally:
                with anyio.CancelScope(shield=True):
                    await self._mapped(lambda: writer.execute(_UNLOCK, (name,)), self._write_limiter)

    async def install(self, shadow: Any) -> None:
        """Make a complete shadow the memory's live index in one transaction, then delete the old one."""

        await self.write(self._go_live, shadow.index_id)

    def _go_live(self, live: PgConn, index_id: int | None) -> None:
        """Switch the memory to ``index_id`` (None: a new empty index) in one transaction, then delete the
        index it replaced."""
        with transaction(live):
            if index_id is None:
                index_id = schema.new_index(live)
            old = schema.switch_to(live, index_id)
        if old != index_id:
            with live.raw.transaction():
                schema.drop_index(live, old)
        follow_live(live)
        self._counts.drop()

    async def check_integrity(self) -> bool:
        return True  # PostgreSQL keeps its own pages sound; there is no file for memdex to check

    async def repair(self) -> None:
        """Start the memory afresh: a new empty live index (a full sync then fills it from the Markdown)."""

        logger.warning("%s is being rebuilt from the Markdown", self.location)
        await self.write(self._go_live, None)
        self.damaged = False


def _read_only(raw: Any) -> None:
    """Pooled connections read in REPEATABLE READ snapshots and cannot write. A keyword search groups
    every posting of its terms by chunk (tens of thousands of rows for common words at 100k chunks):
    with PostgreSQL's default 4 MB of work memory that sort spills to disk."""
    raw.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
    raw.read_only = True
    raw.execute(f"SET work_mem = '{READ_WORK_MEM}'")
    raw.commit()
