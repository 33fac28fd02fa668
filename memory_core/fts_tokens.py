"""Text cut into keyword terms exactly as the SQLite index's FTS5 cuts it, for stores that keep their own
keyword index (PostgreSQL).

Keyword ranking must not depend on the store, and BM25 starts from which terms a text holds and how
often: porter stemming over unicode61 folding. Rather than a look-alike, this runs SQLite's own
tokenizer: texts are written into an in-memory FTS5 table and read back through ``fts5vocab``, each term
with its positions, then rolled back. One in-memory database per thread (about 5,000 chunks a second).
"""

from __future__ import annotations

import json
import threading
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


def _instances(texts: Sequence[str], sql: str) -> list[Any]:
    """The rows of ``sql`` over ``doc_terms`` once ``texts`` are in ``doc`` (row ids are their places)."""
    conn = _connection()
    conn.execute("BEGIN")
    try:
        conn.executemany("INSERT INTO doc(rowid, text) VALUES (?, ?)", enumerate(texts))
        return list(conn.execute(sql))
    finally:
        conn.execute("ROLLBACK")


def tokenize(texts: Sequence[str]) -> list[Tokens]:
    """Each text's terms with their positions, and its length, as the SQLite index records them (one
    JSON object per text: reading fts5vocab a row at a time in Python costs twice as much)."""
    found = [Tokens({}, 0) for _ in texts]
    sql = (
        "SELECT doc, json_group_object(term, json(places)) FROM "
        "(SELECT doc, term, json_group_array(offset) AS places FROM doc_terms GROUP BY doc, term) GROUP BY doc"
    )
    for row, terms in _instances(texts, sql):
        positions: dict[str, list[int]] = json.loads(terms)
        found[row] = Tokens(positions, sum(map(len, positions.values())))
    return found


@lru_cache(maxsize=4096)
def phrase(term: str) -> tuple[str, ...]:
    """A query term's tokens in order: FTS5 matches a quoted term as this phrase (one token, mostly)."""
    at = tokenize([term])[0].positions
    return tuple(token for _, token in sorted((p, token) for token, places in at.items() for p in places))
