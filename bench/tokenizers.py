"""Keyword terms for every script: the alternatives measured on plain SQLite FTS5 (a standalone experiment).

Usage (from the repository root)::

    .venv/bin/python bench/tokenizers.py [--sets cmrc,jsquad,scifact,cisi] [--candidates NAME,...]
        [--eval-dir ../shared/eval] [--json out.json]

For each candidate tokenization and each document set it builds one contentless FTS5 table (one row per
document, the note text ``# title``, a blank line, the body: exactly the files ``bench/quality.py`` writes),
searches the OR of the query's quoted terms ranked by ``bm25()``, and reports document-level nDCG@10 (the
README's definition, via ``bench.quality.ndcg_at``), the index size (the database file after VACUUM: the
FTS5 index alone, no stored text) and the build time (Python pre-processing + inserts + commit).

Candidates (``index`` is what the table indexes; ``query`` the terms OR-ed):

* ``unicode61``  - raw text, ``porter unicode61``; query = the query's words as unicode61 cuts them, stop words
  included: plain FTS5 (memdex before issue 22 indexed the same, and asked for the same words less its stop words).
  The plain FTS5 floor ``bench/robustness.py`` puts beside every set x variant (:data:`PLAIN`).
* ``trigram``    - raw text, FTS5 ``trigram``; query = the 3-character pieces of each query term (the
  README's reference; a 1-2 character term gives no piece and cannot match).
* ``bigram``     - Han/kana runs cut into overlapping bigrams (a 1-character run stays a unigram), then
  ``porter unicode61``; the query's runs cut the same way.
* ``uni+bi``     - runs indexed as unigrams and bigrams; query bigrams (a 1-character run: the unigram),
  so a 1-character term matches anywhere.
* ``uni+bi/q1``  - the same index; the query asks for unigrams and bigrams.
* ``segments``   - ``memory_core.text.segments``: ``uni+bi`` plus CJK query stop words, Korean particles,
  camelCase parts, NFKC and ``remove_diacritics 2``.
* ``segments/noidf`` - the same index and terms, ranked by the number of distinct query terms a
  document holds (no IDF, no tf), bm25 breaking ties: does weighing the grams by rarity matter?
* ``jieba``      - jieba's search-mode words (``cut_for_search``), query the same minus CJK stop words.
  Only when ``jieba`` is installed (it is not a memdex dependency).
* ``janome``     - janome's Japanese words (pure-Python morphological analysis), the query the same minus
  stop words. Only when installed, and only when named (``--sets jsquad --candidates janome``): slow.

LoCoMo (``--sets locomo``) is scored at session level: each session file is one row, and a question's
relevant files are its evidence's sessions (categories 1-4), not the engine's chunk level.

Beside the figures it prints, for the English sets, how many documents' pre-processed text differs from
the raw text (``bigram``/``uni+bi`` must change nothing without CJK). The evaluation data is read where it
lies (``../shared/eval``), never copied.
"""

from __future__ import annotations

import argparse
import json
import re
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:  # so `python bench/tokenizers.py` works without an install
    sys.path.insert(0, str(REPO_ROOT))

from bench.quality import (
    DEFAULT_EVAL_DIR,
    DOCUMENT_FETCH,
    MAX_RESULTS,
    Suite,
    file_grades,
    load_cisi,
    load_cmrc,
    load_jsquad,
    load_locomo,
    load_scifact,
    ndcg_at,
)
from bench.variants import CJK_RUN
from memdex.memory_core.text import segments
from memdex.memory_core.text.stopwords import ENGLISH_STOPWORDS
from memdex.memory_core.text.terms import FTS_TOKENIZER, query_terms

_WORD = re.compile(r"[^\W_]+")


def _bigrams(run: str) -> list[str]:
    return [run[i : i + 2] for i in range(len(run) - 1)] or [run]


def _grams(run: str, unigrams: bool) -> list[str]:
    return [*run, *_bigrams(run)] if unigrams and len(run) > 1 else _bigrams(run)


def cut_runs(text: str, unigrams: bool) -> str:
    """``text`` with every Han/kana run replaced by its space-separated grams (other text untouched)."""
    return CJK_RUN.sub(lambda m: f" {' '.join(_grams(m.group(0), unigrams))} ", text)


def run_terms(text: str, unigrams: bool) -> list[str]:
    """Query terms: the grams of each Han/kana run, memdex's terms for the rest."""
    grams = [g for m in CJK_RUN.finditer(text) for g in _grams(m.group(0), unigrams)]
    return list(dict.fromkeys([*grams, *query_terms(CJK_RUN.sub(" ", text))]))


