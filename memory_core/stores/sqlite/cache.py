"""The embedding cache: vectors by (provider, model, fingerprint, text hash), least recently used dropped first.

It lives in its own file, attached to every writer connection as ``cache`` (:mod:`.schema`), so that no
migration, reset or rebuild of the index ever embeds unchanged text again.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from ..records import CacheKey, pack_vector, unpack_vector


def cached_vectors(
    conn: Any, key: CacheKey, hashes: Sequence[str], dims: int, *, now: float | None = None
) -> dict[str, list[float]]:
    """Vectors of ``dims`` dimensions cached for these chunk hashes; marks the hits as used at ``now``
    (default: the time of day) for the LRU order.

    A cached vector of another size (the provider changed what it returns) is never reused.
    """
    used = time.time() if now is None else now
    found: dict[str, list[float]] = {}
    unique = list(dict.fromkeys(hashes))
    for start in range(0, len(unique), 500):
        part = unique[start : start + 500]
        marks = ",".join("?" * len(part))
        args = (key.provider, key.model, key.fingerprint, *part)
        rows = conn.execute(
            f"SELECT hash, embedding FROM cache.embedding_cache WHERE provider = ? AND model = ? AND fingerprint = ? "
            f"AND dims = ? AND hash IN ({marks})",
            (*args[:3], dims, *part),
        ).fetchall()
        found.update((r[0], unpack_vector(r[1])) for r in rows)
        conn.execute(
            f"UPDATE cache.embedding_cache SET last_used = ? WHERE provider = ? AND model = ? AND fingerprint = ? "
            f"AND hash IN ({marks})",
            (used, *args),
        )
    return found


def cache_vectors(conn: Any, key: CacheKey, vectors: dict[str, Sequence[float]], *, now: float | None = None) -> None:
    """Cache these vectors by chunk hash, as used at ``now`` (default: the time of day)."""
    now = time.time() if now is None else now
    conn.executemany(
        "INSERT INTO cache.embedding_cache(provider, model, fingerprint, hash, dims, embedding, last_used) "
        "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO UPDATE SET embedding = excluded.embedding, "
        "dims = excluded.dims, last_used = excluded.last_used",
        ((key.provider, key.model, key.fingerprint, h, len(v), pack_vector(v), now) for h, v in vectors.items()),
    )


def prune_cache(conn: Any, max_entries: int) -> int:
    """Drop the least recently used cache entries beyond ``max_entries``; returns how many."""
    excess = conn.execute("SELECT count(*) FROM cache.embedding_cache").fetchone()[0] - max_entries
    if excess <= 0:
        return 0
    conn.execute(
        "DELETE FROM cache.embedding_cache WHERE (provider, model, fingerprint, hash) IN "
        "(SELECT provider, model, fingerprint, hash FROM cache.embedding_cache ORDER BY last_used LIMIT ?)",
        (excess,),
    )
    return int(excess)


def cache_size(conn: Any) -> int:
    return int(conn.execute("SELECT count(*) FROM cache.embedding_cache").fetchone()[0])
