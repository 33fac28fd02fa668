"""The embedding cache in PostgreSQL: one per memory, shared by its indexes, so it outlives their rebuilds."""

from __future__ import annotations

import time
from collections.abc import Sequence

from ..records import CacheKey, pack_vector, unpack_vector
from .connection import PgConn


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
