"""A real PostgreSQL 16 with pgvector for the tests, from the pgserver package: it runs in a temp folder,
with no Docker and no root, and one server serves the whole test session (a database per test).

The server is stopped with ``pg_ctl -m fast`` at the end of the session, and its postmaster killed by
pid if that fails, so no test run leaves one behind.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import signal
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg

from memdex.memory_core.stores.sqlite.tokens import POSITION_BITS

_names = itertools.count(1)


class PgServer:
    """One running server; :meth:`database` gives each test a fresh database of its own."""

    def __init__(self) -> None:
        with warnings.catch_warnings():  # platformdirs warns that XDG_RUNTIME_DIR is unset
            warnings.simplefilter("ignore")
            import pgserver

            self._dir = Path(tempfile.mkdtemp(prefix="memdex-pg-"))
            self._server: Any = pgserver.get_server(self._dir, cleanup_mode="delete")
        self.pid: int | None = self._server.get_pid()

    def url(self, database: str = "postgres") -> str:
        return str(self._server.get_uri(database))

    @contextlib.contextmanager
    def database(self) -> Iterator[str]:
        name = f"memdex_test_{os.getpid()}_{next(_names)}"
        with psycopg.connect(self.url(), autocommit=True) as admin:
            admin.execute(f"CREATE DATABASE {name}")
        try:
            yield self.url(name)
        finally:
            with psycopg.connect(self.url(), autocommit=True) as admin:
                admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")

    @contextlib.contextmanager
    def outage(self) -> Iterator[None]:
        """The server stopped (``pg_ctl stop -m fast``) inside the block, and started again after it on the
        same folder and socket, as an administrator's restart or a crash and recovery would."""
        from pgserver._commands import pg_ctl

        pg_ctl(["-w", "stop", "-m", "fast"], pgdata=self._server.pgdata, user=self._server.system_user)
        try:
            yield
        finally:
            self._server.ensure_postgres_running()
            self.pid = self._server.get_pid()

    def stop(self) -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                self._server.cleanup()
            finally:
                self._kill_if_left()

    def _kill_if_left(self) -> None:
        """Stop the postmaster by pid if cleanup left it running, and only if that pid is still ours
        (a postgres serving this folder), never a process that reused the number."""
        import psutil  # pgserver's own dependency

        with contextlib.suppress(psutil.Error):
            if self.pid is not None and str(self._dir) in " ".join(psutil.Process(self.pid).cmdline()):
                os.kill(self.pid, signal.SIGQUIT)


def check_consistent(conn: Any) -> None:
    """The PostgreSQL index adds up: every file has its chunks, every chunk with a term its postings in
    its block's doclists, which are well formed; the statistics BM25 reads (chunks, tokens) match them."""
    assert conn.execute(
        "SELECT count(*) FROM memdex_files f WHERE NOT EXISTS "
        "(SELECT 1 FROM memdex_chunks c WHERE c.index_id = f.index_id AND c.path = f.path)"
    ).fetchone()[0] == 0
    assert conn.execute(
        "SELECT count(*) FROM memdex_chunks c WHERE NOT EXISTS (SELECT 1 FROM memdex_files f "
        "WHERE f.index_id = c.index_id AND f.path = c.path)"
    ).fetchone()[0] == 0
    assert conn.execute(
        "SELECT count(*) FROM memdex_chunks c WHERE c.doc_len > 0 AND NOT EXISTS (SELECT 1 FROM memdex_doclists d "
        "WHERE d.index_id = c.index_id AND d.block = c.block AND c.id = ANY(d.chunk_ids))"
    ).fetchone()[0] == 0
    assert conn.execute(  # every doclist names chunks of its own block, one tf and length each, tf places each, in them
        "SELECT count(*) FROM memdex_doclists d WHERE cardinality(d.chunk_ids) = 0 OR cardinality(d.tfs) <> cardinality(d.chunk_ids) "
        "OR cardinality(d.doc_lens) <> cardinality(d.chunk_ids) "
        "OR cardinality(d.pos) <> (SELECT sum(n) FROM unnest(d.tfs) AS n) "
        f"OR EXISTS (SELECT 1 FROM unnest(d.pos) AS k WHERE NOT (k >> {POSITION_BITS}) = ANY(d.chunk_ids)) "
        "OR EXISTS (SELECT 1 FROM unnest(d.chunk_ids) AS x(id) "
        "WHERE NOT EXISTS (SELECT 1 FROM memdex_chunks c WHERE c.id = x.id AND c.block = d.block AND c.index_id = d.index_id))"
    ).fetchone()[0] == 0
    stats = conn.execute(
        "SELECT s.rows, s.tokens, (SELECT count(*) FROM memdex_chunks c WHERE c.index_id = s.index_id), "
        "(SELECT coalesce(sum(doc_len), 0) FROM memdex_chunks c WHERE c.index_id = s.index_id) FROM memdex_fts_stats s"
    ).fetchall()
    assert all(rows == chunks and tokens == lengths for rows, tokens, chunks, lengths in stats), stats
