"""Retrieval-quality benchmark: run public evaluation sets through ``MemoryEngine.search``.

Usage (from the repository root)::

    .venv/bin/python bench/quality.py locomo [--eval-dir ../shared/eval] [--cache-dir bench/.cache]
                                             [--json out.json] [--limit-conversations N]

Each dataset has one loader that turns the raw files into a :class:`Suite`: workspaces (Markdown
files to write) with their queries and each query's relevant units. Everything else is shared:
materialising the workspaces under the cache dir, indexing and searching them with the same engine
code the ``memory_search`` tool uses, judging hits, and the metrics, which follow
``../shared/eval/README.md`` exactly so the figures compare with its reference numbers.

The evaluation data is read where it lies and never copied into the repository; the generated
workspaces and indexes live in ``bench/.cache`` (gitignored) and are reused on the next run.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import logging
import math
import re
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:  # so `python bench/quality.py` works without an install
    sys.path.insert(0, str(REPO_ROOT))

from memory_core.config import load_settings  # noqa: E402
from memory_core.engine import MemoryEngine  # noqa: E402
from memory_core.models import Hit  # noqa: E402

DEFAULT_EVAL_DIR = REPO_ROOT.parent / "shared" / "eval"
DEFAULT_CACHE_DIR = REPO_ROOT / "bench" / ".cache"
MAX_RESULTS = 10  # every metric looks at the top 10 at most


# Data model -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Unit:
    """A relevant unit: lines ``first..last`` (1-based, inclusive) of a workspace file."""

    path: str
    first: int
    last: int

    def covered_by(self, hit: Hit) -> bool:
        """True when the hit is in the same file and its line range overlaps the unit's."""
        return hit.path == self.path and hit.start_line <= self.last and self.first <= hit.end_line


@dataclass(frozen=True)
class Query:
    """One question, the group it is reported under, and the units that answer it."""

    qid: str
    text: str
    group: str
    relevant: frozenset[Unit]


@dataclass(frozen=True)
class BenchWorkspace:
    """The files of one workspace (path relative to its root -> text) and the queries run on it."""

    name: str
    files: dict[str, str]
    queries: list[Query]


@dataclass(frozen=True)
class Suite:
    """What a dataset loader returns: workspaces plus how to report on them."""

    name: str
    workspaces: list[BenchWorkspace]
    rows: list[tuple[str, frozenset[str]]]  # report row label -> query groups pooled in it
    headline: str  # label of the row compared with `reference`
    reference: dict[str, float] = field(default_factory=dict)
    reference_label: str = "reference"
    notes: list[str] = field(default_factory=list)


# Metrics (README "Metrics"): `covered[i]` = relevant units covered by the hit at rank i + 1 ------


Covered = Sequence[frozenset[Unit]]


def judge(hits: Sequence[Hit], relevant: frozenset[Unit]) -> list[frozenset[Unit]]:
    """For each ranked hit, the relevant units it covers."""
    return [frozenset(u for u in relevant if u.covered_by(hit)) for hit in hits]


def recall_at(k: int, covered: Covered, n_relevant: int) -> float:
    """Fraction of the relevant units covered by the union of the top ``k`` hits."""
    return len(frozenset().union(*covered[:k])) / n_relevant


def hit_at(k: int, covered: Covered, n_relevant: int) -> float:
    """1 when any of the top ``k`` hits covers a relevant unit."""
    return float(any(covered[:k]))


def mrr_at(k: int, covered: Covered, n_relevant: int) -> float:
    """1 / rank of the first hit (within the top ``k``) covering a relevant unit, else 0."""
    return next((1.0 / rank for rank, units in enumerate(covered[:k], start=1) if units), 0.0)


def ndcg_at(k: int, covered: Covered, n_relevant: int) -> float:
    """Chunk-level nDCG: gain 1 per hit covering >= 1 relevant unit; ideal = min(#units, k) such hits."""
    dcg = sum(1.0 / math.log2(rank + 1) for rank, units in enumerate(covered[:k], start=1) if units)
    ideal = sum(1.0 / math.log2(rank + 1) for rank in range(1, min(n_relevant, k) + 1))
    return dcg / ideal


Metric = Callable[[Covered, int], float]


def _at(fn: Callable[[int, Covered, int], float], k: int) -> Metric:
    return lambda covered, n_relevant: fn(k, covered, n_relevant)


