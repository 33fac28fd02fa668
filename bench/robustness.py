"""Robustness suite: every set run as every variant, memdex beside its plain FTS5 floor, in one table.

Usage (from the repository root)::

    .venv/bin/python bench/robustness.py [--sets cisi,scifact,scifact-train,locomo,cmrc,jsquad,mixed-cisi,...]
        [--variants full,titles,q3,typo]
        [--mode keyword ...] [--model PATH.gguf] [--threads 1] [--window-tokens N] [--limit-queries N]
        [--limit-conversations N]
        [--eval-dir ../shared/eval] [--cache-dir bench/.cache] [--json out.json] [--losses N]

For each set x variant (``bench/variants.py``) it runs memdex's search in each mode exactly as
``bench/quality.py`` does (same workspaces, caches and judging) and measures the plain FTS5 floor on the
same files with ``bench/tokenizers.py``'s ``unicode61`` candidate: one contentless ``porter unicode61`` row
per file, the OR of every word of the query (as unicode61 cuts it, stop words included) ranked by ``bm25()``. It prints one Markdown table (set, variant,
mode, n, memdex nDCG@10, the floor, the margin to 3 decimals), then per mode the average over every set x
variant and how many rows fall below their floor (a negative margin). A default is only sound when none does.

Each margin comes with its paired bootstrap 95 % interval (the queries resampled, :data:`RESAMPLES` times,
seeded): how far a margin can move on another draw of queries of the same kind. Beside it is a second floor,
plain FTS5 over memdex's own chunks (the same ``porter unicode61`` OR, over the chunks memdex's default
chunking cuts, the 30 best collapsed to their files as memdex's are): the part of the margin that memdex's
ranking earns, apart from what judging chunks against documents costs or gives.

``scifact-train`` is SciFact's train split (809 claims over the same abstracts and index), which no default was
chosen on: a held-out check beside the test split the defaults were measured on.

``mixed-cisi``, ``mixed-scifact``, ``mixed-cmrc`` and ``mixed-jsquad`` ask one set's queries of every document set
in one workspace (:func:`load_mixed`): English notes beside Chinese and Japanese ones, as a bilingual memory
holds them, each set judged as alone, against its floor over the same pooled files.

The compared figure is document-level nDCG@10 (best chunk per document) for the document sets. LoCoMo is
judged by memdex at chunk level, while the floor's rows are whole session files, so there both are taken at
session level: ``session_ndcg@10`` (the distinct files of 30 chunks memdex returns, first 10 against the
evidence's sessions, as the document sets collapse theirs), categories 1-4. ``titles`` does not apply to LoCoMo (its row says so). Embedding modes
(``--mode hybrid`` etc.) need ``--model``; their corpus embeddings are cached like quality.py's.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import anyio

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:  # so `python bench/robustness.py` works without an install
    sys.path.insert(0, str(REPO_ROOT))

from bench.quality import (
    DEFAULT_CACHE_DIR,
    DEFAULT_EVAL_DIR,
    DEFAULT_MODEL,
    ModeRun,
    Query,
    RunConfig,
    Suite,
    headline_row,
    load_cisi,
    load_cmrc,
    load_jsquad,
    load_locomo,
    load_scifact,
    load_scifact_train,
    log,
    parse_modes,
    run_suite,
)
from bench.tokenizers import PLAIN, measure
from bench.variants import VARIANTS, apply_variant, parse_variants
from memdex.memory_core.config_sections import ChunkingSettings
from memdex.memory_core.text.chunking import chunk_markdown

DOCUMENT_SETS: dict[str, Callable[[Path, int | None], Suite]] = {
    "cisi": load_cisi, "scifact": load_scifact, "scifact-train": load_scifact_train, "cmrc": load_cmrc,
    "jsquad": load_jsquad,
}  # fmt: skip
MIXED = ("cisi", "scifact", "cmrc", "jsquad")  # the document sets one workspace holds for the mixed-* sets
SETS = ("cisi", "scifact", "scifact-train", "locomo", "cmrc", "jsquad", *(f"mixed-{name}" for name in MIXED))
RESAMPLES = 2000  # bootstrap draws of each margin's interval


@dataclass(frozen=True)
class QueryLoss:
    """A query memdex answers worse than the plain floor, with its nDCG@10 beside both floors'."""

    qid: str
    text: str
    memdex: float
    floor: float
    chunk_floor: float


