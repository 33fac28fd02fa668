"""The SQLite index: schema and the synchronous operations on it.

Every function takes an open connection and runs on the caller's thread; the engine decides which
thread that is (one writer, pooled readers). Chunk text is stored once, in ``chunks``; the FTS5
table is an external-content index over it, kept in step by triggers.
"""

from __future__ import annotations

import json
import logging
import secrets
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ...text.chunking import Chunk
from ...text.terms import FTS_TOKENIZER
from ..filters import SQLITE, SearchFilter
from ..records import (
    FILES_VERSION,
    VECTOR_PARTS,
    VECTORS_VERSION,
    CacheKey,
    ChunkRow,
    ChunkVectors,
    FileChange,
    FileState,
    VectorDelta,
    pack_vector,
    unpack_vector,
    vector_rows,
)
from . import db, swap

logger = logging.getLogger(__name__)

SCHEMA_VERSION = 1
# A chunk's part vectors are the chunks_vec rows whose rowid is their vector row (records.VECTOR_PARTS).
MAX_KNN = 4096  # sqlite-vec's largest k

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


# Meta ------------------------------------------------------------------------------------------


def read_meta(conn: Any, key: str) -> Any:
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return None if row is None else json.loads(row[0])


def write_meta(conn: Any, key: str, value: Any) -> None:
    conn.execute(
        "INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        (key, json.dumps(value, sort_keys=True)),
    )


# Files and chunks ------------------------------------------------------------------------------


def file_states(conn: Any) -> dict[str, FileState]:
    rows = conn.execute("SELECT path, hash, mtime_ns, size FROM files").fetchall()
    return {r[0]: FileState(r[1], r[2], r[3]) for r in rows}


def _delete_chunks(conn: Any, path: str) -> list[int]:
    """Delete a file's chunks (their FTS rows and vectors go by trigger); returns their ids."""
    ids = [row[0] for row in conn.execute("SELECT id FROM chunks WHERE path = ?", (path,))]
    conn.execute("DELETE FROM chunks WHERE path = ?", (path,))
    return ids


def replace_file(
    conn: Any, path: str, source: str, state: FileState, chunks: Sequence[Chunk]
) -> tuple[list[int], list[int]]:
    """Replace a file's chunks (inside the caller's transaction); returns (removed ids, new ids)."""
    if conn.execute("SELECT 1 FROM files WHERE path = ?", (path,)).fetchone() is None:
        write_meta(conn, FILES_VERSION, secrets.token_hex(8))
    removed = _delete_chunks(conn, path)
    ids: list[int] = []
    for chunk in chunks:
        cur = conn.execute(
            "INSERT INTO chunks(path, source, start_line, end_line, hash, text) VALUES (?, ?, ?, ?, ?, ?)",
            (path, source, chunk.start_line, chunk.end_line, chunk.hash, chunk.text),
        )
        ids.append(int(cur.lastrowid))
    conn.execute(
        "INSERT INTO files(path, source, hash, mtime_ns, size, indexed_at) VALUES (?, ?, ?, ?, ?, ?) "
        "ON CONFLICT(path) DO UPDATE SET source = excluded.source, hash = excluded.hash, "
        "mtime_ns = excluded.mtime_ns, size = excluded.size, indexed_at = excluded.indexed_at",
        (path, source, state.hash, state.mtime_ns, state.size, time.time()),
    )
    return removed, ids


def replace_files(conn: Any, changes: Sequence[FileChange]) -> list[tuple[list[int], list[int]]]:
    """:func:`replace_file` for each change, in order (inside the caller's transaction). The files' text is
    not kept: a SQLite index lives beside the files it indexes."""
    return [replace_file(conn, c.path, c.source, c.state, c.chunks) for c in changes]


def file_text(conn: Any, path: str) -> str | None:
    """None: a SQLite index keeps no file content (memory_get reads the file itself)."""
    return None


def touch_file(conn: Any, path: str, state: FileState) -> None:
    """Record a new mtime/size for a file whose content hash did not change."""
    conn.execute("UPDATE files SET mtime_ns = ?, size = ? WHERE path = ?", (state.mtime_ns, state.size, path))


def delete_files(conn: Any, paths: Iterable[str]) -> list[int]:
    """Remove files and every row derived from them (inside the caller's transaction); returns
    the ids of the chunks removed."""
    removed: list[int] = []
    for path in paths:
        removed += _delete_chunks(conn, path)
        if conn.execute("DELETE FROM files WHERE path = ?", (path,)).rowcount:
            write_meta(conn, FILES_VERSION, secrets.token_hex(8))
    return removed


