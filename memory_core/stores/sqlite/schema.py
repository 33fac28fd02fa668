"""The SQLite index file and its embedding cache file: schemas, named migrations, opening, checking, emptying.

The index (``<index>``) holds files, chunks, FTS5 and vectors; the embedding cache lives in its own file
beside it (``<index>.cache``), attached to every writer as ``cache``. Both are derived data, but vectors
may have been paid for: emptying or rebuilding the index never touches the cache, and a damaged cache is
emptied on its own.

Each file records the named migrations applied to it (table ``migrations``); opening applies the missing
ones in order, each in one transaction with its record, so several processes may open a file at once. An
index from before migrations were recorded (``PRAGMA user_version = 1``) is adopted as having the first
one. Every function runs on the caller's thread (the owner's worker threads).
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ...text.terms import FTS_TOKENIZER
from . import db, swap
from .db import INDEX_TEXT_FUNCTION

logger = logging.getLogger(__name__)

# In the index identity: bump it only for a migration that cannot carry the chunks over, so that the
# index is rebuilt from the Markdown (its vectors come from the cache). Other migrations never need it.
SCHEMA_VERSION = 1

# The embedding cache's table: in the index until migration 0002, in its own file since (a change to it is a
# new migration of each, never an edit here).
_CACHE_TABLE = """
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
"""

# The keyword table made again with the tokenizer and segmenter in force, its terms cut from every chunk anew.
_KEYWORD_TABLE_AGAIN = f"""
DROP TRIGGER chunks_fts_insert;
DROP TRIGGER chunks_fts_delete;
DROP TABLE chunks_fts;
CREATE VIRTUAL TABLE chunks_fts USING fts5(text, content='chunks', content_rowid='id', tokenize='{FTS_TOKENIZER}');
CREATE TRIGGER chunks_fts_insert AFTER INSERT ON chunks BEGIN
    INSERT INTO chunks_fts(rowid, text) VALUES (new.id, {INDEX_TEXT_FUNCTION}(new.text));
END;
CREATE TRIGGER chunks_fts_delete AFTER DELETE ON chunks BEGIN
    INSERT INTO chunks_fts(chunks_fts, rowid, text) VALUES ('delete', old.id, {INDEX_TEXT_FUNCTION}(old.text));
END;
INSERT INTO chunks_fts(rowid, text) SELECT id, {INDEX_TEXT_FUNCTION}(text) FROM chunks;
"""

# The index's migrations, applied once each, in order. The first is the schema of indexes from before
# migrations were recorded (``PRAGMA user_version = 1``), which are adopted as having it.
MIGRATIONS: list[tuple[str, str]] = [
    (
        "0001_files_chunks_fts_cache",
        """
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
CREATE VIRTUAL TABLE chunks_fts USING fts5(text, content='chunks', content_rowid='id', tokenize='porter unicode61');
CREATE TRIGGER chunks_fts_insert AFTER INSERT ON chunks BEGIN
    INSERT INTO chunks_fts(rowid, text) VALUES (new.id, new.text);
END;
CREATE TRIGGER chunks_fts_delete AFTER DELETE ON chunks BEGIN
    INSERT INTO chunks_fts(chunks_fts, rowid, text) VALUES ('delete', old.id, old.text);
END;
"""
        + _CACHE_TABLE,
    ),
    (
        # The cache moves to its own file, which no reset or rebuild of the index touches.
        "0002_embedding_cache_in_its_own_file",
        """
INSERT OR IGNORE INTO cache.embedding_cache(provider, model, fingerprint, hash, dims, embedding, last_used)
    SELECT provider, model, fingerprint, hash, dims, embedding, last_used FROM main.embedding_cache;
