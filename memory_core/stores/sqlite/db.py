"""The one place SQLite connections are made.

The standard library's ``sqlite3`` is used when it can load extensions; otherwise ``pysqlite3``
(the ``pysqlite3-binary`` wheel on Linux). sqlite-vec is loaded into every connection when
possible. When it cannot be, connections still open and keyword search keeps working; the reason
is reported once, with what to do about it. Every connection has the keyword index's segmenter as the
SQL function :data:`INDEX_TEXT_FUNCTION`, which the index's triggers call.
"""

from __future__ import annotations

import logging
import sqlite3 as _stdlib_sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from ...text.segments import index_text

logger = logging.getLogger(__name__)

BUSY_TIMEOUT_MS = 5000
INDEX_TEXT_FUNCTION = "memdex_index_text"  # text.segments.index_text, for the FTS triggers

_VEC_FIX = (
    "Vector search is off; keyword search still works. To enable it use a Python whose sqlite3 can load "
    "extensions (python.org or Homebrew builds can), or on Linux `pip install pysqlite3-binary`, "
    "and make sure `pip install sqlite-vec` succeeded."
)


@dataclass(frozen=True)
class SqliteDriver:
    """Which sqlite3 module is in use and whether sqlite-vec loads into it."""

    module: ModuleType
    vec_version: str | None
    vec_error: str | None

    @property
    def name(self) -> str:
        return self.module.__name__

    @property
    def sqlite_version(self) -> str:
        return str(self.module.sqlite_version)

    @property
    def vectors(self) -> bool:
        return self.vec_version is not None


def _can_load_extensions(module: ModuleType) -> bool:
    conn = module.connect(":memory:")
    try:
        return hasattr(conn, "enable_load_extension")
    finally:
        conn.close()


def _load_vec(conn: Any) -> str:
    import sqlite_vec

    conn.enable_load_extension(True)
    try:
        sqlite_vec.load(conn)
    finally:
        conn.enable_load_extension(False)
    return str(conn.execute("select vec_version()").fetchone()[0])


def _probe() -> SqliteDriver:
    candidates: list[ModuleType] = [_stdlib_sqlite3]
    try:
        import pysqlite3.dbapi2 as pysqlite3

        candidates.append(pysqlite3)
    except ImportError:
        pass
    capable = [m for m in candidates if _can_load_extensions(m)]
    if not capable:
        return SqliteDriver(_stdlib_sqlite3, None, f"this Python's sqlite3 cannot load extensions. {_VEC_FIX}")
    module = capable[0]
    conn = module.connect(":memory:")
    try:
        return SqliteDriver(module, _load_vec(conn), None)
    except Exception as exc:  # ImportError, OperationalError, AttributeError: all mean "no vectors"
        return SqliteDriver(module, None, f"sqlite-vec did not load ({exc}). {_VEC_FIX}")
    finally:
        conn.close()


_driver: SqliteDriver | None = None


def driver() -> SqliteDriver:
    """The driver for this process, probed once (and the sqlite-vec warning logged once)."""
    global _driver
    if _driver is None:
        _driver = _probe()
        if _driver.vec_error:
            logger.warning("%s", _driver.vec_error)
        else:
            logger.debug("sqlite %s via %s, sqlite-vec %s", _driver.sqlite_version, _driver.name, _driver.vec_version)
    return _driver


def connect(path: Path | str, *, readonly: bool = False) -> Any:
    """Open a connection with memdex's pragmas, sqlite-vec loaded when available.

    Connections are created with ``check_same_thread=False``: the engine guarantees that each one
    is used by one thread at a time.
    """
    drv = driver()
    if readonly:
        uri = Path(path).absolute().as_uri() + "?mode=ro"  # as_uri() percent-escapes '#', '?' and '%'
        conn = drv.module.connect(uri, uri=True, check_same_thread=False)
    else:
        conn = drv.module.connect(str(path), check_same_thread=False, isolation_level=None)
    conn.row_factory = drv.module.Row
    try:
        conn.create_function(INDEX_TEXT_FUNCTION, 1, index_text, deterministic=True)
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        if not readonly:
            _set_wal(conn)
            conn.execute("PRAGMA synchronous = NORMAL")
        if drv.vectors:
            _load_vec(conn)
    except BaseException:
        conn.close()
        raise
    return conn


def _set_wal(conn: Any) -> None:
    """Put the database in WAL mode, waiting up to the busy timeout for other connections.

    Switching a new file to WAL needs an exclusive lock, and SQLite answers SQLITE_BUSY at once,
    without the busy handler, while another process holds any lock (several processes opening one
    new index all try it together); this retries instead.
    """
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    delay = 0.002
    while True:
        try:
            conn.execute("PRAGMA journal_mode = WAL").fetchone()
            return
        except database_error() as exc:
            if error_code(exc) != SQLITE_BUSY or time.monotonic() + delay > deadline:
                raise
        time.sleep(delay)
        delay = min(2 * delay, 0.05)


def database_error() -> type[Exception]:
    """The DatabaseError class of the active driver (stdlib and pysqlite3 have separate ones)."""
    return driver().module.DatabaseError  # type: ignore[no-any-return]


SQLITE_BUSY = 5
SQLITE_CORRUPT = 11
SQLITE_NOTADB = 26


def error_code(exc: BaseException) -> int | None:
    """The primary SQLite result code of a driver exception (either driver), or None."""
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return int(code) & 0xFF
    text = str(exc).strip().lower()  # drivers that do not set sqlite_errorcode
    for words, value in (
        ("database is locked", SQLITE_BUSY),
        ("malformed", SQLITE_CORRUPT),
        ("not a database", SQLITE_NOTADB),
    ):
        if words in text:
            return value
    return None


def is_corruption(exc: BaseException) -> bool:
    """True when ``exc`` says the database file is damaged or is not a database at all."""
    return error_code(exc) in (SQLITE_CORRUPT, SQLITE_NOTADB)
