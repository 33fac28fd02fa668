"""The PostgreSQL index's operations (:class:`~..base.StoreOps`): files, chunks and vectors, and the rest re-exported.

Each runs on the caller's thread with a :class:`~.connection.PgConn`, inside its owner's transaction
where it writes. The parts live beside it: :mod:`.connection` (the live index a connection follows),
:mod:`.schema` (migrations, indexes, meta), :mod:`.postings` (the keyword engine), :mod:`.cache` (the
embedding cache) and :mod:`.notify` (telling other hosts what changed). Vectors live in one pgvector table per dimension, with an HNSW
cosine index; small memories are scanned exactly.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Iterable, Sequence

from ...text.chunking import ChunkMark
from .. import records
from ..filters import SearchFilter
from ..records import ChunkRow, ChunkVectors, FileChange, FileState, IndexedTail, TailChange, VectorDelta, vector_rows
from . import postings
from .cache import cache_vectors as cache_vectors
from .cache import cached_vectors as cached_vectors
from .cache import prune_cache as prune_cache
from .connection import LOCK, PgConn
from .connection import transaction as transaction
from .notify import announce
from .postings import keyword_search as keyword_search
from .postings import term_counts as term_counts
from .postings import terms_ending as terms_ending
from .postings import terms_starting as terms_starting
from .postings import texts_holding as texts_holding
from .schema import CHUNK_COLUMNS, VECTOR_DIMS, filter_condition, vector_dims
from .schema import read_meta as read_meta
from .schema import write_meta as write_meta

SCHEMA_VERSION = 1
KEEPS_TEXT = True  # hosts without the files read them from the database
HNSW_MAX_DIMS = 2000  # pgvector indexes vectors of up to 2,000 dimensions; longer ones are scanned

# Files and chunks ------------------------------------------------------------------------------


def file_states(conn: PgConn) -> dict[str, FileState]:
    rows = conn.execute("SELECT path, hash, mtime_ns, size FROM memdex_files WHERE index_id = %s", (conn.index_id,))
    return {r[0]: FileState(r[1], int(r[2]), int(r[3])) for r in rows}


def _delete_chunks(conn: PgConn, paths: Sequence[str]) -> dict[str, list[int]]:
    """Delete the chunks of ``paths`` with their postings and vectors; returns their ids by path."""
    rows = conn.execute(
        "DELETE FROM memdex_chunks WHERE index_id = %s AND path = ANY(%s) RETURNING id, path, doc_len, block",
        (conn.index_id, list(paths)),
    ).fetchall()
    _drop_derived(conn, rows)
    removed: dict[str, list[int]] = {}
    for cid, path, _, _ in rows:
        removed.setdefault(path, []).append(int(cid))
    return removed


def _drop_derived(conn: PgConn, rows: Sequence[tuple[int, str, int, int]]) -> None:
    """Drop the postings and vectors of deleted chunks (``id, path, doc_len, block`` rows)."""
    if rows:
        ids = [int(r[0]) for r in rows]
        postings.drop(conn, ids, sorted({int(r[3]) for r in rows}), sum(int(r[2]) for r in rows))
        if (dims := vector_dims(conn)) is not None:
            conn.execute(f"DELETE FROM memdex_vectors_{dims} WHERE chunk_id = ANY(%s)", (ids,))


def _insert_chunks(conn: PgConn, changes: Sequence[FileChange]) -> list[list[int]]:
    """Write the chunks of ``changes`` and their doclists (two COPYs); returns each file's chunk ids."""
    total = sum(len(change.chunks) for change in changes)
    if not total:
        return [[] for _ in changes]
    ids = [int(r[0]) for r in conn.execute("SELECT nextval('memdex_chunks_id_seq') FROM generate_series(1, %s)", (total,))]
    texts = [chunk.text.replace("\x00", "\ufffd") for change in changes for chunk in change.chunks]  # no NUL in text
    doclists = postings.add(conn, ids, texts)
    chunks = [(change, chunk) for change in changes for chunk in change.chunks]
    rows = zip(ids, chunks, texts, doclists.lengths, doclists.blocks, strict=True)
    with conn.raw.cursor() as cur:
        columns = "id, index_id, path, source, start_line, end_line, hash, text, doc_len, block"
        with cur.copy(f"COPY memdex_chunks ({columns}) FROM STDIN (FORMAT BINARY)") as copy:
            copy.set_types(["int8", "int8", "text", "text", "int4", "int4", "text", "text", "int4", "int8"])
            for cid, (change, chunk), text, length, block in rows:
                copy.write_row((cid, conn.index_id, change.path, change.source, chunk.start_line,
                                chunk.end_line, chunk.hash, text, length, block))  # fmt: skip
    per_file, at = [], 0
    for change in changes:
        per_file.append(ids[at : at + len(change.chunks)])
        at += len(change.chunks)
    return per_file


