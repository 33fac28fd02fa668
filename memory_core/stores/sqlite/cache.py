"""The embedding cache: vectors by (provider, model, fingerprint, text hash), least recently used dropped first."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..records import CacheKey, pack_vector, unpack_vector


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


def cache_size(conn: Any) -> int:
    return int(conn.execute("SELECT count(*) FROM embedding_cache").fetchone()[0])
