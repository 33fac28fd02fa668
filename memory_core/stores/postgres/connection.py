"""A connection to a memory's index in PostgreSQL, the live index it follows and its advisory locks.

One database holds any number of memories. Every row carries the index it belongs to (``index_id``);
``memdex_memories`` points each memory at its live index. Each operation runs on the caller's thread
with a :class:`PgConn`, which knows its memory and index, so nothing can name another memory's rows.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

LOCK = "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))"  # a named lock held to the transaction's end


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


@contextmanager
def transaction(conn: PgConn) -> Iterator[None]:
    """A transaction that writes the memory: one at a time across every host (an advisory lock),
    on the live index as it is once the lock is held."""
    with conn.raw.transaction():
        if not conn.fixed:
            conn.execute(LOCK, (lock_name(conn.memory, "write"),))
            follow_live(conn)
        yield