def file_paths(conn: Any) -> list[str]:
    """Every indexed file's path (callers cache them until :data:`FILES_VERSION` moves)."""
    return [row[0] for row in conn.execute("SELECT path FROM files ORDER BY path")]


def chunks_of(conn: Any, paths: Sequence[str], limit: int, where: SearchFilter | None = None) -> list[ChunkRow]:
    """Up to ``limit`` chunks of ``paths`` in file and line order (``rank`` 0), within ``where``."""
    if not paths:
        return []
    condition, params = _condition(where)
    marks = ",".join("?" * len(paths))
    only = "" if condition is None else f" AND id IN ({_allowed_ids(condition)})"
    rows = conn.execute(
        f"SELECT id, path, source, start_line, end_line, text, 0.0 FROM chunks WHERE path IN ({marks}){only} "
        "ORDER BY path, start_line LIMIT ?",
        [*paths, *params, limit],
    ).fetchall()
    return [ChunkRow(*row) for row in rows]


def counts(conn: Any) -> tuple[int, int]:
    """(files, chunks) in the index."""
    files = conn.execute("SELECT count(*) FROM files").fetchone()[0]
    chunks = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
    return int(files), int(chunks)


# Vectors ---------------------------------------------------------------------------------------

def stamp_vectors(conn: Any, delta: VectorDelta) -> VectorDelta:
    """Give the index a new vector version (inside the transaction that changed the vectors)."""
    delta.before = read_meta(conn, VECTORS_VERSION)
    delta.after = secrets.token_hex(8)
    write_meta(conn, VECTORS_VERSION, delta.after)
    return delta


def vector_dims(conn: Any) -> int | None:
    """The dimension of the ``chunks_vec`` table, or None when it does not exist yet."""
    row = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'chunks_vec'").fetchone()
    if row is None:
        return None
    return int(row[0].split("float[", 1)[1].split("]", 1)[0])


def ensure_vector_table(conn: Any, dims: int) -> None:
    """Create ``chunks_vec`` (cosine) for ``dims``-dimensional vectors; replace one of another size."""
    current = vector_dims(conn)
    if current == dims:
        return
    with transaction(conn):
        if current is not None:
            conn.execute("DROP TRIGGER IF EXISTS chunks_vec_delete")
            conn.execute("DROP TABLE chunks_vec")
        conn.execute(f"CREATE VIRTUAL TABLE chunks_vec USING vec0(embedding float[{dims}] distance_metric=cosine)")
        # One point delete per part: sqlite-vec scans the whole table for a rowid range.
        deletes = " ".join(
            f"DELETE FROM chunks_vec WHERE rowid = old.id * {VECTOR_PARTS} + {part};" for part in range(VECTOR_PARTS)
        )
        conn.execute(f"CREATE TRIGGER chunks_vec_delete AFTER DELETE ON chunks BEGIN {deletes} END")
        stamp_vectors(conn, VectorDelta())


def insert_vectors(conn: Any, chunks: Sequence[ChunkVectors]) -> None:
    """Store the vectors of chunks that have none (inside the caller's transaction)."""
    conn.executemany(
        "INSERT INTO chunks_vec(rowid, embedding) VALUES (?, ?)",
        ((rowid, pack_vector(v)) for rowid, v in vector_rows(chunks)),
    )


def chunks_without_vectors(conn: Any, after: int, limit: int) -> list[tuple[int, str, str]]:
    """(id, hash, text) of chunks with an id above ``after`` that have no vector yet, in id order."""
    rows = conn.execute(
        f"SELECT id, hash, text FROM chunks WHERE id > ? AND id * {VECTOR_PARTS} NOT IN (SELECT rowid FROM chunks_vec) "
        "ORDER BY id LIMIT ?",
        (after, limit),
    ).fetchall()
    return [(r[0], r[1], r[2]) for r in rows]


def chunks_lacking_vectors(conn: Any, chunks: Sequence[tuple[int, str]]) -> set[int]:
    """The ids among ``(id, hash)`` pairs whose chunk still exists with that hash and has no vector."""
    found: set[int] = set()
    for start in range(0, len(chunks), 500):
        part = chunks[start : start + 500]
        marks = ",".join("(?, ?)" for _ in part)
        rows = conn.execute(
            f"WITH wanted(id, hash) AS (VALUES {marks}) SELECT c.id FROM chunks c "
            f"JOIN wanted w ON c.id = w.id AND c.hash = w.hash WHERE c.id * {VECTOR_PARTS} NOT IN (SELECT rowid FROM chunks_vec)",
            [x for pair in part for x in pair],
        ).fetchall()
        found.update(r[0] for r in rows)
    return found