METRICS: dict[str, Metric] = {
    "recall@5": _at(recall_at, 5),
    "recall@10": _at(recall_at, 10),
    "hit@5": _at(hit_at, 5),
    "mrr@10": _at(mrr_at, 10),
    "ndcg@10": _at(ndcg_at, 10),
}


@dataclass(frozen=True)
class QueryResult:
    """A query's scores under every metric."""

    qid: str
    group: str
    scores: dict[str, float]


def score_query(query: Query, hits: Sequence[Hit]) -> QueryResult:
    """Judge ``hits`` against the query's relevant units and apply every metric."""
    covered = judge(hits[:MAX_RESULTS], query.relevant)
    n = len(query.relevant)
    return QueryResult(query.qid, query.group, {name: fn(covered, n) for name, fn in METRICS.items()})


def macro_average(results: Sequence[QueryResult]) -> dict[str, float]:
    """Mean of each metric over ``results`` (NaN when there are none)."""
    return {
        name: (sum(r.scores[name] for r in results) / len(results)) if results else math.nan for name in METRICS
    }


# LoCoMo ------------------------------------------------------------------------------------------

LOCOMO_CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
LOCOMO_REFERENCE = {"recall@5": 0.790, "recall@10": 0.859, "hit@5": 0.853, "mrr@10": 0.704, "ndcg@10": 0.739}
_SESSION_KEY = re.compile(r"session_(\d+)")
_EVIDENCE_ID = re.compile(r"D:?(\d+):(\d+)")


def parse_locomo_date(text: str) -> dt.date:
    """The day of a session timestamp such as ``1:56 pm on 8 May, 2023``."""
    return dt.datetime.strptime(" ".join(text.split()), "%I:%M %p on %d %B, %Y").date()


def normalise_evidence(raw: Iterable[str]) -> list[str]:
    """Evidence ids, split on ``;``/whitespace and normalised (``D:11:26``->``D11:26``, ``D30:05``->``D30:5``).

    Tokens that do not look like an id at all (e.g. a bare ``D``) are kept as-is; they resolve to nothing.
    """
    ids: list[str] = []
    for entry in raw:
        for token in re.split(r"[;\s]+", entry):
            if token:
                match = _EVIDENCE_ID.fullmatch(token)
                ids.append(f"D{int(match[1])}:{int(match[2])}" if match else token)
    return ids


def format_turn(turn: dict[str, Any]) -> str:
    """One dialogue turn as a single Markdown list line."""
    line = f"- **{turn['speaker']}**: {' '.join(str(turn['text']).split())}"
    if caption := turn.get("blip_caption"):
        line += f" [shares a photo: {' '.join(str(caption).split())}]"
    return line


def locomo_workspace(sample: dict[str, Any]) -> tuple[dict[str, str], dict[str, Unit]]:
    """One conversation's daily logs (``memory/YYYY-MM-DD.md``) and the (file, line) of every turn."""
    conv = sample["conversation"]
    sessions = sorted(
        (int(m[1]), turns)
        for key, turns in conv.items()
        if (m := _SESSION_KEY.fullmatch(key)) and isinstance(turns, list) and turns
    )
    files: dict[str, str] = {}
    where: dict[str, Unit] = {}
    for number, turns in sessions:
        day = parse_locomo_date(conv[f"session_{number}_date_time"]).isoformat()
        path = f"memory/{day}.md"
        if path in files:
            raise ValueError(f"{sample['sample_id']}: two sessions on {day}")
        lines = [f"# {day}"]
        for turn in turns:
            lines.append(format_turn(turn))
            where[turn["dia_id"]] = Unit(path, len(lines), len(lines))
        files[path] = "\n".join(lines) + "\n"
    return files, where


