"""Text cut into keyword terms exactly as the SQLite index's FTS5 cuts it, for stores that keep their own
keyword index (PostgreSQL).

Keyword ranking must not depend on the store, and BM25 starts from which terms a text holds and how
often: porter stemming over unicode61 folding. Rather than a look-alike, this runs SQLite's own
tokenizer: texts are written into an in-memory FTS5 table and read back through ``fts5vocab``, then
rolled back. One in-memory database per thread (about 6,000 chunks a second).
"""

from __future__ import annotations

import json
import threading
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from . import db
from .store import FTS_TOKENIZER

_local = threading.local()


@dataclass(frozen=True)
class Tokens:
    """The terms of one text with how often each occurs, and the text's length in tokens."""

    counts: dict[str, int]
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
    """Each text's terms, counted, and its length, as the SQLite index records them (one JSON list of
    terms per text: reading fts5vocab row by row in Python would cost three times as much)."""
    found = [Tokens({}, 0) for _ in texts]
    for row, terms in _instances(texts, "SELECT doc, json_group_array(term) FROM doc_terms GROUP BY doc"):
        listed = json.loads(terms)
        found[row] = Tokens(dict(Counter(listed)), len(listed))
    return found


def positions(texts: Sequence[str]) -> list[dict[str, list[int]]]:
    """Each text's terms with their token positions (to find phrases)."""
    found: list[defaultdict[str, list[int]]] = [defaultdict(list) for _ in texts]
    for term, row, offset in _instances(texts, "SELECT term, doc, offset FROM doc_terms ORDER BY doc, offset"):
        found[row][term].append(offset)
    return [dict(terms) for terms in found]


def occurrences(tokens: Sequence[str], at: dict[str, list[int]]) -> int:
    """How often ``tokens`` occur one after another in a text whose term positions are ``at``."""
    first, rest = at.get(tokens[0], []), [set(at.get(token, ())) for token in tokens[1:]]
    return sum(all(start + n + 1 in later for n, later in enumerate(rest)) for start in first)


@lru_cache(maxsize=4096)
def phrase(term: str) -> tuple[str, ...]:
    """A query term's tokens in order: FTS5 matches a quoted term as this phrase (one token, mostly)."""
    at = positions([term])[0]
    return tuple(token for _, token in sorted((p, token) for token, places in at.items() for p in places))