DROP TABLE main.embedding_cache;
""",
    ),
    (
        # Keyword terms for every script: the FTS table indexes each chunk's text as segmented by
        # text.segments (CJK grams, identifier parts; accents folded), through a function every connection
        # registers; the chunks keep the text as written. A change to the segmenter is a new migration like
        # this one: a 'delete' must hand FTS5 exactly the terms its insert gave.
        "0003_keyword_terms_for_every_script",
        _KEYWORD_TABLE_AGAIN,
    ),
    # Korean verb endings, Russian, Greek and Hindi stems, Arabic folded and stemmed, Indic words whole with their
    # vowel signs (a tokenizer option): the keyword table again, so a 'delete' hands FTS5 the terms its insert gave.
    ("0004_stems_and_indic_words", _KEYWORD_TABLE_AGAIN),
    # Thai, Lao, Myanmar, Khmer and Tibetan words whole with their vowel signs and tone marks (a tokenizer option).
    ("0005_thai_words_with_their_marks", _KEYWORD_TABLE_AGAIN),
]

# The embedding cache file's migrations.
CACHE_MIGRATIONS: list[tuple[str, str]] = [("0001_embedding_cache", _CACHE_TABLE)]

_ADOPTED_VERSION = 1  # the user_version of an index from before migrations were recorded
_ADOPTED_TABLES = frozenset({"meta", "files", "chunks", "chunks_fts", "embedding_cache"})
_TABLES = frozenset({"meta", "files", "chunks", "chunks_fts"})


def cache_path(index: Path) -> Path:
    """Where the embedding cache of the index at ``index`` lives."""
    return Path(f"{index}.cache")


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
    """The file at ``path`` (the index or its embedding cache) is damaged, foreign or of an unknown schema:
    empty it (:func:`reset`) and open again."""

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(reason)
        self.path = path


def open_index(path: Path, cache: Path | None = None) -> Any:
    """Open the index at ``path`` for writing, with its embedding cache (at ``cache``, by default
    :func:`cache_path`) attached as ``cache``, each file migrated to the current schema.

    Raises :class:`NeedsReset` naming the file that is corrupt, not a database, or not memdex's; any
    other SQLite error (locked, I/O, disk full) propagates untouched, and nothing is ever deleted here.
    """
    cache = cache_path(path) if cache is None else cache
    _open(cache, _prepare_cache).close()
    return _open(path, functools.partial(_prepare_index, cache=cache))


def _open(path: Path, prepare: Callable[[Any], None]) -> Any:
    """A writer connection to ``path`` once ``prepare(conn)`` has run; NeedsReset when the file is damaged."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        conn = db.connect(path)
    except db.database_error() as exc:
        if db.is_corruption(exc):
            raise NeedsReset(path, str(exc)) from exc
        raise
    try:
        prepare(conn)
    except db.database_error() as exc:
        conn.close()
        if db.is_corruption(exc):
            raise NeedsReset(path, str(exc)) from exc
        raise
    except BaseException:
        conn.close()
        raise
    return conn


def _prepare_cache(conn: Any) -> None:
    _migrate(conn, CACHE_MIGRATIONS, adopted=None)
    conn.execute("SELECT hash FROM embedding_cache LIMIT 1").fetchall()


def _prepare_index(conn: Any, cache: Path) -> None:
    conn.execute("ATTACH DATABASE ? AS cache", (str(cache),))
    conn.execute("PRAGMA cache.synchronous = NORMAL")
    _migrate(conn, MIGRATIONS, adopted=MIGRATIONS[0][0])
    _probe(conn)


def _migrate(conn: Any, migrations: Sequence[tuple[str, str]], adopted: str | None) -> None:
    """Apply the named migrations the main database of ``conn`` lacks, in order, each in one transaction
    with its record (another process may apply one first: each transaction looks again).

    ``adopted``: the migration a file from before migrations were recorded already has (None: such a
    file is not one of ours). A file with migrations this memdex does not know (a newer one's), or with
    tables but no record, raises NeedsReset.
    """
    names = [name for name, _ in migrations]
    applied = _applied(conn)
    if applied is not None and set(names) == applied:
        return
    for name, script in migrations:
        with transaction(conn):
            applied = _applied(conn)
            if applied is None:
                applied = _start_record(conn, adopted)
            if unknown := applied - set(names):
                raise NeedsReset(_main_file(conn), f"the file has migrations this memdex does not know: {sorted(unknown)}")
            if name in applied:
                continue
            for statement in _statements(script):
                conn.execute(statement)
            conn.execute("INSERT INTO migrations(name, applied_at) VALUES (?, ?)", (name, time.time()))
            logger.info("%s: applied migration %s", _main_file(conn), name)