def count_without_vectors(conn: Any) -> int:
    sql = f"SELECT count(*) FROM chunks WHERE id * {VECTOR_PARTS} NOT IN (SELECT rowid FROM chunks_vec)"
    return int(conn.execute(sql).fetchone()[0])


# Embedding cache -------------------------------------------------------------------------------


def cached_vectors(conn: Any, key: CacheKey, hashes: Sequence[str], dims: int) -> dict[str, list[float]]:
    """Vectors of ``dims`` dimensions cached for these chunk hashes; marks the hits as just used (LRU).

    A cached vector of another size (the provider changed what it returns) is never reused.
    """
    found: dict[str, list[float]] = {}
    unique = list(dict.fromkeys(hashes))
    for start in range(0, len(unique), 500):
        part = unique[start : start + 500]
        marks = ",".join("?" * len(part))
        args = (key.provider, key.model, key.fingerprint, *part)
        rows = conn.execute(
            f"SELECT hash, embedding FROM embedding_cache WHERE provider = ? AND model = ? AND fingerprint = ? "
            f"AND dims = ? AND hash IN ({marks})",
            (*args[:3], dims, *part),
        ).fetchall()
        found.update((r[0], unpack_vector(r[1])) for r in rows)
        conn.execute(
            f"UPDATE embedding_cache SET last_used = ? WHERE provider = ? AND model = ? AND fingerprint = ? "
            f"AND hash IN ({marks})",
            (time.time(), *args),
        )
    return found


def cache_vectors(conn: Any, key: CacheKey, vectors: dict[str, Sequence[float]]) -> None:
    now = time.time()
    conn.executemany(
        "INSERT INTO embedding_cache(provider, model, fingerprint, hash, dims, embedding, last_used) "
        "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO UPDATE SET embedding = excluded.embedding, "
        "dims = excluded.dims, last_used = excluded.last_used",
        ((key.provider, key.model, key.fingerprint, h, len(v), pack_vector(v), now) for h, v in vectors.items()),
    )


def prune_cache(conn: Any, max_entries: int) -> int:
    """Drop the least recently used cache entries beyond ``max_entries``; returns how many."""
    excess = conn.execute("SELECT count(*) FROM embedding_cache").fetchone()[0] - max_entries
    if excess <= 0:
        return 0
    conn.execute(
        "DELETE FROM embedding_cache WHERE (provider, model, fingerprint, hash) IN "
        "(SELECT provider, model, fingerprint, hash FROM embedding_cache ORDER BY last_used LIMIT ?)",
        (excess,),
    )
    return int(excess)


def seed_cache(conn: Any, source: Path) -> None:
    """Copy the embedding cache of the index at ``source`` into this one (before a rebuild)."""
    if not source.exists():
        return
    conn.execute("ATTACH DATABASE ? AS seed", (str(source),))
    try:
        conn.execute("INSERT OR IGNORE INTO main.embedding_cache SELECT * FROM seed.embedding_cache")
    finally:
        conn.execute("DETACH DATABASE seed")


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


def checkpoint(conn: Any) -> None:
    """Fold the WAL into the main file, so the file alone is the whole database."""
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def cache_size(conn: Any) -> int:
    return int(conn.execute("SELECT count(*) FROM embedding_cache").fetchone()[0])


# Search ----------------------------------------------------------------------------------------


def match_expression(terms: Sequence[str]) -> str:
    """An FTS5 expression OR-ing ``terms`` (from :func:`~..text.terms.query_terms`), each quoted."""
    return " OR ".join(f'"{term}"' for term in terms)


def keyword_search_sql(allowed: str | None = None) -> str:
    """The BM25 query; kept apart from running it so it can be read and tested on its own.

    Ranking happens inside the FTS table and only the winners are joined to their text (joining first
    made SQLite fetch the text of every match). ``bm25()`` is called directly: sorting on FTS5's hidden
    ``rank`` column gives the same order but took twice as long at 100k chunks. ``allowed``, a filter's
    condition (:meth:`SearchFilter.sql`, its parameters after the MATCH expression), drops the other
    chunks before the limit. It is tested as ``+rowid``: a plain ``rowid IN`` makes FTS5 run the
    MATCH once per allowed id (seconds at 100k chunks).
    """
    only = "" if allowed is None else f" AND +rowid IN ({_allowed_ids(allowed)})"
    return (
        "SELECT c.id, c.path, c.source, c.start_line, c.end_line, c.text, f.score "
        f"FROM (SELECT rowid, bm25(chunks_fts) AS score FROM chunks_fts WHERE chunks_fts MATCH ?{only} "
        "ORDER BY score LIMIT ?) f JOIN chunks c ON c.id = f.rowid ORDER BY f.score"
    )


