"""The keyword engine: doclists of SQLite's tokens and FTS5's BM25 over them, in SQL.

A doclist is a row per term per block of chunks, as FTS5 keeps them, whose terms come from SQLite's own
tokenizer (:mod:`.tokens`), so both stores rank alike. ``memdex_fts_stats`` holds the corpus statistics
BM25 reads (chunks and their tokens).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ...text.segments import index_text
from .. import bm25
from ..base import ENDING_MIN, Alongside
from ..filters import SearchFilter, prefix_end
from ..records import ChunkRow
from ..sqlite import tokens as fts_tokens
from .connection import PgConn
from .schema import CHUNK_COLUMNS, filter_condition

BLOCK_CHUNKS = 128  # chunks per doclist block: rows of a common term stay under a page (toast_tuple_target)

# One term's part of a chunk's BM25: its hit ``h`` (tf, doc_len), its row count ``df.n``, the index's ``stats``.
_IDF = (
    f"CASE WHEN 2 * df.n >= stats.n THEN {bm25.IDF_FLOOR!r}::float8 "
    "ELSE ln((stats.n - df.n + 0.5::float8) / (df.n + 0.5::float8)) END"
)
_TERM_BM25 = (
    f"({_IDF}) * (h.tf * ({bm25.K1!r}::float8 + 1.0::float8)) / (h.tf + {bm25.K1!r}::float8 "
    f"* (1.0::float8 - {bm25.B!r}::float8 + {bm25.B!r}::float8 * h.doc_len / stats.avgdl))"
)

# Writes -----------------------------------------------------------------------------------------


def add(conn: PgConn, ids: Sequence[int], texts: Sequence[str]) -> fts_tokens.Doclists:
    """Index the chunks ``ids`` holding ``texts`` (one COPY of their doclists); returns the doclists, whose
    lengths and blocks the chunks' rows record. Each text is indexed as segmented for every script, as the
    SQLite index's triggers do."""
    postings = fts_tokens.doclists(ids, [index_text(text) for text in texts], BLOCK_CHUNKS)
    _copy_doclists(conn, postings.rows)
    _count_text(conn, len(ids), sum(postings.lengths))
    return postings


def drop(conn: PgConn, ids: Sequence[int], blocks: Sequence[int], tokens: int) -> None:
    """Take the chunks ``ids`` (of ``blocks``, ``tokens`` long in all) out of their doclists: each doclist
    that holds one is written again without it, or not at all when nothing is left."""
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
    _count_text(conn, -len(ids), -tokens)


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


# Keyword search: FTS5's BM25 over the doclists --------------------------------------------------


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
    tokens = fts_tokens.phrases(terms)
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


def terms_starting(conn: PgConn, prefix: str, limit: int) -> dict[str, int]:
    """The index's terms that begin with ``prefix`` and are longer, the ``limit`` most held, with how many chunks
    hold each: a range of the doclists' primary key (terms in "C" order)."""
    rows = conn.execute(
        "SELECT term, sum(chunks) AS held FROM memdex_doclists WHERE index_id = %s AND term > %s AND term < %s "
        "GROUP BY term ORDER BY held DESC, term LIMIT %s",
        (conn.index_id, prefix, prefix_end(prefix), limit),
    )
    return {str(term): int(held) for term, held in rows}