@dataclass(frozen=True)
class Row:
    """One set x variant x mode: memdex's figure and the floor (NaN when the variant does not apply)."""

    dataset: str
    variant: str
    mode: str
    n: int
    memdex: float
    floor: float
    low: float = math.nan  # the margin's paired bootstrap 95 % interval
    high: float = math.nan
    chunk_floor: float = math.nan  # plain FTS5 over memdex's own chunks
    losses: tuple[QueryLoss, ...] = ()  # with --losses: the queries furthest below the plain floor

    @property
    def margin(self) -> float:
        """memdex minus the floor, to the table's 3 decimals (a row is below its floor when this is negative)."""
        return round(self.memdex - self.floor, 3) + 0.0  # + 0.0: no "-0.000"

    @property
    def chunk_margin(self) -> float:
        """memdex minus the floor over its own chunks, to 3 decimals."""
        return round(self.memdex - self.chunk_floor, 3) + 0.0


def interval(differences: Sequence[float], draws: int = RESAMPLES, seed: int = 0) -> tuple[float, float]:
    """The 2.5th and 97.5th percentiles of the mean of ``differences`` over ``draws`` resamples (with
    replacement, seeded): a paired bootstrap interval of a mean difference."""
    rng = random.Random(seed)
    n = len(differences)
    means = sorted(sum(rng.choices(differences, k=n)) / n for _ in range(draws))
    return means[int(0.025 * draws)], means[int(0.975 * draws) - 1]


def memdex_chunks(text: str) -> list[str]:
    """The chunks memdex's default chunking cuts ``text`` into: the rows of the floor on memdex's own chunks."""
    chunking = ChunkingSettings()
    return [chunk.text for chunk in chunk_markdown(text, chunking.tokens, chunking.overlap)]


def headline_queries(suite: Suite) -> list[Query]:
    """The headline row's queries, in the order every figure of the row lists them (workspaces, then queries)."""
    groups = dict(suite.rows)[suite.headline]
    return [query for workspace in suite.workspaces for query in workspace.queries if query.group in groups]


def largest_losses(
    queries: Sequence[Query], ours: Sequence[float], floor: Sequence[float], chunks: Sequence[float], count: int
) -> tuple[QueryLoss, ...]:
    """The ``count`` queries furthest below the plain floor, the largest loss first (ties in the suite's order):
    where to look when a row is below it, and whether its chunks (the second floor) lose there too."""
    figures = zip(queries, ours, floor, chunks, strict=True)
    lost = [QueryLoss(query.qid, query.text, a, b, c) for query, a, b, c in figures if a < b]
    return tuple(sorted(lost, key=lambda loss: loss.memdex - loss.floor)[:count])


def headline_scores(suite: Suite, run: ModeRun) -> list[float]:
    """Each headline query's figure for memdex, in the suite's order (as the floors give theirs)."""
    groups = dict(suite.rows)[suite.headline]
    return [r.scores[key_metric(suite)] for r in run.results if r.group in groups]


def loader(name: str, args: argparse.Namespace) -> Callable[[], Suite]:
    """The set's loader with the command line's limits."""
    if name == "locomo":
        return lambda: load_locomo(args.eval_dir, args.limit_conversations)
    if name.startswith("mixed-"):
        return lambda: load_mixed(args.eval_dir, args.limit_queries, name.removeprefix("mixed-"))
    return lambda: DOCUMENT_SETS[name](args.eval_dir, args.limit_queries)


