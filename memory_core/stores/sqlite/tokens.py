"""Text cut into keyword terms by SQLite's own FTS5 tokenizer, away from any index: a query term's tokens, as
the SQLite store counts a term (:func:`phrases`), and the postings of stores that keep their own keyword index
(PostgreSQL).

Keyword ranking must not depend on the store, and BM25 starts from which terms a text holds and how
often: porter stemming over unicode61 folding. Rather than a look-alike, this runs SQLite's own
tokenizer: texts are written into an in-memory FTS5 table and read back through ``fts5vocab``, each term
with its positions, then rolled back. One in-memory database per thread.

:func:`doclists` gives new chunks' postings already grouped as the PostgreSQL store keeps them, a row per term
per block of chunks, aggregated by SQLite (about 4,000 chunks a second); :func:`phrase` cuts a query term.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ...text.terms import FTS_TOKENIZER
from . import db

_local = threading.local()
# A token's place is stored as one key, chunk_id << POSITION_BITS | its offset in the chunk, so a phrase's
# next token is at key + 1 whatever the chunk (a chunk of at most 8,192 tokens holds far fewer than 2^20).
POSITION_BITS = 20


def _connection() -> Any:
    conn = getattr(_local, "conn", None)
    if conn is None:
        conn = db.driver().module.connect(":memory:", isolation_level=None, check_same_thread=False)
        conn.execute(f"CREATE VIRTUAL TABLE doc USING fts5(text, tokenize='{FTS_TOKENIZER}')")
        conn.execute("CREATE VIRTUAL TABLE doc_terms USING fts5vocab(doc, 'instance')")
        conn.execute("CREATE TEMP TABLE hits (term TEXT, doc INTEGER, tf INTEGER, places TEXT)")
        conn.execute("CREATE TEMP TABLE docs (doc INTEGER PRIMARY KEY, block INTEGER, len INTEGER)")
        _local.conn = conn
    return conn


@dataclass(frozen=True)
class Doclists:
    """New chunks' postings: each chunk's length in tokens and block, and for each block each term's
    doclist ``(term, block, chunk ids, tfs, chunk lengths, places)``, the last four as comma-separated
    lists: the first three line up, a chunk's entry each; places are the term's position keys."""

    lengths: list[int]
    blocks: list[int]
    rows: list[tuple[str, int, str, str, str, str]]


def doclists(ids: Sequence[int], texts: Sequence[str], block_chunks: int) -> Doclists:
    """The postings of the chunks ``ids`` (ascending) with ``texts``, in blocks of ``block_chunks``
    chunks, each block named by its first chunk's id: grouped and joined inside SQLite, so Python
    handles a row per doclist rather than one per term per chunk."""
    conn = _connection()
    conn.execute("BEGIN")
    try:
        conn.executemany("INSERT INTO doc(rowid, text) VALUES (?, ?)", zip(ids, texts, strict=True))
        conn.execute(
            f"INSERT INTO hits SELECT term, doc, count(*), group_concat((doc << {POSITION_BITS}) + offset) "
            "FROM doc_terms GROUP BY term, doc"
        )
        held = dict(conn.execute("SELECT doc, sum(tf) FROM hits GROUP BY doc"))
        lengths = [int(held.get(cid, 0)) for cid in ids]
        blocks = [ids[at - at % block_chunks] for at in range(len(ids))]
        conn.executemany("INSERT INTO docs VALUES (?, ?, ?)", zip(ids, blocks, lengths, strict=True))
        rows = conn.execute(
            "SELECT h.term, d.block, group_concat(h.doc), group_concat(h.tf), group_concat(d.len), group_concat(h.places) "
            "FROM hits h JOIN docs d USING (doc) GROUP BY h.term, d.block"
        ).fetchall()
        return Doclists(lengths, blocks, rows)
    finally:
        conn.execute("ROLLBACK")


def phrases(terms: Iterable[str]) -> dict[str, tuple[str, ...]]:
    """Each of ``terms`` as its tokens in order: FTS5 matches a quoted term as this phrase (one token, mostly).
    Remembered; the terms not cut before are cut together, in one pass (a misspelt word's hints count some 300)."""
    asked = list(dict.fromkeys(terms))
    found = {term: kept for term in asked if (kept := _cut.get(term)) is not None}
    if new := [term for term in asked if term not in found]:
        places: dict[int, list[tuple[int, str]]] = {}  # a term's number in ``new`` -> (offset, token) of its tokens
        conn = _connection()
        conn.execute("BEGIN")
        try:
            conn.executemany("INSERT INTO doc(rowid, text) VALUES (?, ?)", enumerate(new, start=1))
            for at, offset, token in conn.execute("SELECT doc, offset, term FROM doc_terms"):
                places.setdefault(at, []).append((offset, token))
        finally:
            conn.execute("ROLLBACK")
        cut = {term: tuple(token for _, token in sorted(places.get(at, []))) for at, term in enumerate(new, start=1)}
        if len(_cut) + len(cut) > _CUT_KEPT:
            _cut.clear()
        _cut.update(cut)
        found |= cut
    return found


def phrase(term: str) -> tuple[str, ...]:
    """A query term's tokens in order (:func:`phrases`)."""
    return phrases([term])[term]


_CUT_KEPT = 16_384  # terms remembered, all threads together; forgotten all at once when full
_cut: dict[str, tuple[str, ...]] = {}