def _applied(conn: Any) -> set[str] | None:
    """The names of the migrations applied to the main database, or None when it records none."""
    if conn.execute("SELECT 1 FROM main.sqlite_master WHERE type = 'table' AND name = 'migrations'").fetchone() is None:
        return None
    return {row[0] for row in conn.execute("SELECT name FROM main.migrations")}


def _start_record(conn: Any, adopted: str | None) -> set[str]:
    """Create the record of migrations in an empty database, or in an index from before it (adopted as
    having ``adopted``); returns what it records. Raises NeedsReset for any other file."""
    version = int(conn.execute("PRAGMA main.user_version").fetchone()[0])
    tables = {row[0] for row in conn.execute("SELECT name FROM main.sqlite_master WHERE type = 'table'")}
    if tables and (adopted is None or version != _ADOPTED_VERSION or not tables >= _ADOPTED_TABLES):
        raise NeedsReset(_main_file(conn), f"the file (schema version {version}) is not a memdex file of a known schema")
    conn.execute("CREATE TABLE main.migrations (name TEXT PRIMARY KEY, applied_at REAL NOT NULL)")
    if adopted is None or not tables:
        return set()
    conn.execute("INSERT INTO main.migrations(name, applied_at) VALUES (?, ?)", (adopted, time.time()))
    logger.info("%s: adopted an index from before recorded migrations", _main_file(conn))
    return {adopted}


def _main_file(conn: Any) -> Path:
    return Path(next(row[2] for row in conn.execute("PRAGMA database_list") if row[1] == "main"))


def _probe(conn: Any) -> None:
    """Read the small structures every open needs, so that damage there shows here, as NeedsReset, rather
    than in the first query (the driver's error propagates; the caller maps it)."""
    names = {row[0] for row in conn.execute("SELECT name FROM main.sqlite_master WHERE type = 'table'")}
    if missing := _TABLES - names:
        raise NeedsReset(_main_file(conn), f"the file is not a memdex index (no {', '.join(sorted(missing))} table)")
    conn.execute("SELECT key, value FROM meta").fetchall()
    conn.execute("SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH 'memdex'").fetchone()


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
    """Turn the file at ``path`` (the index or its embedding cache) into an empty database, in place,
    whatever its pages hold.

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
        logger.warning("%s cannot be emptied in place (%s); creating it anew", path, exc)
    swap.remove(path)


def damaged(conn: Any) -> dict[Path, str]:
    """The files of ``conn`` (the index, its attached cache) that SQLite's quick check does not find sound,
    each with what the check said.

    The check runs in one read transaction that first reads chunks_fts: FTS5 keeps the index structure it
    last read, and its part of the quick check does not ask whether another connection has committed since
    (a normal FTS5 query does), so a merge committed in between reads as "fts5: corruption found reading
    blob". Reading the table first, in the same snapshot, makes FTS5 load the current structure.
    """
    files = {row[1]: Path(row[2]) for row in conn.execute("PRAGMA database_list")}
    conn.execute("BEGIN")
    try:
        found = {path: _unsound(conn, name) for name, path in files.items() if name in ("main", "cache")}
    finally:
        if conn.in_transaction:  # read only: ROLLBACK ends it (COMMIT would repeat FTS5's error)
            conn.execute("ROLLBACK")
    return {path: why for path, why in found.items() if why is not None}


def _unsound(conn: Any, name: str) -> str | None:
    """What the quick check of database ``name`` says is wrong (a corrupt page raises or is listed); None: sound."""
    try:
        if name == "main":
            conn.execute("SELECT count(*) FROM main.chunks_fts WHERE chunks_fts MATCH 'memdex'").fetchone()
        rows = conn.execute(f"PRAGMA {name}.quick_check").fetchall()
    except db.database_error() as exc:
        if db.is_corruption(exc):
            return str(exc)
        raise
    if len(rows) == 1 and rows[0][0] == "ok":
        return None
    return "; ".join(str(r[0]) for r in rows[:3])