def load_mixed(eval_dir: Path, limit: int | None, judged: str) -> Suite:
    """``judged``'s queries (the first ``limit``) over the files of every set of :data:`MIXED` in one workspace.

    Each set's words, scripts and note lengths then count in the others' keyword statistics (how many notes hold
    a term, the mean length BM25 compares a note with), and its files' names and folders in the others' named
    files, as in a memory written in several languages. Every ``mixed-*`` set shares one workspace and index.
    """
    own = DOCUMENT_SETS[judged](eval_dir, limit)
    files: dict[str, str] = {}
    extra_paths: set[str] = set()
    for name in MIXED:
        (workspace,) = (own if name == judged else DOCUMENT_SETS[name](eval_dir, 0)).workspaces
        if clash := files.keys() & workspace.files.keys():
            raise ValueError(f"{name}: {len(clash)} file(s) named as another set's, such as {min(clash)}")
        files |= workspace.files
        extra_paths |= set(workspace.extra_paths)
    (workspace,) = own.workspaces
    pooled = replace(workspace, files=files, extra_paths=tuple(sorted(extra_paths)))
    return replace(own, name=f"mixed-{judged}", cache="mixed", workspaces=[pooled], references=[])


def key_metric(suite: Suite) -> str:
    """The figure compared with the floor: document nDCG@10, or session nDCG@10 for chat sets."""
    return "session_ndcg@10" if suite.chat else suite.key_metric


def measure_set(name: str, variant: str, suite: Suite | None, args: argparse.Namespace, config: RunConfig) -> list[Row]:
    """Rows of one set x variant: the floor once, memdex in every mode."""
    modes = parse_modes(args.mode)
    if suite is None:
        return [Row(name, variant, mode.name, 0, math.nan, math.nan) for mode in modes]
    with tempfile.TemporaryDirectory() as tmp:
        floor = measure(PLAIN, suite, Path(tmp))
        chunks = measure(PLAIN, suite, Path(tmp), memdex_chunks)
    runs = anyio.run(run_suite, suite, modes, config)
    rows = []
    for run in runs:
        head = headline_row(suite, run)
        ours = headline_scores(suite, run)
        if len(ours) != len(floor.scores):
            raise RuntimeError(f"{suite.name}: {len(ours)} queries judged for memdex, {len(floor.scores)} for the floor")
        low, high = interval([a - b for a, b in zip(ours, floor.scores, strict=True)])
        losses = largest_losses(headline_queries(suite), ours, floor.scores, chunks.scores, args.losses)
        rows.append(Row(name, variant, run.mode.name, head["n"], head[key_metric(suite)], floor.ndcg, low, high,
                        chunks.ndcg, losses))  # fmt: skip
        log(f"{suite.name} [{run.mode.name}]: {rows[-1].memdex:.3f} vs floor {floor.ndcg:.3f}")
    return rows


def _cell(value: float, sign: str = "") -> str:
    return "n/a" if math.isnan(value) else f"{value:{sign}.3f}"