def _allowed_ids(condition: str) -> str:
    """The ids of the chunks a filter's condition allows, read from the path index (never the text)."""
    return f"SELECT id FROM chunks INDEXED BY chunks_path WHERE {condition}"


def _condition(where: SearchFilter | None) -> tuple[str | None, tuple[str, ...]]:
    """A filter's (condition, parameters); (None, ()) when there is nothing to filter."""
    return (None, ()) if where is None or where.empty else where.sql(SQLITE)


def keyword_search(
    conn: Any,
    terms: Sequence[str],
    limit: int,
    where: SearchFilter | None = None,
    counts: Mapping[str, int] | None = None,
) -> list[ChunkRow]:
    """The ``limit`` best chunks by BM25 for the OR of ``terms`` among those ``where`` allows (FTS5 counts
    terms itself: ``counts`` is for stores that need them)."""
    if not terms:
        return []
    return _ranked(conn, match_expression(terms), limit, where)


def term_counts(conn: Any, terms: Sequence[str]) -> dict[str, int]:
    """How many chunks contain each of ``terms``."""
    return {term: term_rows(conn, term) for term in terms}


def term_rows(conn: Any, term: str) -> int:
    """How many chunks contain ``term`` (a quoted phrase, as in the search)."""
    sql = "SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH ?"
    return int(conn.execute(sql, (match_expression([term]),)).fetchone()[0])


def _ranked(conn: Any, expression: str, limit: int, where: SearchFilter | None) -> list[ChunkRow]:
    condition, params = _condition(where)
    rows = conn.execute(keyword_search_sql(condition), (expression, *params, limit)).fetchall()
    return [ChunkRow(*row) for row in rows]


def chunk_ids(conn: Any, where: SearchFilter) -> list[int]:
    """The ids of the chunks ``where`` allows (one aggregate: a row per id costs three times as much)."""
    condition, params = where.sql(SQLITE)
    found = conn.execute(f"SELECT json_group_array(id) FROM ({_allowed_ids(condition)})", params).fetchone()[0]
    ids: list[int] = json.loads(found)
    return ids


def vector_search_sql(allowed: str | None = None) -> str:
    """sqlite-vec KNN (an index search with ``k``, not a scan of every distance) over the vectors'
    parts, each chunk at its nearest part.

    ``k`` counts parts: ``VECTOR_PARTS`` times the chunks wanted always holds enough chunks.
    ``allowed``, a filter's condition (its parameters after ``k``), is handed to sqlite-vec as a
    ``rowid IN`` pre-filter: the ``k`` nearest among the allowed chunks, not the allowed few of the
    ``k`` nearest.
    """
    parts = " UNION ALL ".join(f"SELECT {part} AS part" for part in range(VECTOR_PARTS))
    only = (
        ""
        if allowed is None
        else f" AND rowid IN (SELECT a.id * {VECTOR_PARTS} + p.part FROM ({_allowed_ids(allowed)}) a, ({parts}) p)"
    )
    return (
        "SELECT c.id, c.path, c.source, c.start_line, c.end_line, c.text, v.distance "
        f"FROM (SELECT rowid / {VECTOR_PARTS} AS id, min(distance) AS distance "
        f"FROM chunks_vec WHERE embedding MATCH ? AND k = ?{only} GROUP BY 1) v "
        "JOIN chunks c ON c.id = v.id ORDER BY v.distance, c.id LIMIT ?"
    )


def chunks_by_id(conn: Any, hits: Sequence[tuple[int, float]]) -> list[ChunkRow]:
    """The chunks of ``(id, rank)`` pairs, in that order (ids no longer in the index are left out)."""
    if not hits:
        return []
    marks = ",".join("?" * len(hits))
    rows = conn.execute(
        f"SELECT id, path, source, start_line, end_line, text FROM chunks WHERE id IN ({marks})", [h[0] for h in hits]
    ).fetchall()
    found = {int(row[0]): (row[1], row[2], int(row[3]), int(row[4]), row[5]) for row in rows}
    return [ChunkRow(cid, *found[cid], rank) for cid, rank in hits if cid in found]


def vector_search(conn: Any, vector: Sequence[float], limit: int, where: SearchFilter | None = None) -> list[ChunkRow]:
    """The ``limit`` chunks nearest to ``vector`` (among those ``where`` allows); ``rank`` holds the
    cosine distance."""
    if vector_dims(conn) != len(vector):
        return []
    condition, params = _condition(where)
    k = min(limit * VECTOR_PARTS, MAX_KNN)
    rows = conn.execute(vector_search_sql(condition), (pack_vector(vector), k, *params, limit)).fetchall()
    return [ChunkRow(*row) for row in rows]