def load_locomo(eval_dir: Path, limit: int | None = None) -> Suite:
    """LoCoMo as in the README: one workspace per conversation, evidence turns as relevant lines."""
    samples = json.loads((eval_dir / "locomo" / "locomo10.json").read_text(encoding="utf-8"))
    workspaces: list[BenchWorkspace] = []
    dropped_ids: list[str] = []
    dropped_questions: list[str] = []
    for sample in samples[:limit]:
        sid = sample["sample_id"]
        files, where = locomo_workspace(sample)
        queries: list[Query] = []
        for index, qa in enumerate(sample["qa"]):
            qid = f"{sid}/{index}"
            ids = normalise_evidence(qa.get("evidence", []))
            dropped_ids += [f"{sid} {i!r}" for i in ids if i not in where]
            units = frozenset(where[i] for i in ids if i in where)
            if not units:
                dropped_questions.append(qid)
                continue
            queries.append(Query(qid, str(qa["question"]), str(qa["category"]), units))
        workspaces.append(BenchWorkspace(sid, files, queries))
    groups = {str(c): f"{c} {name}" for c, name in LOCOMO_CATEGORIES.items()}
    headline = "headline (1-4)"
    return Suite(
        name="locomo",
        workspaces=workspaces,
        rows=[(label, frozenset({g})) for g, label in groups.items()]
        + [(headline, frozenset({"1", "2", "3", "4"}))],
        headline=headline,
        reference=LOCOMO_REFERENCE,
        reference_label="README keyword floor",
        notes=[
            _dropped("evidence id(s) that point nowhere", dropped_ids),
            _dropped("question(s) left without evidence", dropped_questions),
        ],
    )


def _dropped(what: str, items: Sequence[str]) -> str:
    return f"dropped {len(items)} {what}: {', '.join(items) or '-'}"


# Running -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RunConfig:
    """Where things live and how the engine chunks."""

    cache_dir: Path
    chunk_tokens: int = 400
    chunk_overlap: int = 80


def materialise(ws: BenchWorkspace, root: Path) -> int:
    """Make ``root`` hold exactly ``ws.files``; rewrite only what differs. Returns files written.

    Unchanged files keep their mtime, so the engine's incremental sync reuses the cached index.
    """
    written = 0
    for rel, text in ws.files.items():
        target = root / rel
        if not target.is_file() or target.read_text(encoding="utf-8") != text:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
            written += 1
    wanted = {root / rel for rel in ws.files}
    for stray in [p for p in root.rglob("*.md") if p not in wanted]:
        stray.unlink()
    return written


async def run_workspace(ws: BenchWorkspace, suite: str, config: RunConfig) -> list[QueryResult]:
    """Write, index (reusing the cache) and search one workspace; score every query."""
    base = config.cache_dir / suite / ws.name
    root = base / "workspace"
    written = materialise(ws, root)
    settings = load_settings(
        workspace=root,
        extra_paths=[],
        index_path=base / f"index-t{config.chunk_tokens}-o{config.chunk_overlap}.sqlite",
        chunking={"tokens": config.chunk_tokens, "overlap": config.chunk_overlap},
    )
    results: list[QueryResult] = []
    async with MemoryEngine(settings, background_sync=False) as engine:
        report = await engine.sync()
        status = await engine.status()
        started = time.perf_counter()
        for query in ws.queries:
            answer = await engine.search(query.text, max_results=MAX_RESULTS)
            results.append(score_query(query, answer.results))
        elapsed = time.perf_counter() - started
    log(
        f"  {ws.name}: {len(ws.files)} files ({written} written, {report.changed} re-indexed), "
        f"{status.chunks} chunks, {len(ws.queries)} queries in {elapsed:.2f}s"
    )
    return results


async def run_suite(suite: Suite, config: RunConfig) -> list[QueryResult]:
    """Run every workspace of the suite in turn."""
    results: list[QueryResult] = []
    for ws in suite.workspaces:
        results += await run_workspace(ws, suite.name, config)
    return results


# Reporting ---------------------------------------------------------------------------------------


def summarise(suite: Suite, results: Sequence[QueryResult]) -> list[dict[str, Any]]:
    """One row per report line: label, n and macro-averaged metrics."""
    rows = []
    for label, groups in suite.rows:
        chosen = [r for r in results if r.group in groups]
        rows.append({"label": label, "n": len(chosen), **macro_average(chosen)})
    return rows