def replace_files(conn: PgConn, changes: Sequence[FileChange]) -> list[tuple[list[int], list[int]]]:
    """Replace the chunks of several files (inside the caller's transaction) in a few statements for all
    of them; returns each file's (removed ids, new ids).

    A Markdown file's text is kept, so that hosts without the files can answer memory_get (transcripts,
    often large and read rarely, are not).
    """
    if not changes:
        return []
    paths = [change.path for change in changes]
    rows = conn.execute("SELECT path FROM memdex_files WHERE index_id = %s AND path = ANY(%s)", (conn.index_id, paths))
    known = [row[0] for row in rows]
    if len(known) < len(set(paths)):
        write_meta(conn, records.FILES_VERSION, secrets.token_hex(8))
    removed = _delete_chunks(conn, known) if known else {}  # a file's chunks are indexed with its row
    added = _insert_chunks(conn, changes)
    _write_files(conn, changes)
    return [(removed.get(path, []), ids) for path, ids in zip(paths, added, strict=True)]


def _write_files(conn: PgConn, changes: Sequence[FileChange]) -> None:
    """Record the files' states (and a Markdown file's text) and tell other hosts."""
    paths = [change.path for change in changes]
    bodies = [c.text.replace("\x00", "\ufffd") if c.text is not None and c.source == "memory" else None for c in changes]
    conn.execute(
        "INSERT INTO memdex_files(index_id, path, source, hash, mtime_ns, size, indexed_at, body) "
        "SELECT %s, * FROM unnest(%s::text[], %s::text[], %s::text[], %s::bigint[], %s::bigint[], %s::float8[], %s::text[]) "
        "ON CONFLICT (index_id, path) DO UPDATE SET source = excluded.source, hash = excluded.hash, "
        "mtime_ns = excluded.mtime_ns, size = excluded.size, indexed_at = excluded.indexed_at, body = excluded.body",
        (conn.index_id, paths, [c.source for c in changes], [c.state.hash for c in changes],
         [c.state.mtime_ns for c in changes], [c.state.size for c in changes], [time.time()] * len(changes), bodies),
    )  # fmt: skip
    announce(conn, paths)


def indexed_tails(conn: PgConn, paths: Sequence[str], chunks: int) -> dict[str, IndexedTail]:
    """The state and last ``chunks`` chunks (by id: a file's chunks are inserted in order) of ``paths``."""
    rows = conn.execute(
        "SELECT f.path, f.hash, f.mtime_ns, f.size, c.id, c.start_line, c.end_line, c.hash FROM memdex_files f "
        "LEFT JOIN LATERAL (SELECT id, start_line, end_line, hash FROM memdex_chunks WHERE index_id = f.index_id "
        "AND path = f.path ORDER BY id DESC LIMIT %s) c ON true WHERE f.index_id = %s AND f.path = ANY(%s) ORDER BY f.path, c.id",
        (chunks, conn.index_id, list(paths)),
    ).fetchall()
    tails: dict[str, IndexedTail] = {}
    for path, hash_, mtime_ns, size, *chunk in rows:
        tail = tails.setdefault(path, IndexedTail(FileState(hash_, int(mtime_ns), int(size)), []))
        if chunk[0] is not None:
            tail.chunks.append(ChunkMark(int(chunk[0]), int(chunk[1]), int(chunk[2]), chunk[3]))
    return tails


