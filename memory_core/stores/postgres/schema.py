"""The PostgreSQL index's tables: named migrations, a memory's indexes (live, shadow, dropped) and their meta.

A rebuild fills a new index beside the live one and moves the memory's pointer to it in one
transaction (:func:`switch_to`); the old index is then deleted with every row of it.
"""

from __future__ import annotations

import json
from typing import Any

from ..filters import POSTGRES, SearchFilter
from .connection import LOCK, PgConn, live_index
from .notify import announce

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
    (
        # A filter reads a daily log's date from its path, in PostgreSQL as in SQLite (filters.py): the
        # column that held it goes, and its index with it.
        "0003_dates_from_paths",
        "ALTER TABLE memdex_chunks DROP COLUMN day;",
    ),
    (
        # A query word that notes hold only as a compound's last part ("Migration" of "Datenbankmigration")
        # is looked up among the terms that end with it: the long terms, spelt backwards, in an index of their
        # own (postings.terms_ending), those with no digit. 7 is base.ENDING_MIN.
        "0004_terms_backwards",
        "CREATE INDEX memdex_doclists_backwards ON memdex_doclists (index_id, reverse(term)) "
        "WHERE length(term) >= 7 AND term !~ '[0-9]';",
    ),
]


def prepare(conn: PgConn) -> None:
    """Install pgvector and memdex's tables (the named migrations not yet applied), and give the
    memory a live index when it has none."""
    with conn.raw.transaction():
        conn.execute(LOCK, ("memdex:migrate",))
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


def new_index(conn: PgConn) -> int:
    """A new, empty index of the memory (a first one, or a rebuild's shadow); returns its id."""
    index_id = int(conn.execute("INSERT INTO memdex_indexes(memory) VALUES (%s) RETURNING id", (conn.memory,)).fetchone()[0])
    conn.execute("INSERT INTO memdex_fts_stats(index_id) VALUES (%s)", (index_id,))
    return index_id


def switch_to(conn: PgConn, index_id: int) -> int:
    """Make ``index_id`` the memory's live index (inside the caller's transaction); returns the old one."""
    old = live_index(conn)
    conn.execute("UPDATE memdex_memories SET live = %s WHERE memory = %s", (index_id, conn.memory))
    announce(conn, None)
    return old if old is not None else index_id


def drop_index(conn: PgConn, index_id: int) -> None:
    """Delete an index that is no longer live, and every row of it."""
    dims = vector_dims(conn, index_id)
    if dims is not None:
        conn.execute(f"DELETE FROM memdex_vectors_{dims} WHERE index_id = %s", (index_id,))
    conn.execute("DELETE FROM memdex_doclists WHERE index_id = %s", (index_id,))
    conn.execute("DELETE FROM memdex_chunks WHERE index_id = %s", (index_id,))
    conn.execute("DELETE FROM memdex_indexes WHERE id = %s", (index_id,))


# Meta ------------------------------------------------------------------------------------------


def read_meta(conn: PgConn, key: str) -> Any:
    return meta(conn, conn.index_id, key)


def meta(conn: PgConn, index_id: int, key: str) -> Any:
    row = conn.execute("SELECT value FROM memdex_meta WHERE index_id = %s AND key = %s", (index_id, key)).fetchone()
    return None if row is None else json.loads(row[0])


def write_meta(conn: PgConn, key: str, value: Any) -> None:
    conn.execute(
        "INSERT INTO memdex_meta(index_id, key, value) VALUES (%s, %s, %s) "
        "ON CONFLICT (index_id, key) DO UPDATE SET value = excluded.value",
        (conn.index_id, key, json.dumps(value, sort_keys=True)),
    )


def vector_dims(conn: PgConn, index_id: int | None = None) -> int | None:
    """The dimension of the index's vectors (of ``conn``'s index unless ``index_id`` names one); None before any."""
    dims = meta(conn, conn.index_id if index_id is None else index_id, VECTOR_DIMS)
    return None if dims is None else int(dims)


# Reading chunks ---------------------------------------------------------------------------------

CHUNK_COLUMNS = "c.id, c.path, c.source, c.start_line, c.end_line, c.text"  # a ChunkRow's, of memdex_chunks c


def filter_condition(where: SearchFilter | None) -> tuple[str, tuple[str, ...]]:
    """A filter as a condition over ``memdex_chunks`` (:meth:`~..filters.SearchFilter.sql`); ``TRUE`` for none."""
    return (where or SearchFilter()).sql(POSTGRES)