def trigram_terms(text: str) -> list[str]:
    """The 3-character pieces of each query word (the README's trigram reference)."""
    pieces = [w[i : i + 3] for w in _WORD.findall(text.lower()) for i in range(len(w) - 2)]
    return list(dict.fromkeys(pieces))


@dataclass(frozen=True)
class Candidate:
    """One way to cut text into keyword terms."""

    name: str
    tokenizer: str
    index: Callable[[str], str]
    query: Callable[[str], list[str]]
    coordination: bool = False  # rank by distinct matched terms (bm25 breaks ties) instead of bm25


def plain_words(text: str) -> list[str]:
    """A query as plain FTS5 would take it: every word unicode61 cuts, lower-cased, each once (at most 64)."""
    return list(dict.fromkeys(re.findall(r"[^\W_]+", text.lower())))[:64]


# The plain FTS5 floor: porter unicode61 over the raw text, the OR of the query's words ranked by bm25().
PLAIN = Candidate("unicode61", "porter unicode61", str, plain_words)


def _jieba_candidate() -> Candidate | None:
    try:
        import jieba
    except ImportError:
        return None
    jieba.setLogLevel(60)
    stop = set(segments.CJK_STOPWORDS)

    def words(text: str) -> list[str]:
        return [w for w in jieba.cut_for_search(text) if w.strip() and _WORD.search(w)]

    def terms(text: str) -> list[str]:
        found = list(dict.fromkeys(w.lower() for w in words(text)))
        return [w for w in found if w not in stop and w not in ENGLISH_STOPWORDS] or found

    return Candidate("jieba", "porter unicode61", lambda text: " ".join(words(text)), terms)


def _janome_candidate() -> Candidate | None:
    try:
        from janome.tokenizer import Tokenizer
    except ImportError:
        return None
    tokenizer = Tokenizer(wakati=True)
    stop = set(segments.CJK_STOPWORDS)

    def words(text: str) -> list[str]:
        return [w for w in tokenizer.tokenize(text) if isinstance(w, str) and _WORD.search(w)]

    def terms(text: str) -> list[str]:
        found = list(dict.fromkeys(w.lower() for w in words(text)))
        return [w for w in found if w not in stop and w not in ENGLISH_STOPWORDS] or found

    return Candidate("janome", "porter unicode61", lambda text: " ".join(words(text)), terms)


OPT_IN = frozenset({"janome"})  # measured only when named in --candidates (pure Python: a minute for JSQuAD)


def candidates() -> list[Candidate]:
    """Every candidate, in table order."""
    found = [
        PLAIN,
        Candidate("trigram", "trigram", str, trigram_terms),
        Candidate("bigram", "porter unicode61", lambda t: cut_runs(t, False), lambda t: run_terms(t, False)),
        Candidate("uni+bi", "porter unicode61", lambda t: cut_runs(t, True), lambda t: run_terms(t, False)),
        Candidate("uni+bi/q1", "porter unicode61", lambda t: cut_runs(t, True), lambda t: run_terms(t, True)),
        Candidate("segments", FTS_TOKENIZER, segments.index_text, query_terms),
        Candidate("segments/noidf", FTS_TOKENIZER, segments.index_text, query_terms, True),
    ]
    return found + [c for c in (_jieba_candidate(), _janome_candidate()) if c]


LOADERS: dict[str, Callable[[Path], Suite]] = {
    "cmrc": load_cmrc,
    "jsquad": load_jsquad,
    "scifact": load_scifact,
    "cisi": load_cisi,
    "locomo": load_locomo,
}


@dataclass(frozen=True)
class Result:
    candidate: str
    dataset: str
    ndcg: float
    index_bytes: int
    build_seconds: float
    queries: int
    changed_docs: int  # documents whose pre-processed text differs from the raw text
    scores: tuple[float, ...] = ()  # each query's nDCG@10, in the suite's order (workspaces, then queries)


def _match(terms: Sequence[str]) -> str:
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)


def _rank(conn: sqlite3.Connection, terms: Sequence[str], coordination: bool, limit: int = MAX_RESULTS) -> list[int]:
    """Row ids of the best ``limit`` rows for the OR of ``terms``."""
    if not terms:
        return []
    if not coordination:
        sql = "SELECT rowid FROM t WHERE t MATCH ? ORDER BY bm25(t) LIMIT ?"
        return [r for (r,) in conn.execute(sql, (_match(terms), limit))]
    held: dict[int, int] = {}
    for term in terms:
        for (rowid,) in conn.execute("SELECT rowid FROM t WHERE t MATCH ?", (_match([term]),)):
            held[rowid] = held.get(rowid, 0) + 1
    bm25 = dict(conn.execute("SELECT rowid, bm25(t) FROM t WHERE t MATCH ?", (_match(terms),)))
    return sorted(held, key=lambda r: (-held[r], bm25[r]))[:limit]