def render_table(suite: Suite, rows: Sequence[dict[str, Any]]) -> str:
    """A plain-text table of the rows, with the reference figures under the headline."""
    width = max(len(r["label"]) for r in [*rows, {"label": suite.reference_label}]) + 2
    header = f"{'':<{width}}{'n':>6}" + "".join(f"{name:>11}" for name in METRICS)
    lines = [header, "-" * len(header)]

    def line(label: str, n: str, values: dict[str, float], sign: str = "") -> str:
        cells = "".join(f"{values[m]:>{sign}11.3f}" if m in values else " " * 11 for m in METRICS)
        return f"{label:<{width}}{n:>6}{cells}"

    for row in rows:
        if row["label"] == suite.headline:
            lines.append("-" * len(header))
        lines.append(line(row["label"], str(row["n"]), row))
        if row["label"] == suite.headline and suite.reference:
            lines.append(line(suite.reference_label, "", suite.reference))
            lines.append(line("  delta", "", {m: row[m] - v for m, v in suite.reference.items()}, "+"))
    return "\n".join(lines)


def write_json(
    path: Path,
    suite: Suite,
    config: RunConfig,
    rows: Sequence[dict[str, Any]],
    results: Sequence[QueryResult],
    seconds: float,
) -> None:
    """Summary, reference, notes and per-query scores as JSON."""
    payload = {
        "dataset": suite.name,
        "settings": {
            "chunk_tokens": config.chunk_tokens,
            "chunk_overlap": config.chunk_overlap,
            "max_results": MAX_RESULTS,
        },
        "workspaces": len(suite.workspaces),
        "notes": suite.notes,
        "headline": suite.headline,
        "rows": list(rows),
        "reference": {"label": suite.reference_label, **suite.reference},
        "seconds": round(seconds, 3),
        "queries": [{"id": r.qid, "group": r.group, **r.scores} for r in results],
    }
    path.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")


def log(message: str) -> None:
    """Progress goes to stderr so stdout holds only the report."""
    print(message, file=sys.stderr, flush=True)


# Command line ------------------------------------------------------------------------------------

Loader = Callable[[argparse.Namespace], Suite]


def _dataset_parsers(sub: Any, common: argparse.ArgumentParser) -> Iterator[tuple[str, Loader]]:
    """Register one subcommand per dataset; yield its name and loader."""
    locomo = sub.add_parser("locomo", parents=[common], help="LoCoMo: one workspace per conversation")
    locomo.add_argument("--limit-conversations", type=int, metavar="N", help="only the first N conversations")
    yield "locomo", lambda args: load_locomo(args.eval_dir, args.limit_conversations)


def build_parser() -> tuple[argparse.ArgumentParser, dict[str, Loader]]:
    """The CLI: options shared by every dataset, then one subcommand per dataset."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--eval-dir", type=Path, default=DEFAULT_EVAL_DIR, help="shared evaluation data (default: %(default)s)"
    )
    common.add_argument(
        "--cache-dir", type=Path, default=DEFAULT_CACHE_DIR, help="workspaces and indexes (default: %(default)s)"
    )
    common.add_argument("--json", type=Path, metavar="OUT", help="also write results as JSON")
    common.add_argument("--chunk-tokens", type=int, default=400, help="chunk size in tokens (default: %(default)s)")
    common.add_argument("--chunk-overlap", type=int, default=80, help="chunk overlap in tokens (default: %(default)s)")
    common.add_argument("--verbose", action="store_true", help="show memdex's own log messages")
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    sub = parser.add_subparsers(dest="dataset", required=True, metavar="DATASET")
    loaders = dict(_dataset_parsers(sub, common))
    return parser, loaders


def main(argv: Sequence[str] | None = None) -> int:
    """Load the chosen dataset, run it, print the table and optionally write JSON."""
    parser, loaders = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING, format="%(levelname)s %(name)s: %(message)s"
    )
    config = RunConfig(args.cache_dir.resolve(), args.chunk_tokens, args.chunk_overlap)
    suite = loaders[args.dataset](args)
    log(f"{suite.name}: {len(suite.workspaces)} workspace(s), "
        f"{sum(len(w.queries) for w in suite.workspaces)} queries; cache {config.cache_dir}")
    started = time.perf_counter()
    results = anyio.run(run_suite, suite, config)
    seconds = time.perf_counter() - started
    rows = summarise(suite, results)
    print(f"\n{suite.name} — chunks {config.chunk_tokens}/{config.chunk_overlap} tokens, top {MAX_RESULTS}, "
          f"macro-averaged ({seconds:.1f}s)")
    for note in suite.notes:
        print(f"  {note}")
    print()
    print(render_table(suite, rows))
    if args.json:
        write_json(args.json, suite, config, rows, results, seconds)
        log(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