def replace_tail(conn: PgConn, tail: TailChange) -> list[int] | None:
    """Replace the chunks after ``tail.after`` (inside the caller's transaction); None when the index no
    longer holds the file at ``tail.old`` with those chunks (another write came first)."""
    change = tail.change
    row = conn.execute(
        "SELECT hash, size FROM memdex_files WHERE index_id = %s AND path = %s FOR UPDATE", (conn.index_id, change.path)
    ).fetchone()
    held = [(int(r[0]), r[1]) for r in conn.execute(
        "SELECT id, hash FROM memdex_chunks WHERE index_id = %s AND path = %s AND id >= %s ORDER BY id",
        (conn.index_id, change.path, tail.after.id),
    )]  # fmt: skip
    if row is None or (row[0], int(row[1])) != (tail.old.hash, tail.old.size) or held != tail.expected():
        return None
    rows = conn.execute(
        "DELETE FROM memdex_chunks WHERE index_id = %s AND id = ANY(%s) RETURNING id, path, doc_len, block",
        (conn.index_id, [mark.id for mark in tail.dropped]),
    ).fetchall()
    _drop_derived(conn, rows)
    added = _insert_chunks(conn, [change])[0]
    _write_files(conn, [change])
    return added


def file_text(conn: PgConn, path: str) -> str | None:
    """The content of the Markdown file at answer path ``path``, as last indexed; None when not kept."""
    row = conn.execute("SELECT body FROM memdex_files WHERE index_id = %s AND path = %s", (conn.index_id, path)).fetchone()
    return None if row is None else row[0]


def touch_file(conn: PgConn, path: str, state: FileState) -> None:
    """Record a new mtime/size for a file whose content hash did not change."""
    conn.execute(
        "UPDATE memdex_files SET mtime_ns = %s, size = %s WHERE index_id = %s AND path = %s",
        (state.mtime_ns, state.size, conn.index_id, path),
    )


def delete_files(conn: PgConn, paths: Iterable[str]) -> list[int]:
    """Remove files and every row derived from them (inside the caller's transaction); returns the
    ids of the chunks removed."""
    paths = list(paths)
    if not paths:
        return []
    removed = [cid for ids in _delete_chunks(conn, paths).values() for cid in ids]
    gone = conn.execute("DELETE FROM memdex_files WHERE index_id = %s AND path = ANY(%s)", (conn.index_id, paths))
    if gone.rowcount:
        write_meta(conn, records.FILES_VERSION, secrets.token_hex(8))
        announce(conn, paths)
    return removed


def file_paths(conn: PgConn) -> list[str]:
    return [r[0] for r in conn.execute("SELECT path FROM memdex_files WHERE index_id = %s ORDER BY path", (conn.index_id,))]


def file_hashes(conn: PgConn, paths: Sequence[str]) -> dict[str, str]:
    rows = conn.execute(
        "SELECT path, hash FROM memdex_files WHERE index_id = %s AND path = ANY(%s)", (conn.index_id, list(paths))
    )
    return {r[0]: r[1] for r in rows}


def chunks_of(conn: PgConn, paths: Sequence[str], limit: int, where: SearchFilter | None = None) -> list[ChunkRow]:
    """Up to ``limit`` chunks of ``paths`` (``rank`` 0), within ``where``: each file's first chunk, in file order,
    then each one's second, and so on (one file's: in line order)."""
    if not paths:
        return []
    condition, params = filter_condition(where)
    rows = conn.execute(
        f"SELECT {CHUNK_COLUMNS}, 0.0 FROM memdex_chunks c WHERE c.index_id = %s AND c.path = ANY(%s) AND {condition} "
        "ORDER BY row_number() OVER (PARTITION BY c.path ORDER BY c.start_line), c.path LIMIT %s",
        (conn.index_id, list(paths), *params, limit),
    )
    return [ChunkRow(*row) for row in rows]