def terms_ending(conn: PgConn, suffixes: Sequence[str], limit: int) -> list[dict[str, int]]:
    """For each of ``suffixes``, the index's terms of :data:`~..base.ENDING_MIN` characters or more, with no digit,
    that end with it and are longer, the ``limit`` most held, with how many chunks hold each: a range per suffix
    of the doclists' terms spelt backwards (their own index, ``memdex_doclists_backwards``), in one query."""
    if not suffixes:
        return []
    backwards = [suffix[::-1] for suffix in suffixes]
    rows = conn.execute(
        "SELECT s.n, t.term, t.held FROM unnest(%s::text[], %s::text[]) WITH ORDINALITY AS s(low, high, n) "
        "CROSS JOIN LATERAL (SELECT term, sum(chunks) AS held FROM memdex_doclists WHERE index_id = %s "
        "AND length(term) >= %s AND term !~ '[0-9]' AND reverse(term) > s.low AND reverse(term) < s.high "
        "GROUP BY term ORDER BY held DESC, term LIMIT %s) t ORDER BY s.n, t.held DESC, t.term",
        (backwards, [prefix_end(b) for b in backwards], conn.index_id, ENDING_MIN, limit),
    )
    found: list[dict[str, int]] = [{} for _ in suffixes]
    for n, term, held in rows:
        found[int(n) - 1][str(term)] = int(held)
    return found


def texts_holding(conn: PgConn, term: str, limit: int) -> list[str]:
    """The texts of ``limit`` chunks that hold ``term`` (as a phrase, like FTS5), the first by id, as the SQLite
    store reads them: the term's postings without BM25."""
    hits, params = _hits(conn, [term])
    if not hits:
        return []
    sql = f"SELECT c.text FROM memdex_chunks c WHERE c.id IN (SELECT h.chunk_id FROM ({hits}) h ORDER BY 1 LIMIT %s) ORDER BY c.id"
    return [str(text) for (text,) in conn.execute(sql, [*params, limit])]


def keyword_search(
    conn: PgConn,
    terms: Sequence[str],
    limit: int,
    where: SearchFilter | None = None,
    counts: Mapping[str, int] | None = None,
    alongside: Alongside | None = None,
) -> list[ChunkRow]:
    """The ``limit`` best chunks by FTS5's BM25 for the OR of ``terms`` (``rank`` as ``bm25()``: negative,
    lower is better) among those ``where`` allows; ``counts`` are the terms' :func:`term_counts` if known.
    ``alongside`` is not used: one statement ranks the query in the database."""
    if not terms:
        return []
    return _ranked(conn, terms, limit, where, counts if counts is not None else term_counts(conn, terms))


def _ranked(
    conn: PgConn, terms: Sequence[str], limit: int, where: SearchFilter | None, counts: Mapping[str, int]
) -> list[ChunkRow]:
    """BM25 as FTS5 computes it (:mod:`..bm25`; lengths in tokens), in float8, ties in chunk-id order; ``where``
    keeps its chunks before the limit."""
    hits, params = _hits(conn, terms)
    if not hits:
        return []
    held = [q for q, term in enumerate(terms) if counts.get(term)]
    score = f"SELECT h.chunk_id, sum({_TERM_BM25}) AS score FROM ({hits}) h JOIN df USING (q) CROSS JOIN stats GROUP BY h.chunk_id"
    head = (
        "WITH stats AS (SELECT rows::float8 AS n, tokens::float8 / greatest(rows, 1)::float8 AS avgdl "
        "FROM memdex_fts_stats WHERE index_id = %s), "
        "df AS (SELECT * FROM unnest(%s::int[], %s::float8[]) AS d(q, n)) "
    )
    args: list[Any] = [conn.index_id, held, [float(counts[terms[q]]) for q in held], *params]
    allowed, filters = filter_condition(where)
    if where is None or where.empty:  # the best few first, then their text: never a join per scored chunk
        sql = (
            f"{head}SELECT {CHUNK_COLUMNS}, -s.score FROM ({score} ORDER BY score DESC, h.chunk_id LIMIT %s) s "
            "JOIN memdex_chunks c ON c.id = s.chunk_id ORDER BY s.score DESC, c.id"
        )
        args.append(limit)
    else:
        sql = (
            f"{head}SELECT {CHUNK_COLUMNS}, -s.score FROM ({score}) s JOIN memdex_chunks c ON c.id = s.chunk_id "
            f"WHERE {allowed} ORDER BY s.score DESC, c.id LIMIT %s"
        )
        args += [*filters, limit]
    rows = conn.execute(sql, args).fetchall()
    return [ChunkRow(*row) for row in rows]