def measure(
    candidate: Candidate, suite: Suite, folder: Path, units: Callable[[str], Sequence[str]] | None = None
) -> Result:
    """Build the candidate's index of each workspace of ``suite`` and score the queries of its headline row by
    file-level nDCG@10. A row per file; or, with ``units``, a row per piece of a file it cuts (memdex's chunks),
    the :data:`DOCUMENT_FETCH` best rows collapsed to their files, as memdex's answers are judged."""
    groups = dict(suite.rows)[suite.headline]
    scores: list[float] = []
    size = changed = 0
    seconds = 0.0
    fetch = MAX_RESULTS if units is None else DOCUMENT_FETCH
    for workspace in suite.workspaces:
        owner: list[str] = []  # each row's file
        path = folder / f"{suite.name}-{workspace.name}-{candidate.name.replace('/', '-')}.sqlite"
        conn = sqlite3.connect(path)
        started = time.perf_counter()
        conn.execute(f"CREATE VIRTUAL TABLE t USING fts5(text, content='', tokenize={candidate.tokenizer!r})")
        for name in sorted(workspace.files):
            raw = workspace.files[name]
            indexed = [(unit, candidate.index(unit)) for unit in ([raw] if units is None else units(raw))]
            changed += any(text.split() != unit.split() for unit, text in indexed)
            for _, text in indexed:
                owner.append(name)
                conn.execute("INSERT INTO t(rowid, text) VALUES (?, ?)", (len(owner), text))
        conn.commit()
        seconds += time.perf_counter() - started
        conn.execute("VACUUM")
        size += path.stat().st_size
        for query in (q for q in workspace.queries if q.group in groups):
            relevant = file_grades(query.relevant)
            ranked = _rank(conn, candidate.query(query.text), candidate.coordination, fetch)
            files = list(dict.fromkeys(owner[r - 1] for r in ranked))[:MAX_RESULTS]
            covered = [frozenset(u for u in relevant if u.path == file) for file in files]
            scores.append(ndcg_at(MAX_RESULTS, covered, relevant))
        conn.close()
        path.unlink()
    mean = sum(scores) / len(scores)
    return Result(candidate.name, suite.name, mean, size, seconds, len(scores), changed, tuple(scores))


def render(results: Sequence[Result], sets: Sequence[str]) -> str:
    """One row per candidate: nDCG@10 per set, then index KiB / build seconds per set."""
    by = {(r.candidate, r.dataset): r for r in results}
    names = list(dict.fromkeys(r.candidate for r in results))
    head = f"{'candidate':<16}" + "".join(f"{s:>9}" for s in sets) + "".join(f"{s + ' KiB/s':>20}" for s in sets)
    lines = [head, "-" * len(head)]
    for name in names:
        cells = "".join(f"{by[name, s].ndcg:>9.3f}" if (name, s) in by else f"{'-':>9}" for s in sets)
        costs = "".join(
            f"{by[name, s].index_bytes / 1024:>12,.0f} {by[name, s].build_seconds:>6.2f}s"
            if (name, s) in by else f"{'-':>20}"
            for s in sets
        )  # fmt: skip
        lines.append(f"{name:<16}{cells}{costs}")
    changed = [
        f"{r.candidate} {r.dataset}: {r.changed_docs}" for r in results if r.dataset in ("scifact", "cisi", "locomo")
    ]
    lines.append("documents changed by the pre-processing (English sets): " + "; ".join(changed))
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--sets", default=",".join(LOADERS), help="comma-separated (default: %(default)s)")
    parser.add_argument("--candidates", help="comma-separated candidate names (default: all)")
    parser.add_argument("--eval-dir", type=Path, default=DEFAULT_EVAL_DIR)
    parser.add_argument("--json", type=Path, metavar="OUT", help="also write the results as JSON")
    args = parser.parse_args(argv)
    sets = args.sets.split(",")
    named = args.candidates.split(",") if args.candidates else None
    chosen = [c for c in candidates() if (c.name in named if named else c.name not in OPT_IN)]
    results: list[Result] = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in sets:
            suite = LOADERS[name](args.eval_dir)
            for candidate in chosen:
                results.append(measure(candidate, suite, Path(tmp)))
                r = results[-1]
                print(f"{name} {candidate.name}: ndcg@10 {r.ndcg:.3f} ({r.queries} q), "
                      f"{r.index_bytes / 1024:,.0f} KiB, {r.build_seconds:.2f}s", file=sys.stderr, flush=True)  # fmt: skip
    print(render(results, sets))
    if args.json:
        args.json.write_text(json.dumps([r.__dict__ for r in results], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
