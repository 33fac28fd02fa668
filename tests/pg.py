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
