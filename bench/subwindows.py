"""Sub-window vectors for small embedding models: does scoring a chunk by its best part beat its whole vector?

Usage (from the repository root)::

    .venv/bin/python bench/subwindows.py [--limit-conversations N] [--threads 1]
        [--window-tokens 128] [--window-overlap 32] [--no-lines] [--json OUT.json]
        [--cache-dir /tmp/subwindows-cache] [--model PATH.gguf] [--eval-dir ../shared/eval]
        [--chunk-tokens 400] [--chunk-overlap 80]

An offline experiment on LoCoMo (one workspace per conversation, categories 1-4 as the headline,
each category apart), vector-only. It uses ``bench/quality.py``'s loader, judging and metrics (chunk
level: a chunk counts when its line range covers an evidence turn) and memdex's own chunker and
local embedding provider, but not the engine: every chunk of a conversation is scored against the
question's vector and all of them are ranked, which is what the engine's ``vector`` mode does
(it serves the search from an int8 copy of the vectors, so its figures can differ in the third
decimal).

What is embedded, per conversation (the same texts the index would hold; each distinct text once):

* ``chunk``  - every chunk whole (``chunk_markdown``, 400/80 tokens as in bench/quality.py): memdex today.
* windows    - every chunk cut again with the same chunker into sub-windows of ``--window-tokens``
  (128) sharing ``--window-overlap`` (32) tokens: consecutive runs of whole lines, ~512 characters
  (the chunker budgets four characters per token), each window's lines inside its chunk. A chunk
  shorter than one window has one window, itself.
* lines      - every non-blank line of every chunk (a LoCoMo line is one dialogue turn), unless ``--no-lines``.

How a chunk is scored for a question (cosine of L2-normalised vectors):

* ``chunk``       - its own vector;
* ``win-max``     - its best sub-window; ``win-top2`` - the mean of its two best (one when it has one);
* ``chunk+win``   - the mean of ``chunk`` and ``win-max`` (same vectors as the windows, plus the chunk's);
* ``line-max`` / ``line-top2`` / ``chunk+line`` - the same over its lines.

Costs, measured in the same run: vectors per chunk (as stored, one row per (chunk, part), and as
distinct texts), the bytes they take at 384 float32 dimensions (1,536 bytes each), the model tokens
fed to the model, and the seconds ``LocalProvider.embed_batch`` took for each kind of text, one
conversation at a time in the order chunk, windows, lines (a shared 2-core machine is noisy: compare
the seconds as ratios, and the tokens as the noise-free proxy).

Snippet choice (with lines): for every question of categories 1-4 and every chunk covering one of
its evidence turns, whether the line or sub-window chosen as the snippet holds an evidence turn,
when chosen by vector (best line / best sub-window), by memdex's keyword choice
(``snippets.LineScorer`` over the chunk's lines; ``snippets.best_window`` cut to the window's
characters), or at random (expected share).

Vectors are cached in ``--cache-dir`` (default /tmp/subwindows-cache) per conversation, kind of text
and settings, with the seconds they took; a rerun loads them (and reports the cached seconds).
``--fresh`` re-embeds everything. Progress goes to stderr, the report to stdout.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import anyio
import numpy as np

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:  # so `python bench/subwindows.py` works without an install
    sys.path.insert(0, str(REPO_ROOT))

from bench.quality import (
    DEFAULT_EVAL_DIR,
    DEFAULT_MODEL,
    MAX_RESULTS,
    BenchWorkspace,
    Query,
    QueryResult,
    Suite,
    load_locomo,
    score_query,
    summarise,
)
from memdex.memory_core.config_sections import LocalEmbeddingSettings
from memdex.memory_core.embeddings.local import LocalProvider
from memdex.memory_core.models import Hit
from memdex.memory_core.search.snippets import LineScorer, best_window
from memdex.memory_core.text.chunking import CHARS_PER_TOKEN, chunk_markdown
from memdex.memory_core.text.terms import query_terms

DEFAULT_CACHE = Path("/tmp/subwindows-cache")
BYTES_PER_VECTOR = 384 * 4  # all-MiniLM-L6-v2, float32
BOOTSTRAP = 2000
SHOWN = ("recall@5", "recall@10", "hit@5", "mrr@10", "ndcg@10")


# Texts ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ChunkParts:
    """One chunk of a workspace file and the indices (into the kind's distinct texts) of its parts."""

    path: str
    start_line: int
    end_line: int
    text: str
    windows: tuple[int, ...] = ()
    lines: tuple[int, ...] = ()
    line_numbers: tuple[int, ...] = ()  # the file line of each entry of ``lines``
    window_lines: tuple[tuple[int, int], ...] = ()  # the file lines (first, last) of each window


@dataclass
class Texts:
    """The distinct texts of one kind in a workspace, in first-seen order, and how many parts point at them."""

    texts: list[str] = field(default_factory=list)
    index: dict[str, int] = field(default_factory=dict)
    parts: int = 0  # (chunk, part) pairs, i.e. rows an index would store

    def add(self, text: str) -> int:
        self.parts += 1
        if text not in self.index:
            self.index[text] = len(self.texts)
            self.texts.append(text)
        return self.index[text]


@dataclass
class Layout:
    """A workspace cut into chunks, windows and lines."""

    chunks: list[ChunkParts]
    whole: Texts
    windows: Texts
    lines: Texts


def cut(ws: BenchWorkspace, args: argparse.Namespace) -> Layout:
    """Chunk every file with memdex's chunker; cut every chunk into windows and lines."""
    whole, windows, lines = Texts(), Texts(), Texts()
    chunks: list[ChunkParts] = []
    for path, text in ws.files.items():
        for chunk in chunk_markdown(text, args.chunk_tokens, args.chunk_overlap):
            whole.add(chunk.text)
            subs = chunk_markdown(chunk.text, args.window_tokens, args.window_overlap)
            win_ids = tuple(windows.add(sub.text) for sub in subs)
            numbered = [
                (chunk.start_line + offset, line) for offset, line in enumerate(chunk.text.split("\n")) if line.strip()
            ]
            line_ids = tuple(lines.add(line) for _, line in numbered) if args.lines else ()
            chunks.append(
                ChunkParts(
                    path,
                    chunk.start_line,
                    chunk.end_line,
                    chunk.text,
                    win_ids,
                    line_ids,
                    tuple(n for n, _ in numbered) if args.lines else (),
                    tuple((chunk.start_line + sub.start_line - 1, chunk.start_line + sub.end_line - 1) for sub in subs),
                )
            )
    return Layout(chunks, whole, windows, lines)


# Embedding with a disk cache --------------------------------------------------------------------


@dataclass
class Embedded:
    """Vectors of one kind of text in one workspace, and what producing them cost."""

    vectors: np.ndarray  # (n, dims) float32, L2-normalised
    seconds: float
    tokens: int
    cached: bool


def _digest(texts: Sequence[str]) -> str:
    h = hashlib.sha256()
    for text in texts:
        h.update(hashlib.sha256(text.encode()).digest())
    return h.hexdigest()


async def embed(
    provider: LocalProvider, texts: Sequence[str], cache: Path, fresh: bool, queries: bool = False
) -> Embedded:
    """Vectors for ``texts`` (documents, or one query at a time), from ``cache`` when it matches."""
    digest = _digest(texts)
    if not fresh and cache.is_file():
        with np.load(cache) as saved:
            if str(saved["digest"]) == digest:
                return Embedded(saved["vectors"], float(saved["seconds"]), int(saved["tokens"]), True)
    shared = provider._require()
    tokens = sum(
        min(shared.max_tokens, len(shared.llm.tokenize(t.encode("utf-8", "replace"), add_bos=True, special=False)))
        for t in texts
    )
    started = time.perf_counter()
    if queries:
        rows = [await provider.embed_query(t) for t in texts]
    else:
        rows = await provider.embed_batch(texts, bulk=True)
    seconds = time.perf_counter() - started
    vectors = np.asarray(rows, dtype=np.float32).reshape(len(texts), provider.dims)
    cache.parent.mkdir(parents=True, exist_ok=True)
    np.savez(cache, digest=digest, vectors=vectors, seconds=seconds, tokens=tokens)
    return Embedded(vectors, seconds, tokens, False)


# Scoring ----------------------------------------------------------------------------------------


def padded(groups: Sequence[Sequence[int]]) -> tuple[np.ndarray, np.ndarray]:
    """Index matrix (n, width) padded with 0 and its mask, for per-chunk reductions."""
    width = max((len(g) for g in groups), default=1) or 1
    idx = np.zeros((len(groups), width), dtype=np.int64)
    mask = np.zeros((len(groups), width), dtype=bool)
    for row, group in enumerate(groups):
        idx[row, : len(group)] = group
        mask[row, : len(group)] = True
    return idx, mask


def part_scores(sims: np.ndarray, idx: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per chunk: the best part's cosine, and the mean of the two best (the best alone for one part)."""
    values = np.where(mask, sims[idx], -np.inf)
    ordered = -np.sort(-values, axis=1)
    best = ordered[:, 0]
    if ordered.shape[1] < 2:
        return best, best
    second = ordered[:, 1]
    top2 = np.where(np.isfinite(second), (best + second) / 2, best)
    return best, top2


Scorer = Callable[[dict[str, np.ndarray]], np.ndarray]
VARIANTS: dict[str, tuple[str, Scorer]] = {
    "chunk": ("whole", lambda s: s["chunk"]),
    "win-max": ("windows", lambda s: s["win-max"]),
    "win-top2": ("windows", lambda s: s["win-top2"]),
    "chunk+win": ("whole+windows", lambda s: (s["chunk"] + s["win-max"]) / 2),
    "line-max": ("lines", lambda s: s["line-max"]),
    "line-top2": ("lines", lambda s: s["line-top2"]),
    "chunk+line": ("whole+lines", lambda s: (s["chunk"] + s["line-max"]) / 2),
}


def ranked_hits(layout: Layout, scores: np.ndarray) -> list[Hit]:
    """The top chunks by score (ties in chunk order) as hits, for bench/quality.py's judging."""
    order = np.argsort(-scores, kind="stable")[:MAX_RESULTS]
    return [
        Hit(
            path=c.path,
            start_line=c.start_line,
            end_line=c.end_line,
            chunk_start_line=c.start_line,
            chunk_end_line=c.end_line,
            score=float(scores[i]),
            snippet="",
        )
        for i in order
        for c in (layout.chunks[i],)
    ]


@dataclass
class SnippetTally:
    """(question, chunk covering an evidence turn) pairs: how often each way of choosing lines finds evidence."""

    pairs: int = 0
    picks: dict[str, float] = field(default_factory=dict)  # way -> pairs whose choice holds an evidence turn

    def add(self, way: str, found: float) -> None:
        self.picks[way] = self.picks.get(way, 0.0) + found


SNIPPET_WAYS = {
    "line: vector": "the line with the best line vector",
    "line: keyword": "the line memdex's LineScorer rates best (the chunk's lines, the query's terms; first line if none)",
    "line: keyword, then vector": "LineScorer, ties (e.g. no term at all) broken by line vector",
    "line: random": "a random non-blank line (expected share)",
    "window: vector": "the sub-window with the best vector",
    "window: keyword": "snippets.best_window at the window size (memdex's snippet choice at that size)",
    "window: random": "a random sub-window (expected share)",
}


def tally_snippets(
    query: Query, layout: Layout, line_sims: np.ndarray, win_sims: np.ndarray, max_chars: int, tally: SnippetTally
) -> None:
    """Add the snippet choices of every chunk covering one of the question's evidence turns."""
    evidence = {(u.path, u.first) for u in query.relevant}  # LoCoMo units are single lines
    terms = query_terms(query.text)
    for chunk in layout.chunks:
        hits = [(chunk.path, n) in evidence for n in chunk.line_numbers]
        if not any(hits):
            continue
        texts = [layout.lines.texts[i] for i in chunk.lines]
        scorer = LineScorer(terms, [chunk.text])
        keyword = [scorer.score(t) for t in texts]
        vector = line_sims[list(chunk.lines)]
        tally.pairs += 1
        tally.add("line: vector", hits[int(np.argmax(vector))])
        tally.add("line: keyword", hits[max(range(len(texts)), key=keyword.__getitem__)])
        tally.add("line: keyword, then vector", hits[max(range(len(texts)), key=lambda i: (keyword[i], vector[i]))])
        tally.add("line: random", sum(hits) / len(hits))

        def holds(first: int, last: int, path: str = chunk.path) -> bool:
            return any((path, n) in evidence for n in range(first, last + 1))

        windows = [holds(first, last) for first, last in chunk.window_lines]
        tally.add("window: vector", windows[int(np.argmax(win_sims[list(chunk.windows)]))])
        chosen = best_window(chunk.text, chunk.start_line, chunk.end_line, scorer, max_chars)
        tally.add("window: keyword", holds(chosen.start_line, chosen.end_line))
        tally.add("window: random", sum(windows) / len(windows))


# Running ----------------------------------------------------------------------------------------


@dataclass
class Cost:
    chunks: int = 0
    parts: dict[str, int] = field(default_factory=dict)  # kind -> (chunk, part) rows
    distinct: dict[str, int] = field(default_factory=dict)  # kind -> distinct texts embedded
    tokens: dict[str, int] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    cached: set[str] = field(default_factory=set)

    def add(self, kind: str, texts: Texts, done: Embedded) -> None:
        self.parts[kind] = self.parts.get(kind, 0) + texts.parts
        self.distinct[kind] = self.distinct.get(kind, 0) + len(texts.texts)
        self.tokens[kind] = self.tokens.get(kind, 0) + done.tokens
        self.seconds[kind] = self.seconds.get(kind, 0.0) + done.seconds
        if done.cached:
            self.cached.add(kind)


@dataclass
class Outcome:
    results: dict[str, list[QueryResult]]
    cost: Cost
    snippets: SnippetTally
    seconds: float


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


async def run(suite: Suite, args: argparse.Namespace) -> Outcome:
    variants = [v for v, (kind, _) in VARIANTS.items() if args.lines or "line" not in kind]
    results: dict[str, list[QueryResult]] = {v: [] for v in variants}
    cost, snippets = Cost(), SnippetTally()
    headline = dict(suite.rows)[suite.headline]
    provider = LocalProvider(LocalEmbeddingSettings(model=str(args.model), n_threads=args.threads))
    started = time.perf_counter()
    await provider.start()
    tag = f"{args.model.stem}-t{args.chunk_tokens}-o{args.chunk_overlap}"
    try:
        for ws in suite.workspaces:
            layout = cut(ws, args)
            base = args.cache_dir / tag / ws.name
            kinds = {
                "whole": (layout.whole, base / "whole.npz"),
                "windows": (layout.windows, base / f"windows-w{args.window_tokens}-o{args.window_overlap}.npz"),
            }
            if args.lines:
                kinds["lines"] = (layout.lines, base / "lines.npz")
            vectors: dict[str, np.ndarray] = {}
            for kind, (texts, path) in kinds.items():
                done = await embed(provider, texts.texts, path, args.fresh)
                cost.add(kind, texts, done)
                vectors[kind] = done.vectors
                log(
                    f"  {ws.name} {kind}: {len(texts.texts)} texts, {done.tokens} tokens, "
                    f"{done.seconds:.1f}s{' (cached)' if done.cached else ''}"
                )
            cost.chunks += len(layout.chunks)
            asked = await embed(provider, [q.text for q in ws.queries], base / "queries.npz", args.fresh, queries=True)
            win_idx = padded([c.windows for c in layout.chunks])
            line_idx = padded([c.lines for c in layout.chunks]) if args.lines else None
            for query, qvec in zip(ws.queries, asked.vectors, strict=True):
                sims = {"chunk": vectors["whole"] @ qvec}
                win_sims = vectors["windows"] @ qvec
                sims["win-max"], sims["win-top2"] = part_scores(win_sims, *win_idx)
                if line_idx is not None:
                    line_sims = vectors["lines"] @ qvec
                    sims["line-max"], sims["line-top2"] = part_scores(line_sims, *line_idx)
                    if query.group in headline:
                        max_chars = args.window_tokens * CHARS_PER_TOKEN
                        tally_snippets(query, layout, line_sims, win_sims, max_chars, snippets)
                for variant in variants:
                    hits = ranked_hits(layout, VARIANTS[variant][1](sims))
                    results[variant].append(score_query(query, hits, "chunk"))
    finally:
        await provider.aclose()
    return Outcome(results, cost, snippets, time.perf_counter() - started)


# Reporting --------------------------------------------------------------------------------------


def paired_delta(a: Sequence[float], b: Sequence[float], seed: int = 0) -> tuple[float, float, float, int, int]:
    """Mean of b - a, its 95 % paired-bootstrap interval, and the questions b wins and loses."""
    diff = np.asarray(b) - np.asarray(a)
    rng = np.random.default_rng(seed)
    means = diff[rng.integers(0, len(diff), size=(BOOTSTRAP, len(diff)))].mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    return float(diff.mean()), float(low), float(high), int((diff > 0).sum()), int((diff < 0).sum())


def kind_cost(cost: Cost, kind: str) -> dict[str, float]:
    """Rows, distinct vectors, tokens and seconds of a variant's vectors (``whole+windows`` adds both)."""
    kinds = kind.split("+")
    return {
        "vectors_per_chunk": sum(cost.parts[k] for k in kinds) / cost.chunks,
        "distinct_per_chunk": sum(cost.distinct[k] for k in kinds) / cost.chunks,
        "tokens": float(sum(cost.tokens[k] for k in kinds)),
        "embed_seconds": sum(cost.seconds[k] for k in kinds),
    }


def report(suite: Suite, args: argparse.Namespace, out: Outcome) -> tuple[str, dict[str, Any]]:
    plain = replace(suite, chat=False)  # METRICS only: no chat extras were measured
    rows = {v: {r["label"]: r for r in summarise(plain, res)} for v, res in out.results.items()}
    head = suite.headline
    groups = dict(suite.rows)[head]
    headline_ids = [i for i, r in enumerate(out.results["chunk"]) if r.group in groups]
    base_ndcg = [out.results["chunk"][i].scores["ndcg@10"] for i in headline_ids]
    whole = kind_cost(out.cost, "whole")
    lines = [
        f"LoCoMo vector-only, chunk level: {len(suite.workspaces)} conversation(s) "
        f"({', '.join(ws.name for ws in suite.workspaces)}), {head}: n = {rows['chunk'][head]['n']}; "
        f"{out.seconds:.0f}s wall",
        f"  chunks {args.chunk_tokens}/{args.chunk_overlap} tokens ({out.cost.chunks} chunks); windows "
        f"{args.window_tokens}/{args.window_overlap} tokens of whole lines inside each chunk; lines = non-blank lines",
        f"  model {args.model.name}, {args.threads} thread(s); all chunks of a conversation ranked by cosine, top "
        f"{MAX_RESULTS} judged as bench/quality.py does",
        "",
    ]
    width = max(map(len, VARIANTS)) + 2
    header = f"{'variant':<{width}}" + "".join(f"{m:>11}" for m in SHOWN) + f"{'Δ nDCG [95% CI]':>24}{'won/lost':>10}"
    lines += [header, "-" * len(header)]
    payload: dict[str, Any] = {
        "settings": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
        "conversations": [ws.name for ws in suite.workspaces],
        "variants": {},
    }
    for variant, by_label in rows.items():
        row = by_label[head]
        ndcg = [out.results[variant][i].scores["ndcg@10"] for i in headline_ids]
        mean, low, high, won, lost = paired_delta(base_ndcg, ndcg)
        delta = f"{mean:+.3f} [{low:+.3f},{high:+.3f}]" if variant != "chunk" else ""
        wl = f"{won}/{lost}" if variant != "chunk" else ""
        lines.append(f"{variant:<{width}}" + "".join(f"{row[m]:>11.3f}" for m in SHOWN) + f"{delta:>24}{wl:>10}")
        payload["variants"][variant] = {
            "vectors": VARIANTS[variant][0],
            "rows": list(by_label.values()),
            "delta_ndcg_vs_chunk": {"mean": mean, "ci95": [low, high], "won": won, "lost": lost},
            "cost": kind_cost(out.cost, VARIANTS[variant][0]),
        }
    for metric in ("ndcg@10", "recall@5", "recall@10"):
        lines += ["", f"{metric} by category:"]
        sub = f"{'category':<18}{'n':>5}" + "".join(f"{v:>{len(v) + 2}}" for v in rows)
        lines += [sub, "-" * len(sub)]
        for label, _ in suite.rows:
            n = rows["chunk"][label]["n"]
            lines.append(f"{label:<18}{n:>5}" + "".join(f"{rows[v][label][metric]:>{len(v) + 2}.3f}" for v in rows))
    lines += [
        "",
        "Cost (per chunk; stored rows = one per (chunk, part), distinct = texts embedded once; "
        f"{BYTES_PER_VECTOR} bytes per float32 vector):",
        "",
    ]
    cheader = f"{'vectors':<16}{'rows/chunk':>12}{'distinct':>10}{'KiB/chunk':>11}{'× chunk':>9}{'tokens':>10}{'× chunk':>9}{'embed s':>9}{'× chunk':>9}"
    lines += [cheader, "-" * len(cheader)]
    for kind in dict.fromkeys(v[0] for v in (VARIANTS[name] for name in rows)):
        c = kind_cost(out.cost, kind)
        lines.append(
            f"{kind:<16}{c['vectors_per_chunk']:>12.2f}{c['distinct_per_chunk']:>10.2f}"
            f"{c['vectors_per_chunk'] * BYTES_PER_VECTOR / 1024:>11.2f}{c['vectors_per_chunk'] / whole['vectors_per_chunk']:>9.2f}"
            f"{c['tokens']:>10.0f}{c['tokens'] / whole['tokens']:>9.2f}{c['embed_seconds']:>9.1f}"
            f"{c['embed_seconds'] / whole['embed_seconds']:>9.2f}"
        )
    if out.cost.cached:
        lines.append(
            f"  (seconds of {', '.join(sorted(out.cost.cached))} read from the cache: measured when first embedded)"
        )
    s = out.snippets
    if s.pairs:
        lines += [
            "",
            f"Snippet choice (categories 1-4): {s.pairs} (question, chunk covering an evidence turn) pairs; share "
            f"whose chosen line / window (~{args.window_tokens * CHARS_PER_TOKEN} chars) holds an evidence turn:",
            "",
        ]
        lines += [f"  {way:<28}{s.picks[way] / s.pairs:>7.3f}   {what}" for way, what in SNIPPET_WAYS.items()]
        payload["snippet_choice"] = {"pairs": s.pairs, **{way: s.picks[way] / s.pairs for way in SNIPPET_WAYS}}
    payload["cost"] = {
        "chunks": out.cost.chunks,
        "parts": out.cost.parts,
        "distinct": out.cost.distinct,
        "tokens": out.cost.tokens,
        "seconds": out.cost.seconds,
        "cached": sorted(out.cost.cached),
    }
    payload["queries"] = {
        v: [{"id": r.qid, "group": r.group, **r.scores} for r in res] for v, res in out.results.items()
    }
    return "\n".join(lines), payload


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--limit-conversations", type=int, metavar="N", help="only the first N conversations")
    parser.add_argument("--eval-dir", type=Path, default=DEFAULT_EVAL_DIR, help="(default: %(default)s)")
    parser.add_argument("--model", type=Path, default=DEFAULT_MODEL, help="GGUF model (default: %(default)s)")
    parser.add_argument("--threads", type=int, default=1, help="llama.cpp threads (default: %(default)s)")
    parser.add_argument("--cache-dir", type=Path, default=DEFAULT_CACHE, help="vectors (default: %(default)s)")
    parser.add_argument("--fresh", action="store_true", help="re-embed everything (re-measures the seconds)")
    parser.add_argument("--chunk-tokens", type=int, default=400, help="(default: %(default)s)")
    parser.add_argument("--chunk-overlap", type=int, default=80, help="(default: %(default)s)")
    parser.add_argument("--window-tokens", type=int, default=128, help="sub-window size (default: %(default)s)")
    parser.add_argument("--window-overlap", type=int, default=32, help="sub-window overlap (default: %(default)s)")
    parser.add_argument("--no-lines", dest="lines", action="store_false", help="skip the line vectors")
    parser.add_argument("--json", type=Path, metavar="OUT", help="also write the results as JSON")
    args = parser.parse_args(argv)
    args.model = args.model.expanduser().resolve()
    suite = load_locomo(args.eval_dir, args.limit_conversations)
    log(f"locomo: {len(suite.workspaces)} conversation(s), {suite.n_queries} questions; cache {args.cache_dir}")
    outcome = anyio.run(run, suite, args)
    text, payload = report(suite, args, outcome)
    print(text)
    if args.json:
        args.json.write_text(json.dumps(payload, indent=2, default=str) + "\n", encoding="utf-8")
        log(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