def chunks_starting(conn: PgConn, places: Sequence[tuple[str, int]]) -> list[ChunkRow]:
    """The chunk that starts at each (path, line) of ``places`` that has one (``rank`` 0)."""
    sql = (f"SELECT {CHUNK_COLUMNS}, 0.0 FROM memdex_chunks c WHERE c.index_id = %s AND c.path = %s "
           "AND c.start_line = %s LIMIT 1")  # fmt: skip
    return [ChunkRow(*row) for path, line in places for row in conn.execute(sql, (conn.index_id, path, line))]


def counts(conn: PgConn) -> tuple[int, int]:
    """(files, chunks) in the index."""
    files = conn.execute("SELECT count(*) FROM memdex_files WHERE index_id = %s", (conn.index_id,)).fetchone()[0]
    chunks = conn.execute("SELECT rows FROM memdex_fts_stats WHERE index_id = %s", (conn.index_id,)).fetchone()
    return int(files), int(chunks[0]) if chunks else 0


# Vectors ---------------------------------------------------------------------------------------


def stamp_vectors(conn: PgConn, delta: VectorDelta) -> VectorDelta:
    """Give the index a new vector version (inside the transaction that changed the vectors)."""
    delta.before = read_meta(conn, records.VECTORS_VERSION)
    delta.after = secrets.token_hex(8)
    write_meta(conn, records.VECTORS_VERSION, delta.after)
    return delta


def ensure_vector_table(conn: PgConn, dims: int) -> None:
    """Give the index ``dims``-dimensional vectors: their table (created once for every memory, with
    its HNSW index) and, when the index had vectors of another size, none of those left."""
    current = vector_dims(conn)
    if current == dims:
        return
    with transaction(conn):
        conn.execute(LOCK, ("memdex:migrate",))
        table = f"memdex_vectors_{int(dims)}"
        conn.execute(
            f"CREATE TABLE IF NOT EXISTS {table} (index_id bigint NOT NULL, chunk_id bigint NOT NULL, "
            f"part smallint NOT NULL, embedding vector({int(dims)}) NOT NULL, PRIMARY KEY (chunk_id, part))"
        )
        conn.execute(f"CREATE INDEX IF NOT EXISTS {table}_index ON {table} (index_id)")
        if dims <= HNSW_MAX_DIMS:
            conn.execute(f"CREATE INDEX IF NOT EXISTS {table}_hnsw ON {table} USING hnsw (embedding vector_cosine_ops)")
        if current is not None:
            conn.execute(f"DELETE FROM memdex_vectors_{current} WHERE index_id = %s", (conn.index_id,))
        write_meta(conn, VECTOR_DIMS, dims)
        stamp_vectors(conn, VectorDelta())


def vector_text(vector: Sequence[float]) -> str:
    """A vector as pgvector's text form."""
    return "[" + ",".join(map(repr, map(float, vector))) + "]"


