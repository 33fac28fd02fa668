"""The SQLite index file: its schema, and opening, checking and emptying it.

Every function runs on the caller's thread (the owner's worker threads).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ...text.terms import FTS_TOKENIZER
from . import db, swap

logger = logging.getLogger(__name__)

SCHEMA_VERSION = 1

_SCHEMA = f"""
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE files (
    path TEXT PRIMARY KEY,
    source TEXT NOT NULL DEFAULT 'memory',
    hash TEXT NOT NULL,
    mtime_ns INTEGER NOT NULL,
    size INTEGER NOT NULL,
    indexed_at REAL NOT NULL
);
CREATE TABLE chunks (
    id INTEGER PRIMARY KEY,
    path TEXT NOT NULL,
    source TEXT NOT NULL DEFAULT 'memory',
    start_line INTEGER NOT NULL,
    end_line INTEGER NOT NULL,
    hash TEXT NOT NULL,
    text TEXT NOT NULL
);
CREATE INDEX chunks_path ON chunks(path);
CREATE VIRTUAL TABLE chunks_fts USING fts5(text, content='chunks', content_rowid='id', tokenize='{FTS_TOKENIZER}');
CREATE TRIGGER chunks_fts_insert AFTER INSERT ON chunks BEGIN
    INSERT INTO chunks_fts(rowid, text) VALUES (new.id, new.text);
END;
CREATE TRIGGER chunks_fts_delete AFTER DELETE ON chunks BEGIN
    INSERT INTO chunks_fts(chunks_fts, rowid, text) VALUES ('delete', old.id, old.text);
END;
CREATE TABLE embedding_cache (
    provider TEXT NOT NULL,
    model TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    hash TEXT NOT NULL,
    dims INTEGER NOT NULL,
    embedding BLOB NOT NULL,
    last_used REAL NOT NULL,
    PRIMARY KEY (provider, model, fingerprint, hash)
) WITHOUT ROWID;
CREATE INDEX embedding_cache_last_used ON embedding_cache(last_used);
PRAGMA user_version = {SCHEMA_VERSION};
"""


@contextmanager
def transaction(conn: Any) -> Iterator[None]:
    """``BEGIN IMMEDIATE`` … ``COMMIT``, rolled back on any error."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


class NeedsReset(Exception):
    """The file at the index path is damaged, foreign or of another schema: rebuild it from the Markdown."""


def open_index(path: Path) -> Any:
    """Open the index at ``path`` for writing, creating its schema in a new or empty file.

    Raises :class:`NeedsReset` when the file is corrupt, not a database, or not a memdex index of
    this schema version; any other SQLite error (locked, I/O, disk full) propagates untouched, and
    nothing is ever deleted here.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        conn = db.connect(path)
    except db.database_error() as exc:
        if db.is_corruption(exc):
            raise NeedsReset(str(exc)) from exc
        raise
    try:
        _ensure_schema(conn)
    except db.database_error() as exc:
        conn.close()
        if db.is_corruption(exc):
            raise NeedsReset(str(exc)) from exc
        raise
    except BaseException:
        conn.close()
        raise
    return conn


def _ensure_schema(conn: Any) -> None:
    """Create the schema in an empty database, in one transaction (two processes may race to do it).

    An existing index is probed where every open reads next (its meta rows, the FTS structure), so
    that damage there shows here, as :class:`NeedsReset`, rather than in the first query.
    """
    if _user_version(conn) == SCHEMA_VERSION:
        _probe(conn)
        return
    with transaction(conn):
        version = _user_version(conn)  # another process may have created it since the first look
        if version == SCHEMA_VERSION:
            return
        if version != 0 or conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]:
            raise NeedsReset(f"the file holds schema version {version}, not a memdex index of version {SCHEMA_VERSION}")
        for statement in _statements(_SCHEMA):
            conn.execute(statement)


_TABLES = frozenset({"meta", "files", "chunks", "chunks_fts", "embedding_cache"})


def _probe(conn: Any) -> None:
    """Read the small structures every open needs; raises the driver's error when they are damaged,
    and NeedsReset when the file has this schema version but not memdex's tables (a foreign file)."""
    names = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if missing := _TABLES - names:
        raise NeedsReset(f"the file is not a memdex index (no {', '.join(sorted(missing))} table)")
    conn.execute("SELECT key, value FROM meta").fetchall()
    conn.execute("SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH 'memdex'").fetchone()


def _user_version(conn: Any) -> int:
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


def _statements(script: str) -> list[str]:
    """``script`` cut into whole statements (executescript would commit the caller's transaction)."""
    statements, current = [], ""
    for line in script.splitlines(keepends=True):
        current += line
        if db.driver().module.complete_statement(current):
            statements.append(current.strip())
            current = ""
    return statements


def reset(path: Path) -> None:
    """Turn the file at ``path`` into an empty database, in place, whatever its pages hold.

    The caller holds the rebuild lock. An empty database is copied over the file with SQLite's
    backup API, in one transaction, so other processes' connections see the change instead of
    losing a renamed or deleted file, and no damaged page has to be read. Only a file SQLite cannot
    open at all (its header is damaged, it is cut short, it is not a database) is deleted and
    created anew; any other error (locked, I/O, disk full) propagates and nothing is deleted.
    """
    module = db.driver().module
    try:
        conn = module.connect(str(path), isolation_level=None)  # no pragma: they may read damaged pages
        try:
            conn.execute(f"PRAGMA busy_timeout = {db.BUSY_TIMEOUT_MS}")
            page_size = int(conn.execute("PRAGMA page_size").fetchone()[0])
            empty = module.connect(":memory:")
            try:
                empty.execute(f"PRAGMA page_size = {page_size}")  # a WAL file keeps its page size
                swap.copy_database(empty, conn)
            finally:
                empty.close()
        finally:
            conn.close()
        return
    except db.database_error() as exc:
        if not db.is_corruption(exc):
            raise
        logger.warning("index %s cannot be emptied in place (%s); creating it anew", path, exc)
    swap.remove(path)


def intact(conn: Any) -> bool:
    """True when SQLite's quick check finds the whole file sound (a corrupt page raises or is listed)."""
    try:
        rows = conn.execute("PRAGMA quick_check").fetchall()
    except db.database_error() as exc:
        if db.is_corruption(exc):
            return False
        raise
    if len(rows) == 1 and rows[0][0] == "ok":
        return True
    logger.warning("index failed its integrity check: %s", "; ".join(str(r[0]) for r in rows[:3]))
    return False
