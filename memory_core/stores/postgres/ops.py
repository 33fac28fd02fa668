"""The PostgreSQL index: schema and the synchronous operations on it (:class:`~.backend.StoreOps`).

One database holds any number of memories. Every row carries the index it belongs to (``index_id``);
``memdex_memories`` points each memory at its live index, and a rebuild fills a new index beside it and
moves the pointer in one transaction. Each operation runs on the caller's thread with a :class:`PgConn`,
which knows its memory and index; nothing here can name another memory's rows.

Keyword ranking is FTS5's BM25, computed in SQL over doclists (a row per term per block of chunks, as
FTS5 keeps them) whose terms come from SQLite's own tokenizer (:mod:`.fts_tokens`), so both stores rank
alike. Vectors live in one pgvector table per dimension, with an HNSW cosine index; small memories are
scanned exactly.
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from ..filters import SearchFilter, log_date
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
from . import tokens as fts_tokens

SCHEMA_VERSION = 1
BLOCK_CHUNKS = 128  # chunks per doclist block: rows of a common term stay under a page (toast_tuple_target)
HNSW_MAX_DIMS = 2000  # pgvector indexes vectors of up to 2,000 dimensions; longer ones are scanned
VECTOR_DIMS = "vector_dims"  # meta key: the dimension of this index's vectors (its vector table)

# Named migrations, applied once each, in order, under a lock (several hosts may start at once).
MIGRATIONS: list[tuple[str, str]] = [
    (
        "0001_memories_files_chunks_postings_cache",
        """
