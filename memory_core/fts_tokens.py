"""Text cut into keyword terms exactly as the SQLite index's FTS5 cuts it, for stores that keep their own
keyword index (PostgreSQL).

Keyword ranking must not depend on the store, and BM25 starts from which terms a text holds and how
often: porter stemming over unicode61 folding. Rather than a look-alike, this runs SQLite's own
tokenizer: texts are written into an in-memory FTS5 table and read back through ``fts5vocab``, each term
with its positions, then rolled back. One in-memory database per thread (2,000-7,000 chunks a second).
"""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from . import db
from .store import FTS_TOKENIZER

_local = threading.local()


@dataclass(frozen=True)
class Tokens:
    """The terms of one text, each with its token positions, and the text's length in tokens."""

    positions: dict[str, list[int]]
    length: int


def _connection() -> Any:
    conn = getattr(_local, "conn", None)
    if conn is None:
        conn = db.driver().module.connect(":memory:", isolation_level=None, check_same_thread=False)
        conn.execute(f"CREATE VIRTUAL TABLE doc USING fts5(text, tokenize='{FTS_TOKENIZER}')")
        conn.execute("CREATE VIRTUAL TABLE doc_terms USING fts5vocab(doc, 'instance')")
        _local.conn = conn
    return conn


def tokenize(texts: Sequence[str]) -> list[Tokens]:
    """Each text's terms and length, as the SQLite index records them."""
    conn = _connection()
    found: list[defaultdict[str, list[int]]] = [defaultdict(list) for _ in texts]
    conn.execute("BEGIN")
    try:
        conn.executemany("INSERT INTO doc(rowid, text) VALUES (?, ?)", enumerate(texts))
        for term, row, offset in conn.execute("SELECT term, doc, offset FROM doc_terms ORDER BY doc, offset"):
            found[row][term].append(offset)
    finally:
        conn.execute("ROLLBACK")
    return [Tokens(dict(terms), sum(map(len, terms.values()))) for terms in found]


@lru_cache(maxsize=4096)
def phrase(term: str) -> tuple[str, ...]:
    """A query term's tokens in order: FTS5 matches a quoted term as this phrase (one token, mostly)."""
    positions = tokenize([term])[0].positions
    return tuple(token for _, token in sorted((p, token) for token, at in positions.items() for p in at))
