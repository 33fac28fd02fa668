"""The SQLite index's operations (:class:`~..base.StoreOps`): meta, files and chunks, vectors, search.

Every function takes an open connection and runs on the caller's thread; the engine decides which
thread that is (one writer, pooled readers). Chunk text is stored once, in ``chunks``; the FTS5
table is an external-content index over it, kept in step by triggers. The schema and the file's
life (open, check, empty) are :mod:`.schema`'s; the embedding cache is :mod:`.cache`'s.
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ...text.chunking import Chunk, ChunkMark
from ..base import ENDING_MIN, Alongside
from ..filters import SQLITE, SearchFilter, prefix_end
from ..records import (
    FILES_VERSION,
    VECTOR_PARTS,
    VECTORS_VERSION,
    ChunkRow,
    ChunkVectors,
    FileChange,
    FileState,
    IndexedTail,
    TailChange,
    VectorDelta,
    pack_vector,
    vector_rows,
)
from . import pruning
from .cache import cache_vectors as cache_vectors
from .cache import cached_vectors as cached_vectors
from .cache import prune_cache as prune_cache
from .schema import SCHEMA_VERSION as SCHEMA_VERSION
from .schema import transaction as transaction
from .tokens import phrases

KEEPS_TEXT = False  # the index lives beside the files it indexes

# A chunk's part vectors are the chunks_vec rows whose rowid is their vector row (records.VECTOR_PARTS).
MAX_KNN = 4096  # sqlite-vec's largest k


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
    return removed, _write_file(conn, path, source, state, chunks)


def _write_file(conn: Any, path: str, source: str, state: FileState, chunks: Sequence[Chunk]) -> list[int]:
    """Insert ``chunks`` and record the file's state; returns the chunks' ids (in order, so ascending)."""
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
    return ids


def indexed_tails(conn: Any, paths: Sequence[str], chunks: int) -> dict[str, IndexedTail]:
    """The state and last ``chunks`` chunks (by id: a file's chunks are inserted in order) of ``paths``,
    each file read in one statement, so its chunks match its state."""
    tails: dict[str, IndexedTail] = {}
    for path in paths:
        rows = conn.execute(
            "SELECT f.hash, f.mtime_ns, f.size, c.id, c.start_line, c.end_line, c.hash FROM files f LEFT JOIN chunks c "
            "ON c.id IN (SELECT id FROM chunks WHERE path = f.path ORDER BY id DESC LIMIT ?) WHERE f.path = ? ORDER BY c.id",
            (chunks, path),
        ).fetchall()
        if rows:
            marks = [ChunkMark(*row[3:]) for row in rows if row[3] is not None]
            tails[path] = IndexedTail(FileState(*rows[0][:3]), marks)
    return tails


def replace_tail(conn: Any, tail: TailChange) -> list[int] | None:
    """Replace the chunks after ``tail.after`` (inside the caller's transaction); None when the index no
    longer holds the file at ``tail.old`` with those chunks (another write came first)."""
    change = tail.change
    row = conn.execute("SELECT hash, size FROM files WHERE path = ?", (change.path,)).fetchone()
    sql = "SELECT id, hash FROM chunks WHERE path = ? AND id >= ? ORDER BY id"
    held = [tuple(r) for r in conn.execute(sql, (change.path, tail.after.id))]
    if row is None or tuple(row) != (tail.old.hash, tail.old.size) or held != tail.expected():
        return None
    conn.execute("DELETE FROM chunks WHERE path = ? AND id > ?", (change.path, tail.after.id))
    return _write_file(conn, change.path, change.source, change.state, change.chunks)


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


def file_hashes(conn: Any, paths: Sequence[str]) -> dict[str, str]:
    marks = ",".join("?" * len(paths))
    return dict(conn.execute(f"SELECT path, hash FROM files WHERE path IN ({marks})", list(paths)).fetchall()) if paths else {}


def chunks_of(conn: Any, paths: Sequence[str], limit: int, where: SearchFilter | None = None) -> list[ChunkRow]:
    """Up to ``limit`` chunks of ``paths`` (``rank`` 0), within ``where``: each file's first chunk, in file order,
    then each one's second, and so on (one file's: in line order)."""
    if not paths:
        return []
    condition, params = _condition(where)
    marks = ",".join("?" * len(paths))
    only = "" if condition is None else f" AND id IN ({_allowed_ids(condition)})"
    rows = conn.execute(
        "SELECT id, path, source, start_line, end_line, text, 0.0 FROM (SELECT *, "
        f"row_number() OVER (PARTITION BY path ORDER BY start_line) AS nth FROM chunks WHERE path IN ({marks}){only}) "
        "ORDER BY nth, path LIMIT ?",
        [*paths, *params, limit],
    ).fetchall()
    return [ChunkRow(*row) for row in rows]


def chunks_starting(conn: Any, places: Sequence[tuple[str, int]]) -> list[ChunkRow]:
    """The chunk that starts at each (path, line) of ``places`` that has one (``rank`` 0)."""
    sql = "SELECT id, path, source, start_line, end_line, text, 0.0 FROM chunks WHERE path = ? AND start_line = ? LIMIT 1"
    return [ChunkRow(*row) for place in places for row in conn.execute(sql, place).fetchall()]


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


# Search ----------------------------------------------------------------------------------------


def match_expression(terms: Sequence[str]) -> str:
    """An FTS5 expression OR-ing ``terms`` (from :func:`~..text.terms.query_terms`), each quoted."""
    return " OR ".join(f'"{term}"' for term in terms)


def keyword_search_sql(allowed: str | None = None, ids: str | None = None, *, within: bool = False) -> str:
    """The BM25 query; kept apart from running it so it can be read and tested on its own.

    Ranking happens inside the FTS table and only the winners are joined to their text (joining first
    made SQLite fetch the text of every match). ``bm25()`` is called directly: sorting on FTS5's hidden
    ``rank`` column gives the same order but took twice as long at 100k chunks. Ties come in id order, as in
    every store: FTS5 yields the matches by id and SQLite's sort keeps the first of equal rows (sorting on the
    id as well cost 1-4 %; tests/test_keyword_halves.py checks the order). ``allowed``, a filter's condition
    (:meth:`SearchFilter.sql`, its parameters after the MATCH expression), drops the other chunks before the
    limit. It is tested as ``+rowid``: a plain ``rowid IN`` makes FTS5 run the MATCH once per allowed id
    (seconds at 100k chunks). ``within``: only the chunks that a second MATCH expression (a parameter after the
    filter's) matches are scored, still by the whole first one (:mod:`.pruning`). ``ids``, ``"<"`` or
    ``">="``: only the chunks whose id is below, or from, a parameter after each MATCH expression; FTS5 reads
    only that range of each term's postings.
    """
    only = "" if allowed is None else f" AND +rowid IN ({_allowed_ids(allowed)})"
    bound = "" if ids is None else f" AND rowid {ids} ?"
    only += f" AND +rowid IN (SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ?{bound})" if within else ""
    only += bound
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


# A query whose terms more chunks hold than this is ranked as two halves of the chunk ids at once, when the owner
# lends a second reader: scoring is FTS5's cost (about 0.4 us a matching chunk), and at 100k chunks a query over
# common words took 20.9 ms whole, 13.8 ms in halves (docs/benchmarks.md); below it, the second thread's start
# would cost more than it saves.
SPLIT_ROWS = 5_000


# A query is first ranked among the chunks holding its rarest terms (:mod:`.pruning`) only when the terms it leaves
# out are held this many times or more: the chunks it may leave unscored. Below it the second MATCH cost more than
# it saved (BM25 11-44 % slower on the robustness sets' indexes of 1,500 to 9,000 chunks); with it they rank as
# fast as before, and perf's 100k-chunk store keeps the whole gain (docs/benchmarks.md).
PRUNE_ROWS = 5_000


def keyword_search(
    conn: Any,
    terms: Sequence[str],
    limit: int,
    where: SearchFilter | None = None,
    counts: Mapping[str, int] | None = None,
    alongside: Alongside | None = None,
) -> list[ChunkRow]:
    """The ``limit`` best chunks by BM25 for the OR of ``terms`` among those ``where`` allows, ties in id order.

    ``counts`` (how many chunks hold each term) let it score only the chunks that hold the rarest terms when
    that gives the same rows and the others are many (:mod:`.pruning`, :data:`PRUNE_ROWS`), and say when the
    query is large enough to rank the upper half of the ids on the reader ``alongside`` lends, the lower half
    here (:data:`SPLIT_ROWS`)."""
    if not terms:
        return []
    expression = match_expression(terms)
    lend = alongside if counts and sum(counts.get(term, 0) for term in set(terms)) >= SPLIT_ROWS else None

    def ranked(within: str | None = None) -> list[ChunkRow]:
        query = _Query(expression, limit, where, within)
        return _ranked(conn, query) if lend is None else _ranked_in_halves(conn, query, lend)

    if counts and len(counts) > 1 and sum(counts.values()) >= PRUNE_ROWS:  # else the terms left out are fewer
        rows_at_most = _rows_at_most(conn)
        split = pruning.rarest_first(terms, counts, limit, rows_at_most)
        if split is not None and sum(counts[term] for term in split.rest) >= PRUNE_ROWS:
            rows = ranked(match_expression(split.rarest))
            if len(rows) == limit and pruning.clears(-rows[-1].rank, split.ceiling):
                return rows
    return ranked()


@dataclass(frozen=True)
class _Query:
    """One BM25 query's parameters: the MATCH expression, how many rows, the filter, and the expression the
    scored chunks must match (:mod:`.pruning`), if any."""

    expression: str
    limit: int
    where: SearchFilter | None
    within: str | None = None


# The chunk ids' two ends, each read off the key by a subquery of its own: SQLite scans the whole table for min() and
# max() in one select (6 ms at 100,000 chunks, against 7 µs)
ID_RANGE = "SELECT (SELECT min(id) FROM chunks), (SELECT max(id) FROM chunks)"


def _rows_at_most(conn: Any) -> int:
    """A count the index's rows never exceed: the largest chunk id (ids are positive), read off the end of its key."""
    return int(conn.execute("SELECT max(id) FROM chunks").fetchone()[0] or 0)


def _ranked_in_halves(conn: Any, query: _Query, alongside: Alongside) -> list[ChunkRow]:
    """:func:`_ranked` over the chunks below the middle id here and those from it up on the lent reader, at once:
    the best ``limit`` of both are the best ``limit`` of all, since a chunk's BM25 does not depend on the others
    ranked with it (FTS5 counts each term over the whole index either way). The two readers may start a moment
    apart, as a search's statements on one reader may: a write committed in between shows in one half only."""
    low, high = conn.execute(ID_RANGE).fetchone()
    if low is None or low == high:
        return _ranked(conn, query)
    middle = (low + high + 1) // 2
    upper = alongside(lambda other: _ranked(other, query, (">=", middle)))
    if upper is None:
        return _ranked(conn, query)
    rows = _ranked(conn, query, ("<", middle)) + upper.result()
    rows.sort(key=lambda row: (row.rank, row.id))
    return rows[: query.limit]


def texts_holding(conn: Any, term: str, limit: int) -> list[str]:
    """The texts of ``limit`` chunks that hold ``term``, the first by id: FTS5 stops at the limit when it need not
    rank (ranking by ``bm25()`` to keep 3 took 15 ms for a word held by 31,124 of 100k chunks)."""
    sql = "SELECT c.text FROM (SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ? LIMIT ?) f JOIN chunks c ON c.id = f.rowid"
    return [str(text) for (text,) in conn.execute(sql, (match_expression([term]), limit))]


def term_counts(conn: Any, terms: Sequence[str]) -> dict[str, int]:
    """How many chunks contain each of ``terms``: a term of one token, FTS5's own count of the token (its term
    list, ``fts5vocab``: a third of the time of counting the token's matches); a phrase, by counting its matches.

    One lookup per token: a lookup of many tokens at once (``term IN (...)``, 60 or more) left the connection's
    later ``bm25()`` searches 10 % slower for as long as it stayed open."""
    cut = phrases(terms)
    vocabulary = _vocabulary(conn) if terms else ""
    counts: dict[str, int] = {}
    for term in terms:
        if len(tokens := cut[term]) == 1:
            held = conn.execute(f"SELECT doc FROM {vocabulary} WHERE term = ?", tokens).fetchone()
            counts[term] = int(held[0]) if held else 0
        else:
            counts[term] = term_rows(conn, term)
    return counts


def term_rows(conn: Any, term: str) -> int:
    """How many chunks contain ``term`` (a quoted phrase, as in the search)."""
    sql = "SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH ?"
    return int(conn.execute(sql, (match_expression([term]),)).fetchone()[0])


def terms_starting(conn: Any, prefix: str, limit: int) -> dict[str, int]:
    """The index's terms that begin with ``prefix`` and are longer, the ``limit`` most held, with how many chunks
    hold each: a range of FTS5's own term list (``fts5vocab``, a few milliseconds at 100k chunks), through a
    table of this connection's own, so the index's schema does not change."""
    rows = conn.execute(
        f"SELECT term, doc FROM {_vocabulary(conn)} WHERE term > ? AND term < ? ORDER BY doc DESC, term LIMIT ?",
        (prefix, prefix_end(prefix), limit),
    ).fetchall()
    return {str(term): int(doc) for term, doc in rows}


def terms_ending(conn: Any, suffixes: Sequence[str], limit: int) -> list[dict[str, int]]:
    """For each of ``suffixes``, the index's terms of :data:`~..base.ENDING_MIN` characters or more, with no digit,
    that end with it and are longer, the ``limit`` most held, with how many chunks hold each.

    FTS5 lists its terms by their start only, and a scan of that list costs about 0.2 s at 100k chunks, so this
    connection keeps a copy of those terms, each spelt backwards, in a table of its own (temp: the index's schema
    does not change), and a range of the copy answers each suffix. The copy is made again when another connection
    has changed the index since (``PRAGMA data_version``: a reader's, which sees the writer's changes), at about
    0.3 s at 100k chunks, by the first such lookup after the change."""
    copy = _backwards(conn)
    sql = f"SELECT term, doc FROM {copy} WHERE backwards > ? AND backwards < ? ORDER BY doc DESC, term LIMIT ?"
    found = []
    for suffix in suffixes:
        backwards = suffix[::-1]
        found.append({str(term): int(doc) for term, doc in conn.execute(sql, (backwards, prefix_end(backwards), limit))})
    return found


_VOCAB = "memdex_terms"  # a connection's view of the keyword table's terms (temp: not in the index's schema)
_BACKWARDS = "memdex_terms_backwards"  # a connection's copy of the long terms, spelt backwards, and its version
_SPELT_BACKWARDS = "memdex_spelt_backwards"  # the SQL function that makes that copy's key


def _vocabulary(conn: Any) -> str:
    """The name of this connection's view of FTS5's term list (``fts5vocab``), made on first use."""
    conn.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{_VOCAB} USING fts5vocab(main, chunks_fts, row)")
    return f"temp.{_VOCAB}"


def _backwards(conn: Any) -> str:
    """The name of this connection's copy of the index's long terms spelt backwards (:func:`terms_ending`),
    made again first when the index is not what it was copied from."""
    version = int(conn.execute("PRAGMA main.data_version").fetchone()[0])
    conn.execute(f"CREATE TEMP TABLE IF NOT EXISTS {_BACKWARDS}_of (version INTEGER NOT NULL)")
    if conn.execute(f"SELECT 1 FROM temp.{_BACKWARDS}_of WHERE version = ?", (version,)).fetchone() is None:
        ours = not conn.in_transaction  # a caller's transaction is the caller's to end
        conn.create_function(_SPELT_BACKWARDS, 1, lambda term: term[::-1], deterministic=True)
        conn.execute(f"DROP TABLE IF EXISTS temp.{_BACKWARDS}")
        conn.execute(
            f"CREATE TEMP TABLE {_BACKWARDS} (backwards TEXT PRIMARY KEY, term TEXT NOT NULL, doc INTEGER NOT NULL) WITHOUT ROWID"
        )
        conn.execute(
            f"INSERT INTO temp.{_BACKWARDS} SELECT {_SPELT_BACKWARDS}(term), term, doc FROM {_vocabulary(conn)} "
            "WHERE length(term) >= ? AND term NOT GLOB '*[0-9]*'",
            (ENDING_MIN,),
        )
        conn.execute(f"DELETE FROM temp.{_BACKWARDS}_of")
        conn.execute(f"INSERT INTO temp.{_BACKWARDS}_of VALUES (?)", (version,))
        if ours:
            conn.commit()  # a reader holds no transaction open between reads
    return f"temp.{_BACKWARDS}"


def _ranked(conn: Any, query: _Query, ids: tuple[str, int] | None = None) -> list[ChunkRow]:
    """The BM25 query run (:func:`keyword_search_sql`); ``ids``: only the chunks whose id is ``<`` or ``>=`` this one."""
    condition, params = _condition(query.where)
    bound = () if ids is None else (ids[1],)
    within = () if query.within is None else (query.within, *bound)
    sql = keyword_search_sql(condition, None if ids is None else ids[0], within=query.within is not None)
    rows = conn.execute(sql, (query.expression, *params, *within, *bound, query.limit)).fetchall()
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