CREATE TABLE memdex_indexes (
    id bigserial PRIMARY KEY,
    memory text COLLATE "C" NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE memdex_memories (
    memory text COLLATE "C" PRIMARY KEY,
    live bigint NOT NULL REFERENCES memdex_indexes
);
CREATE TABLE memdex_meta (
    index_id bigint NOT NULL REFERENCES memdex_indexes ON DELETE CASCADE,
    key text NOT NULL,
    value text NOT NULL,
    PRIMARY KEY (index_id, key)
);
CREATE TABLE memdex_files (
    index_id bigint NOT NULL REFERENCES memdex_indexes ON DELETE CASCADE,
    path text COLLATE "C" NOT NULL,
    source text NOT NULL,
    hash text NOT NULL,
    mtime_ns bigint NOT NULL,
    size bigint NOT NULL,
    indexed_at float8 NOT NULL,
    body text,
    PRIMARY KEY (index_id, path)
);
CREATE TABLE memdex_chunks (
    id bigserial PRIMARY KEY,
    index_id bigint NOT NULL,
    path text COLLATE "C" NOT NULL,
    source text NOT NULL,
    day date,
    start_line int NOT NULL,
    end_line int NOT NULL,
    hash text NOT NULL,
    text text NOT NULL,
    doc_len int NOT NULL
);
CREATE INDEX memdex_chunks_path ON memdex_chunks (index_id, path, start_line);
CREATE INDEX memdex_chunks_day ON memdex_chunks (index_id, day) WHERE day IS NOT NULL;
CREATE TABLE memdex_postings (
    index_id bigint NOT NULL,
    term text COLLATE "C" NOT NULL,
    chunk_id bigint NOT NULL,
    tf int NOT NULL,
    doc_len int NOT NULL,
    pos int[] NOT NULL,
    PRIMARY KEY (index_id, term, chunk_id) INCLUDE (tf, doc_len, pos)
);
CREATE INDEX memdex_postings_chunk ON memdex_postings (chunk_id);
CREATE TABLE memdex_terms (
    index_id bigint NOT NULL,
    term text COLLATE "C" NOT NULL,
    chunks int NOT NULL,
    PRIMARY KEY (index_id, term)
);
CREATE TABLE memdex_fts_stats (
    index_id bigint PRIMARY KEY REFERENCES memdex_indexes ON DELETE CASCADE,
    rows bigint NOT NULL DEFAULT 0,
    tokens bigint NOT NULL DEFAULT 0
);
CREATE TABLE memdex_cache (
    memory text COLLATE "C" NOT NULL,
    provider text NOT NULL,
    model text NOT NULL,
    fingerprint text NOT NULL,
    hash text NOT NULL,
    dims int NOT NULL,
    embedding bytea NOT NULL,
    last_used float8 NOT NULL,
    PRIMARY KEY (memory, provider, model, fingerprint, hash)
);
CREATE INDEX memdex_cache_last_used ON memdex_cache (memory, last_used);
""",
    ),
    (
        # A row per term per block of chunks (FTS5's doclists) instead of a row per term per chunk: a
        # seventh of the rows to write, and each term's chunk count read from the primary key (no
        # per-term counts to keep). Positions become keys chunk_id << 20 | offset (fts_tokens), so a
        # phrase is a join on key + 1. Existing postings become blocks of one chunk, exactly.
        "0002_block_doclists",
        """
CREATE TABLE memdex_doclists (
    index_id bigint NOT NULL,
    term text COLLATE "C" NOT NULL,
    block bigint NOT NULL,
    chunk_ids bigint[] NOT NULL,
    tfs int[] NOT NULL,
    doc_lens int[] NOT NULL,
    pos bigint[] NOT NULL,
    chunks int GENERATED ALWAYS AS (cardinality(chunk_ids)) STORED,
    PRIMARY KEY (index_id, term, block) INCLUDE (chunks)
) WITH (toast_tuple_target = 8160);
CREATE INDEX memdex_doclists_block ON memdex_doclists (index_id, block);
ALTER TABLE memdex_chunks ADD COLUMN block bigint;
UPDATE memdex_chunks SET block = id;
ALTER TABLE memdex_chunks ALTER COLUMN block SET NOT NULL;
INSERT INTO memdex_doclists (index_id, term, block, chunk_ids, tfs, doc_lens, pos)
    SELECT index_id, term, chunk_id, ARRAY[chunk_id], ARRAY[tf], ARRAY[doc_len],
        ARRAY(SELECT (chunk_id << 20) + p FROM unnest(pos) AS p) FROM memdex_postings;
DROP TABLE memdex_postings;
DROP TABLE memdex_terms;
""",
    ),
]

_LOCK = "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))"


@dataclass
class PgConn:
    """A connection and the index its operations touch.

    The live writer and readers follow the memory's live index (looked up at each transaction); a
    shadow being rebuilt is ``fixed`` to its own.
    """

    raw: Any  # psycopg.Connection
    memory: str
    index_id: int = 0
    fixed: bool = False

    def execute(self, query: str, params: Sequence[Any] | Mapping[str, Any] | None = None) -> Any:
        return self.raw.execute(query, params)


def lock_name(memory: str, purpose: str) -> str:
    """The advisory-lock name of one of a memory's locks (``write``, ``rebuild``)."""
    return f"memdex:{purpose}:{memory}"


# Schema and indexes -----------------------------------------------------------------------------


def prepare(conn: PgConn) -> None:
    """Install pgvector and memdex's tables (the named migrations not yet applied), and give the
    memory a live index when it has none."""
    with conn.raw.transaction():
        conn.execute(_LOCK, ("memdex:migrate",))
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        conn.execute(
            "CREATE TABLE IF NOT EXISTS memdex_migrations "
            "(name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())"
        )
        done = {row[0] for row in conn.execute("SELECT name FROM memdex_migrations")}
        for name, script in MIGRATIONS:
            if name not in done:
                conn.execute(script)
                conn.execute("INSERT INTO memdex_migrations(name) VALUES (%s)", (name,))
        if live_index(conn) is None:
            conn.execute("INSERT INTO memdex_memories(memory, live) VALUES (%s, %s)", (conn.memory, new_index(conn)))


def live_index(conn: PgConn) -> int | None:
    row = conn.execute("SELECT live FROM memdex_memories WHERE memory = %s", (conn.memory,)).fetchone()
    return None if row is None else int(row[0])


def follow_live(conn: PgConn) -> None:
    """Point ``conn`` at its memory's live index (unless it is a shadow's)."""
    if not conn.fixed:
        live = live_index(conn)
        if live is None:
            raise LookupError(f"memory {conn.memory!r} is not in the database (was it dropped?)")
        conn.index_id = live


def new_index(conn: PgConn) -> int:
    """A new, empty index of the memory (a first one, or a rebuild's shadow); returns its id."""
    index_id = int(conn.execute("INSERT INTO memdex_indexes(memory) VALUES (%s) RETURNING id", (conn.memory,)).fetchone()[0])
    conn.execute("INSERT INTO memdex_fts_stats(index_id) VALUES (%s)", (index_id,))
    return index_id


def switch_to(conn: PgConn, index_id: int) -> int:
    """Make ``index_id`` the memory's live index (inside the caller's transaction); returns the old one."""
    old = live_index(conn)
    conn.execute("UPDATE memdex_memories SET live = %s WHERE memory = %s", (index_id, conn.memory))
    _announce(conn, None)
    return old if old is not None else index_id


def drop_index(conn: PgConn, index_id: int) -> None:
    """Delete an index that is no longer live, and every row of it."""
    dims = _dims(conn, index_id)
    if dims is not None:
        conn.execute(f"DELETE FROM memdex_vectors_{dims} WHERE index_id = %s", (index_id,))
    conn.execute("DELETE FROM memdex_doclists WHERE index_id = %s", (index_id,))
    conn.execute("DELETE FROM memdex_chunks WHERE index_id = %s", (index_id,))
    conn.execute("DELETE FROM memdex_indexes WHERE id = %s", (index_id,))


@contextmanager
def transaction(conn: PgConn) -> Iterator[None]:
    """A transaction that writes the memory: one at a time across every host (an advisory lock),
    on the live index as it is once the lock is held."""
    with conn.raw.transaction():
        if not conn.fixed:
            conn.execute(_LOCK, (lock_name(conn.memory, "write"),))
            follow_live(conn)
        yield


# Meta ------------------------------------------------------------------------------------------


def read_meta(conn: PgConn, key: str) -> Any:
    return _meta(conn, conn.index_id, key)


def _meta(conn: PgConn, index_id: int, key: str) -> Any:
    row = conn.execute("SELECT value FROM memdex_meta WHERE index_id = %s AND key = %s", (index_id, key)).fetchone()
    return None if row is None else json.loads(row[0])


def write_meta(conn: PgConn, key: str, value: Any) -> None:
    conn.execute(
        "INSERT INTO memdex_meta(index_id, key, value) VALUES (%s, %s, %s) "
        "ON CONFLICT (index_id, key) DO UPDATE SET value = excluded.value",
        (conn.index_id, key, json.dumps(value, sort_keys=True)),
    )


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
    removed: dict[str, list[int]] = {}
    for cid, path, _, _ in rows:
        removed.setdefault(path, []).append(int(cid))
    if rows:
        ids = [int(r[0]) for r in rows]
        _drop_postings(conn, ids, sorted({int(r[3]) for r in rows}))
        if (dims := _dims(conn)) is not None:
            conn.execute(f"DELETE FROM memdex_vectors_{dims} WHERE chunk_id = ANY(%s)", (ids,))
        _count_text(conn, -len(ids), -sum(int(r[2]) for r in rows))
    return removed


def _drop_postings(conn: PgConn, ids: Sequence[int], blocks: Sequence[int]) -> None:
    """Take the chunks ``ids`` (of ``blocks``) out of their doclists: each doclist that holds one is
    written again without it, or not at all when nothing is left."""
    doclists = conn.execute(
        "DELETE FROM memdex_doclists WHERE index_id = %s AND block = ANY(%s) AND chunk_ids && %s::bigint[] "
        "RETURNING term, block, chunk_ids, tfs, doc_lens, pos",
        (conn.index_id, list(blocks), list(ids)),
    ).fetchall()
    gone = set(ids)
    kept: list[tuple[str, int, str, str, str, str]] = []
    for term, block, chunk_ids, tfs, doc_lens, keys in doclists:
        stay = [at for at, cid in enumerate(chunk_ids) if cid not in gone]
        if stay:
            places = ",".join(str(key) for key in keys if key >> fts_tokens.POSITION_BITS not in gone)
            kept.append((term, block, *(",".join(str(array[at]) for at in stay) for array in (chunk_ids, tfs, doc_lens)), places))
    _copy_doclists(conn, kept)


def _count_text(conn: PgConn, rows: int, tokens: int) -> None:
    """Keep BM25's corpus statistics (chunks and their tokens) in step with a change."""
    conn.execute(
        "UPDATE memdex_fts_stats SET rows = rows + %s, tokens = tokens + %s WHERE index_id = %s",
        (rows, tokens, conn.index_id),
    )


_COPY_TEXT = str.maketrans({"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"})


def _copy_doclists(conn: PgConn, doclists: Iterable[tuple[str, int, str, str, str, str]]) -> None:
    """COPY doclists ``(term, block, chunk ids, tfs, lengths, positions)``, lists comma-separated, in
    text format: SQLite's strings go to the server as they are, with no Python object per posting."""
    with conn.raw.cursor() as cur, cur.copy(
        "COPY memdex_doclists (index_id, term, block, chunk_ids, tfs, doc_lens, pos) FROM STDIN"
    ) as copy:
        head = f"{conn.index_id}\t"
        copy.write("".join(f"{head}{term.translate(_COPY_TEXT)}\t{block}\t{{{ids}}}\t{{{tfs}}}\t{{{lens}}}\t{{{pos}}}\n"
                           for term, block, ids, tfs, lens, pos in doclists))  # fmt: skip


def _insert_chunks(conn: PgConn, changes: Sequence[FileChange]) -> list[list[int]]:
    """Write the chunks of ``changes`` and their doclists (two COPYs); returns each file's chunk ids."""
    total = sum(len(change.chunks) for change in changes)
    if not total:
        return [[] for _ in changes]
    ids = [int(r[0]) for r in conn.execute("SELECT nextval('memdex_chunks_id_seq') FROM generate_series(1, %s)", (total,))]
    texts = [chunk.text.replace("\x00", "\ufffd") for change in changes for chunk in change.chunks]  # no NUL in text
    postings = fts_tokens.doclists(ids, texts, BLOCK_CHUNKS)
    chunks = [(change, chunk) for change in changes for chunk in change.chunks]
    rows = zip(ids, chunks, texts, postings.lengths, postings.blocks, strict=True)
    with conn.raw.cursor() as cur:
        columns = "id, index_id, path, source, day, start_line, end_line, hash, text, doc_len, block"
        with cur.copy(f"COPY memdex_chunks ({columns}) FROM STDIN (FORMAT BINARY)") as copy:
            copy.set_types(["int8", "int8", "text", "text", "date", "int4", "int4", "text", "text", "int4", "int8"])
            for cid, (change, chunk), text, length, block in rows:
                copy.write_row((cid, conn.index_id, change.path, change.source, log_date(change.path), chunk.start_line,
                                chunk.end_line, chunk.hash, text, length, block))  # fmt: skip
    _copy_doclists(conn, postings.rows)
    _count_text(conn, total, sum(postings.lengths))
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
        write_meta(conn, FILES_VERSION, secrets.token_hex(8))
    removed = _delete_chunks(conn, known) if known else {}  # a file's chunks are indexed with its row
    added = _insert_chunks(conn, changes)
    bodies = [c.text.replace("\x00", "\ufffd") if c.text is not None and c.source == "memory" else None for c in changes]
    conn.execute(
        "INSERT INTO memdex_files(index_id, path, source, hash, mtime_ns, size, indexed_at, body) "
        "SELECT %s, * FROM unnest(%s::text[], %s::text[], %s::text[], %s::bigint[], %s::bigint[], %s::float8[], %s::text[]) "
        "ON CONFLICT (index_id, path) DO UPDATE SET source = excluded.source, hash = excluded.hash, "
        "mtime_ns = excluded.mtime_ns, size = excluded.size, indexed_at = excluded.indexed_at, body = excluded.body",
        (conn.index_id, paths, [c.source for c in changes], [c.state.hash for c in changes],
         [c.state.mtime_ns for c in changes], [c.state.size for c in changes], [time.time()] * len(changes), bodies),
    )  # fmt: skip
    _announce(conn, paths)
    return [(removed.get(path, []), ids) for path, ids in zip(paths, added, strict=True)]


def file_text(conn: PgConn, path: str) -> str | None:
    """The content of the Markdown file at answer path ``path``, as last indexed; None when not kept."""
    row = conn.execute("SELECT body FROM memdex_files WHERE index_id = %s AND path = %s", (conn.index_id, path)).fetchone()
    return None if row is None else row[0]


CHANGES_CHANNEL = "memdex_changes"
NOTIFY_BYTES = 6000  # paths per notification, in bytes: PostgreSQL refuses payloads from 8,000 bytes


def _announce(conn: PgConn, paths: Sequence[str] | None) -> None:
    """Tell every listening host that these paths of the live index changed (None: all of them), when
    the transaction commits. A shadow's writes are not live yet and are not announced."""
    if conn.fixed:
        return
    for batch in [None] if paths is None else _batches(paths):
        payload = json.dumps({"memory": conn.memory, "paths": batch})
        conn.execute("SELECT pg_notify(%s, %s)", (CHANGES_CHANNEL, payload))


def _batches(paths: Sequence[str]) -> Iterator[list[str]]:
    """``paths`` in lists of about NOTIFY_BYTES of JSON each."""
    batch: list[str] = []
    size = 0
    for path in paths:
        if batch and size + len(path) + 4 > NOTIFY_BYTES:
            yield batch
            batch, size = [], 0
        batch.append(path)
        size += len(path) + 4  # the quotes, a comma and a space
    if batch:
        yield batch


def parse_announcement(payload: str, memory: str) -> tuple[bool, list[str] | None]:
    """(whether ``payload`` is about ``memory``, its changed paths or None for all)."""
    try:
        data = json.loads(payload)
    except ValueError:
        return False, None
    if not isinstance(data, dict) or data.get("memory") != memory:
        return False, None
    paths = data.get("paths")
    return True, [str(p) for p in paths] if isinstance(paths, list) else None


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
        write_meta(conn, FILES_VERSION, secrets.token_hex(8))
        _announce(conn, paths)
    return removed


def file_paths(conn: PgConn) -> list[str]:
    return [r[0] for r in conn.execute("SELECT path FROM memdex_files WHERE index_id = %s ORDER BY path", (conn.index_id,))]


_CHUNK = "c.id, c.path, c.source, c.start_line, c.end_line, c.text"


def chunks_of(conn: PgConn, paths: Sequence[str], limit: int, where: SearchFilter | None = None) -> list[ChunkRow]:
    """Up to ``limit`` chunks of ``paths`` in file and line order (``rank`` 0), within ``where``."""
    if not paths:
        return []
    condition, params = _condition(where)
    rows = conn.execute(
        f"SELECT {_CHUNK}, 0.0 FROM memdex_chunks c WHERE c.index_id = %s AND c.path = ANY(%s) AND {condition} "
        "ORDER BY c.path, c.start_line LIMIT %s",
        (conn.index_id, list(paths), *params, limit),
    )
    return [ChunkRow(*row) for row in rows]


def counts(conn: PgConn) -> tuple[int, int]:
    """(files, chunks) in the index."""
    files = conn.execute("SELECT count(*) FROM memdex_files WHERE index_id = %s", (conn.index_id,)).fetchone()[0]
    chunks = conn.execute("SELECT rows FROM memdex_fts_stats WHERE index_id = %s", (conn.index_id,)).fetchone()
    return int(files), int(chunks[0]) if chunks else 0


def _condition(where: SearchFilter | None) -> tuple[str, tuple[Any, ...]]:
    """A filter as a condition over ``memdex_chunks c``: the day column holds each daily log's date."""
    if where is None or where.empty:
        return "true", ()
    parts: list[str] = []
    params: list[Any] = []
    if where.path_prefix is not None:
        parts.append("(c.path = %s OR (c.path >= %s AND c.path < %s))")
        params += where.prefix_bounds()
    if where.after is not None or where.before is not None:
        parts.append("c.day IS NOT NULL")
        if where.after is not None:
            parts.append("c.day >= %s")
            params.append(where.after)
        if where.before is not None:
            parts.append("c.day <= %s")
            params.append(where.before)
    if where.source is not None:
        parts.append("c.source = %s")
        params.append(where.source)
    return " AND ".join(parts), tuple(params)


# Vectors ---------------------------------------------------------------------------------------


def _dims(conn: PgConn, index_id: int | None = None) -> int | None:
    dims = _meta(conn, conn.index_id if index_id is None else index_id, VECTOR_DIMS)
    return None if dims is None else int(dims)


def stamp_vectors(conn: PgConn, delta: VectorDelta) -> VectorDelta:
    """Give the index a new vector version (inside the transaction that changed the vectors)."""
    delta.before = read_meta(conn, VECTORS_VERSION)
    delta.after = secrets.token_hex(8)
    write_meta(conn, VECTORS_VERSION, delta.after)
    return delta


def ensure_vector_table(conn: PgConn, dims: int) -> None:
    """Give the index ``dims``-dimensional vectors: their table (created once for every memory, with
    its HNSW index) and, when the index had vectors of another size, none of those left."""
    current = _dims(conn)
    if current == dims:
        return
    with transaction(conn):
        conn.execute(_LOCK, ("memdex:migrate",))
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
    dims = _dims(conn)
    if dims is None or not chunks:
        return
    with conn.raw.cursor() as cur, cur.copy(f"COPY memdex_vectors_{dims} (index_id, chunk_id, part, embedding) FROM STDIN") as copy:
        for row, vector in vector_rows(chunks):
            copy.write_row((conn.index_id, row // VECTOR_PARTS, row % VECTOR_PARTS, vector_text(vector)))


def _lacking(conn: PgConn) -> str:
    """A condition over ``memdex_chunks c``: the chunk has no vector yet."""
    dims = _dims(conn)
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
    dims = _dims(conn)
    if dims != len(vector):
        return []
    query = vector_text(vector)
    table = f"memdex_vectors_{dims}"
    filtered = where is not None and not where.empty
    if not exact and not filtered and dims <= HNSW_MAX_DIMS:
        k = limit * VECTOR_PARTS
        conn.execute(f"SET LOCAL hnsw.ef_search = {min(1000, max(ef_search, k))}")
        rows = conn.execute(
            f"SELECT {_CHUNK}, v.distance FROM (SELECT DISTINCT ON (chunk_id) chunk_id, distance FROM "
            f"(SELECT chunk_id, embedding <=> %s::vector AS distance FROM {table} WHERE index_id = %s "
            "ORDER BY embedding <=> %s::vector LIMIT %s) n ORDER BY chunk_id, distance) v "
            "JOIN memdex_chunks c ON c.id = v.chunk_id ORDER BY v.distance, c.id LIMIT %s",
            (query, conn.index_id, query, k, limit),
        ).fetchall()
        if len(rows) == limit:
            return [ChunkRow(*row) for row in rows]
    condition, params = _condition(where)
    allowed = "" if not filtered else f" AND v.chunk_id IN (SELECT c.id FROM memdex_chunks c WHERE c.index_id = %s AND {condition})"
    rows = conn.execute(
        f"SELECT {_CHUNK}, v.distance FROM (SELECT v.chunk_id, min(v.embedding <=> %s::vector) AS distance "
        f"FROM {table} v WHERE v.index_id = %s{allowed} GROUP BY v.chunk_id ORDER BY 2, 1 LIMIT %s) v "
        "JOIN memdex_chunks c ON c.id = v.chunk_id ORDER BY v.distance, c.id",
        (query, conn.index_id, *((conn.index_id, *params) if filtered else ()), limit),
    ).fetchall()
    return [ChunkRow(*row) for row in rows]


# Embedding cache (one per memory: it outlives the memory's rebuilds) ---------------------------


def cached_vectors(conn: PgConn, key: CacheKey, hashes: Sequence[str], dims: int) -> dict[str, list[float]]:
    """Vectors of ``dims`` dimensions cached for these chunk hashes; marks the hits as just used (LRU)."""
    unique = list(dict.fromkeys(hashes))
    if not unique:
        return {}
    where = "memory = %s AND provider = %s AND model = %s AND fingerprint = %s AND hash = ANY(%s)"
    args = (conn.memory, key.provider, key.model, key.fingerprint, unique)
    rows = conn.execute(f"SELECT hash, embedding FROM memdex_cache WHERE {where} AND dims = %s", (*args, dims)).fetchall()
    if rows:
        conn.execute(f"UPDATE memdex_cache SET last_used = %s WHERE {where}", (time.time(), *args))
    return {r[0]: unpack_vector(bytes(r[1])) for r in rows}


def cache_vectors(conn: PgConn, key: CacheKey, vectors: dict[str, Sequence[float]]) -> None:
    now = time.time()
    with conn.raw.cursor() as cur:
        cur.executemany(
            "INSERT INTO memdex_cache(memory, provider, model, fingerprint, hash, dims, embedding, last_used) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT (memory, provider, model, fingerprint, hash) "
            "DO UPDATE SET embedding = excluded.embedding, dims = excluded.dims, last_used = excluded.last_used",
            [(conn.memory, key.provider, key.model, key.fingerprint, h, len(v), pack_vector(v), now) for h, v in vectors.items()],
        )


def prune_cache(conn: PgConn, max_entries: int) -> int:
    """Drop the memory's least recently used cache entries beyond ``max_entries``; returns how many."""
    excess = int(conn.execute("SELECT count(*) FROM memdex_cache WHERE memory = %s", (conn.memory,)).fetchone()[0]) - max_entries
    if excess <= 0:
        return 0
    conn.execute(
        "DELETE FROM memdex_cache WHERE memory = %s AND (provider, model, fingerprint, hash) IN "
        "(SELECT provider, model, fingerprint, hash FROM memdex_cache WHERE memory = %s ORDER BY last_used LIMIT %s)",
        (conn.memory, conn.memory, excess),
    )
    return excess


# Keyword search: FTS5's BM25 over the postings --------------------------------------------------


# A token's postings, a row per chunk: set-returning functions in the select list run in step, and
# take half the time of a lateral unnest(a, b, c).
_POSTINGS = (
    "SELECT unnest(chunk_ids) AS chunk_id, unnest(tfs) AS tf, unnest(doc_lens) AS doc_len "
    "FROM memdex_doclists WHERE index_id = %s AND term = %s"
)
_KEYS = "SELECT unnest(pos) FROM memdex_doclists WHERE index_id = %s AND term = %s"


def _phrase_hits(q: int, tokens: Sequence[str], index_id: int) -> tuple[str, list[Any]]:
    """(SQL, parameters) of the rows (q, chunk_id, tf, doc_len) of the chunks holding ``tokens`` one after
    another (a term FTS5 cuts in several, like ``postgres_url``), as FTS5 matches a phrase: the first
    token's places joined to the next tokens' at the next places (position keys, unique per term:
    :data:`.fts_tokens.POSITION_BITS`; a join, three times faster than ``IN``, which de-duplicates)."""
    joins = " ".join(f"JOIN ({_KEYS}) AS t{j}(k) ON t{j}.k = t0.k + {j}" for j in range(1, len(tokens)))
    sql = (
        f"SELECT %s AS q, m.chunk_id, m.tf, p.doc_len FROM (SELECT t0.k >> {fts_tokens.POSITION_BITS} AS chunk_id, "
        f"count(*)::int AS tf FROM ({_KEYS}) AS t0(k) {joins} GROUP BY 1) m JOIN ({_POSTINGS}) p USING (chunk_id)"
    )
    return sql, [q, *(arg for token in tokens for arg in (index_id, token)), index_id, tokens[0]]


def _hits(conn: PgConn, terms: Sequence[str]) -> tuple[str, list[Any]]:
    """(SQL, parameters) of the rows (q, chunk_id, tf, doc_len) of every term's chunks, the term numbered
    by its place in ``terms``: a token's postings, or a phrase's matches (:func:`_phrase_hits`)."""
    parts: list[str] = []
    params: list[Any] = []
    for q, term in enumerate(terms):
        tokens = fts_tokens.phrase(term)
        if len(tokens) == 1:
            parts.append(f"SELECT %s AS q, p.* FROM ({_POSTINGS}) p")
            params += [q, conn.index_id, tokens[0]]
        elif tokens:
            sql, args = _phrase_hits(q, tokens, conn.index_id)
            parts.append(sql)
            params += args
    return " UNION ALL ".join(parts), params


def term_counts(conn: PgConn, terms: Sequence[str]) -> dict[str, int]:
    """How many chunks hold each of ``terms`` (as a phrase, like FTS5): a token's count is the sum of its
    doclists' sizes, read from the primary key; a phrase's is counted from its matches."""
    found = dict.fromkeys(terms, 0)
    tokens = {term: fts_tokens.phrase(term) for term in terms}
    single: dict[str, list[str]] = {}  # a token -> the query terms that are it ("backup", "backups")
    for term, tok in tokens.items():
        if len(tok) == 1:
            single.setdefault(tok[0], []).append(term)
    if single:
        rows = conn.execute(
            "SELECT term, sum(chunks) FROM memdex_doclists WHERE index_id = %s AND term = ANY(%s) GROUP BY term",
            (conn.index_id, list(single)),
        )
        for token, held in rows:
            for term in single[token]:
                found[term] = int(held)
    phrases = [term for term, tok in tokens.items() if len(tok) > 1]
    if phrases:
        hits, params = _hits(conn, phrases)
        for q, held in conn.execute(f"SELECT q, count(*) FROM ({hits}) h GROUP BY q", params):
            found[phrases[q]] = int(held)
    return found


def keyword_search(
    conn: PgConn,
    terms: Sequence[str],
    limit: int,
    where: SearchFilter | None = None,
    counts: Mapping[str, int] | None = None,
) -> list[ChunkRow]:
    """The ``limit`` best chunks by FTS5's BM25 for the OR of ``terms`` (``rank`` as ``bm25()``: negative,
    lower is better) among those ``where`` allows; ``counts`` are the terms' :func:`term_counts` if known."""
    if not terms:
        return []
    return _ranked(conn, terms, limit, where, counts if counts is not None else term_counts(conn, terms))


def _ranked(
    conn: PgConn, terms: Sequence[str], limit: int, where: SearchFilter | None, counts: Mapping[str, int]
) -> list[ChunkRow]:
    """BM25 as FTS5 computes it (k1 = 1.2, b = 0.75, IDF floored at 1e-6, lengths in tokens), in float8,
    ties in chunk-id order; ``where`` keeps its chunks before the limit."""
    hits, params = _hits(conn, terms)
    if not hits:
        return []
    held = [q for q, term in enumerate(terms) if counts.get(term)]
    score = (
        "SELECT h.chunk_id, sum(greatest(ln((stats.n - df.n + 0.5::float8) / (df.n + 0.5::float8)), 1e-6::float8) "
        "* (h.tf * (1.2::float8 + 1.0::float8)) / (h.tf + 1.2::float8 * (1.0::float8 - 0.75::float8 "
        f"+ 0.75::float8 * h.doc_len / stats.avgdl))) AS score FROM ({hits}) h JOIN df USING (q) CROSS JOIN stats "
        "GROUP BY h.chunk_id"
    )
    head = (
        "WITH stats AS (SELECT rows::float8 AS n, tokens::float8 / greatest(rows, 1)::float8 AS avgdl "
        "FROM memdex_fts_stats WHERE index_id = %s), "
        "df AS (SELECT * FROM unnest(%s::int[], %s::float8[]) AS d(q, n)) "
    )
    args: list[Any] = [conn.index_id, held, [float(counts[terms[q]]) for q in held], *params]
    condition, filters = _condition(where)
    if where is None or where.empty:  # the best few first, then their text: never a join per scored chunk
        sql = (
            f"{head}SELECT {_CHUNK}, -s.score FROM ({score} ORDER BY score DESC, h.chunk_id LIMIT %s) s "
            "JOIN memdex_chunks c ON c.id = s.chunk_id ORDER BY s.score DESC, c.id"
        )
        args.append(limit)
    else:
        sql = (
            f"{head}SELECT {_CHUNK}, -s.score FROM ({score}) s JOIN memdex_chunks c ON c.id = s.chunk_id "
            f"WHERE {condition} ORDER BY s.score DESC, c.id LIMIT %s"
        )
        args += [*filters, limit]
    rows = conn.execute(sql, args).fetchall()
    return [ChunkRow(*row) for row in rows]