def insert_vectors(conn: PgConn, chunks: Sequence[ChunkVectors]) -> None:
    """Store the vectors of chunks that have none (inside the caller's transaction)."""
    dims = vector_dims(conn)
    if dims is None or not chunks:
        return
    with conn.raw.cursor() as cur, cur.copy(f"COPY memdex_vectors_{dims} (index_id, chunk_id, part, embedding) FROM STDIN") as copy:
        for row, vector in vector_rows(chunks):
            copy.write_row((conn.index_id, row // records.VECTOR_PARTS, row % records.VECTOR_PARTS, vector_text(vector)))


def _lacking(conn: PgConn) -> str:
    """A condition over ``memdex_chunks c``: the chunk has no vector yet."""
    dims = vector_dims(conn)
    if dims is None:
        return "true"
    return f"NOT EXISTS (SELECT 1 FROM memdex_vectors_{dims} v WHERE v.chunk_id = c.id AND v.part = 0)"


def chunks_without_vectors(conn: PgConn, after: int, limit: int) -> list[tuple[int, str, str]]:
    """(id, hash, text) of chunks with an id above ``after`` that have no vector yet, in id order."""
    rows = conn.execute(
        f"SELECT c.id, c.hash, c.text FROM memdex_chunks c WHERE c.index_id = %s AND c.id > %s AND {_lacking(conn)} "
        "ORDER BY c.id LIMIT %s",
        (conn.index_id, after, limit),
    )
    return [(int(r[0]), r[1], r[2]) for r in rows]


def chunks_lacking_vectors(conn: PgConn, chunks: Sequence[tuple[int, str]]) -> set[int]:
    """The ids among ``(id, hash)`` pairs whose chunk still exists with that hash and has no vector."""
    if not chunks:
        return set()
    rows = conn.execute(
        "SELECT c.id FROM memdex_chunks c JOIN unnest(%s::bigint[], %s::text[]) AS w(id, hash) "
        f"ON c.id = w.id AND c.hash = w.hash WHERE c.index_id = %s AND {_lacking(conn)}",
        ([c[0] for c in chunks], [c[1] for c in chunks], conn.index_id),
    )
    return {int(r[0]) for r in rows}


def count_without_vectors(conn: PgConn) -> int:
    sql = f"SELECT count(*) FROM memdex_chunks c WHERE c.index_id = %s AND {_lacking(conn)}"
    return int(conn.execute(sql, (conn.index_id,)).fetchone()[0])


def vector_search(
    conn: PgConn, vector: Sequence[float], limit: int, where: SearchFilter | None = None, *, exact: bool = True, ef_search: int = 100
) -> list[ChunkRow]:
    """The ``limit`` chunks nearest to ``vector`` among those ``where`` allows, each at its nearest
    part; ``rank`` holds the cosine distance.

    ``exact`` scans every vector of the index (a filtered search always does: pgvector's HNSW filters
    after its candidate list, which would return short lists). Otherwise the HNSW index proposes
    ``ef_search`` candidates; when they hold fewer than ``limit`` of this index's chunks (other
    memories share the table), the exact scan answers instead. Runs inside the caller's transaction.
    """
    dims = vector_dims(conn)
    if dims != len(vector):
        return []
    query = vector_text(vector)
    table = f"memdex_vectors_{dims}"
    filtered = where is not None and not where.empty
    if not exact and not filtered and dims <= HNSW_MAX_DIMS:
        k = limit * records.VECTOR_PARTS
        conn.execute(f"SET LOCAL hnsw.ef_search = {min(1000, max(ef_search, k))}")
        rows = conn.execute(
            f"SELECT {CHUNK_COLUMNS}, v.distance FROM (SELECT DISTINCT ON (chunk_id) chunk_id, distance FROM "
            f"(SELECT chunk_id, embedding <=> %s::vector AS distance FROM {table} WHERE index_id = %s "
            "ORDER BY embedding <=> %s::vector LIMIT %s) n ORDER BY chunk_id, distance) v "
            "JOIN memdex_chunks c ON c.id = v.chunk_id ORDER BY v.distance, c.id LIMIT %s",
            (query, conn.index_id, query, k, limit),
        ).fetchall()
        if len(rows) == limit:
            return [ChunkRow(*row) for row in rows]
    condition, params = filter_condition(where)
    # The filter is tested once per file, not per chunk (it reads only the path and the source, which a
    # file's chunks share): the chunks of the allowed files come from the path index.
    allowed = "" if not filtered else (
        " AND v.chunk_id IN (SELECT c.id FROM memdex_chunks c WHERE c.index_id = %s AND c.path IN "
        f"(SELECT path FROM memdex_files WHERE index_id = %s AND {condition}))"
    )
    rows = conn.execute(
        f"SELECT {CHUNK_COLUMNS}, v.distance FROM (SELECT v.chunk_id, min(v.embedding <=> %s::vector) AS distance "
        f"FROM {table} v WHERE v.index_id = %s{allowed} GROUP BY v.chunk_id ORDER BY 2, 1 LIMIT %s) v "
        "JOIN memdex_chunks c ON c.id = v.chunk_id ORDER BY v.distance, c.id",
        (query, conn.index_id, *((conn.index_id, conn.index_id, *params) if filtered else ()), limit),
    ).fetchall()
    return [ChunkRow(*row) for row in rows]