def render(rows: Sequence[Row]) -> str:
    """The Markdown table, then per mode the average over the rows that apply and the rows below the floor; then,
    for each row that has them (``--losses``), the queries furthest below the floor."""
    lines = [
        "| set | variant | mode | n | memdex nDCG@10 | plain FTS5 floor | margin | 95 % interval "
        "| floor on memdex's chunks | margin |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        n = str(r.n) if r.n else "-"
        spread = "n/a" if math.isnan(r.low) else f"{r.low:+.3f} .. {r.high:+.3f}"
        lines.append(f"| {r.dataset} | {r.variant} | {r.mode} | {n} | {_cell(r.memdex)} | {_cell(r.floor)} | "
                     f"{_cell(r.margin, '+')} | {spread} | {_cell(r.chunk_floor)} | {_cell(r.chunk_margin, '+')} |")  # fmt: skip
    for mode in dict.fromkeys(r.mode for r in rows):
        done = [r for r in rows if r.mode == mode and not math.isnan(r.memdex)]
        if not done:
            continue
        keys = ("memdex", "floor", "margin", "chunk_floor", "chunk_margin")
        mean = {k: sum(getattr(r, k) for r in done) / len(done) for k in keys}
        below = sum(r.margin < 0 for r in done)
        surely = sum(r.high < 0 for r in done)
        lines.append(f"| **average** ({len(done)} set x variant) | | {mode} | | **{mean['memdex']:.3f}** | "
                     f"{mean['floor']:.3f} | {mean['margin']:+.3f} ({below} below) | {surely} below all of it | "
                     f"{mean['chunk_floor']:.3f} | {mean['chunk_margin']:+.3f} |")  # fmt: skip
    for r in rows:
        if r.losses:
            lines += ["", f"{r.dataset} {r.variant}, {r.mode}: the {len(r.losses)} queries furthest below the floor", "",
                      "| query | memdex | plain FTS5 floor | floor on memdex's chunks | text |", "|---|---:|---:|---:|---|"]  # fmt: skip
            lines += [f"| {loss.qid} | {loss.memdex:.3f} | {loss.floor:.3f} | {loss.chunk_floor:.3f} | "
                      f"{_table_text(loss.text)} |" for loss in r.losses]  # fmt: skip
    return "\n".join(lines)


def _table_text(text: str, limit: int = 80) -> str:
    """``text`` on one line for a Markdown table cell, cut to ``limit`` characters."""
    flat = " ".join(text.split()).replace("|", "\\|")
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--sets", default=",".join(SETS), help="comma-separated (default: %(default)s)")
    parser.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated (default: %(default)s)")
    parser.add_argument("--mode", action="append", default=[], metavar="MODE",
                        help="as bench/quality.py's; repeatable (default: keyword)")  # fmt: skip
    parser.add_argument("--model", type=Path, default=DEFAULT_MODEL, help="GGUF model of the embedding modes")
    parser.add_argument("--threads", type=int, default=1, help="llama.cpp threads (default: %(default)s)")
    parser.add_argument("--window-tokens", type=int, metavar="N",
                        help="embedding.window_tokens of the embedding modes (default: memdex's), as bench/quality.py's")  # fmt: skip
    parser.add_argument("--limit-queries", type=int, metavar="N", help="document sets: only the first N queries")
    parser.add_argument("--limit-conversations", type=int, metavar="N", help="LoCoMo: only the first N chats")
    parser.add_argument("--eval-dir", type=Path, default=DEFAULT_EVAL_DIR)
    parser.add_argument("--cache-dir", type=Path, default=DEFAULT_CACHE_DIR)
    parser.add_argument("--json", type=Path, metavar="OUT", help="also write the rows as JSON")
    parser.add_argument("--losses", type=int, default=0, metavar="N",
                        help="after the table, each row's N queries furthest below the plain floor (default: 0)")  # fmt: skip
    args = parser.parse_args(argv)
    sets = [name for name in args.sets.split(",") if name]
    try:
        parse_modes(args.mode)
        variants = parse_variants([args.variants])
    except (argparse.ArgumentTypeError, ValueError) as exc:
        parser.error(str(exc))
    if unknown := [name for name in sets if name not in SETS]:
        parser.error(f"unknown set(s) {', '.join(unknown)}: use {', '.join(SETS)}")
    model = args.model.expanduser().resolve()
    config = RunConfig(cache_dir=args.cache_dir.resolve(), model=model, threads=args.threads,
                       window_tokens=args.window_tokens)  # fmt: skip
    rows: list[Row] = []
    for name in sets:
        loaded = loader(name, args)()
        for variant in variants:
            rows += measure_set(name, variant, apply_variant(loaded, variant), args, config)
    print(render(rows))
    if args.json:
        rows_out = [{**asdict(r), "margin": r.margin, "chunk_margin": r.chunk_margin} for r in rows]
        args.json.write_text(json.dumps(rows_out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
