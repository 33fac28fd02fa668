"""Hints for misspelt words: how often ``memory_search`` names the word a misspelt query meant, how often it
hints on a query of another topic, and what the hint costs.

Usage (from the repository root)::

    .venv/bin/python bench/hints.py [--sets locomo,cisi,scifact] [--limit-conversations N]
        [--eval-dir ../shared/eval] [--cache-dir bench/.cache] [--store DIR] [--json out.json]

Keyword-only, on the workspaces ``bench/quality.py`` builds (and caches). For each set, every query of the
``typo`` variant (``bench/variants.py``: one content word misspelt) whose terms differ from the original's
in exactly that word is searched as the tool answers by default:

- *misspelt*: queries whose misspelt word no note holds (else the notes hold it as spelt: no hint is due);
- *takes*: of those, the words a hint is sought for (ASCII letters, six or more);
- *hinted*: answers whose ``warning`` hints for the misspelt word; *right*: the hint is the original word.

For LoCoMo it also searches the abstention probes (``bench/quality.py``: gibberish, absent real words, and
SciFact claims asked of a chat) and counts the answers with a hint, and those that name a notes' word of the
same porter stem (``memory_core/search/other_forms.py``): for these no hint is right.

``--store DIR`` (a store folder ``bench/perf.py`` built and cached, e.g. ``bench/.cache/store-100000c-…``) also
times, alternated over two rounds, the perf queries as generated and with their longest word misspelt:
search p50 / p95, and the hint's own lookup for the misspelt ones.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:  # so `python bench/hints.py` works without an install
    sys.path.insert(0, str(REPO_ROOT))

from bench import workspace_gen  # noqa: E402 - after the path fix above
from bench.quality import (  # noqa: E402
    BASE_MODES,
    DEFAULT_CACHE_DIR,
    DEFAULT_EVAL_DIR,
    RunConfig,
    Suite,
    load_cisi,
    load_locomo,
    load_scifact,
    materialise,
)
from bench.variants import apply_variant, misspell_word  # noqa: E402
from memdex.memory_core import MemoryEngine  # noqa: E402
from memdex.memory_core.config import load_settings  # noqa: E402
from memdex.memory_core.search.near_words import correctable  # noqa: E402
from memdex.memory_core.text.terms import query_terms  # noqa: E402

SETS = ("locomo", "cisi", "scifact")


def misspelt_word(original: str, typo: str) -> tuple[str, str] | None:
    """(the original word, its misspelling) when the two queries' terms differ in exactly one word."""
    before, after = query_terms(original), query_terms(typo)
    changed = [(a, b) for a, b in zip(before, after, strict=False) if a != b]
    return changed[0] if len(before) == len(after) and len(changed) == 1 else None


def hinted(warning: str | None, word: str) -> str | None:
    """The hint the answer's warning gives for ``word``, if any."""
    marker = f'"{word}" (did you mean "'
    text = warning or ""
    at = text.find(marker)
    return text[at + len(marker) :].split('"', 1)[0] if at >= 0 else None


async def measure_set(name: str, args: argparse.Namespace) -> dict[str, Any]:
    """The typo counts of one set and, for LoCoMo, the probes answered with a hint."""
    load = {
        "locomo": lambda: load_locomo(args.eval_dir, args.limit_conversations),
        "cisi": lambda: load_cisi(args.eval_dir, None),
        "scifact": lambda: load_scifact(args.eval_dir, None),
    }[name]
    full: Suite = apply_variant(load(), "full")
    typo: Suite = apply_variant(load(), "typo")
    config = RunConfig(cache_dir=args.cache_dir.resolve(), model=None, threads=1, window_tokens=None)
    counts: Counter[str] = Counter()
    probes: Counter[str] = Counter()
    for ws, typo_ws in zip(full.workspaces, typo.workspaces, strict=True):
        base = config.cache_dir / full.folder / ws.name
        materialise(ws, base / "workspace")
        settings = config.settings(BASE_MODES["keyword"], base / "workspace", base, ws.extra_paths)
        async with MemoryEngine(settings, background_sync=False) as engine:
            await engine.sync()
            for query, asked in zip(ws.queries, typo_ws.queries, strict=True):
                pair = misspelt_word(query.text, asked.text)
                if pair is None:
                    continue
                original, wrong = pair
                answer = await engine.search(asked.text)
                if not await engine.index.read(lambda conn, w=wrong: engine.index.ops.term_counts(conn, [w])[w]):
                    counts["misspelt"] += 1
                    counts["takes"] += correctable(wrong)
                    hint = hinted(answer.warning, wrong)
                    counts["hinted"] += hint is not None
                    counts["right"] += hint == original
            for probe in ws.probes:
                answer = await engine.search(probe.text)
                probes[f"{probe.kind} n"] += 1
                probes[f"{probe.kind} nothing"] += not answer.results
                probes[f"{probe.kind} hinted"] += "did you mean" in (answer.warning or "")
                probes[f"{probe.kind} form"] += "(the notes say" in (answer.warning or "")
    return {"set": name, **{k: counts[k] for k in ("misspelt", "takes", "hinted", "right")}, "probes": dict(probes)}


async def time_store(store: Path, rounds: int = 2) -> dict[str, float]:
    """Search p50 / p95 (ms) of the perf queries as generated and misspelt, and of the hint's lookup alone."""
    meta = json.loads((store / "store.json").read_text())
    queries = workspace_gen.sample_queries(meta["files"], 200, 0, lang="en")
    rng = random.Random(1)
    typos = []
    for text in queries:
        words = text.split()
        longest = max(range(len(words)), key=lambda i: len(words[i]))
        words[longest] = misspell_word(words[longest], rng)
        typos.append(" ".join(words))
    settings = load_settings(workspace=store / "workspace", index_path=store / "index.sqlite",
                             embedding={"provider": "none"}, timezone="UTC")  # fmt: skip
    times: dict[str, list[float]] = {"as generated": [], "misspelt": [], "hint lookup": []}
    async with MemoryEngine(settings, background_sync=False) as engine:
        await engine.sync()
        searcher = engine.searcher
        for text in queries[:5] + typos[:5]:  # warm-up
            await engine.search(text)
        for _ in range(rounds):
            for text, wrong in zip(queries, typos, strict=True):
                for label, asked in (("as generated", text), ("misspelt", wrong)):
                    started = time.perf_counter()
                    await engine.search(asked)
                    times[label].append(time.perf_counter() - started)
                missing = [t for t in query_terms(wrong) if not await engine.index.read(
                    lambda conn, t=t: engine.index.ops.term_counts(conn, [t])[t])]  # fmt: skip
                if missing:
                    started = time.perf_counter()
                    await engine.index.read(
                        lambda conn, m=missing: searcher._near_words(conn, m, lambda words: engine.index.ops.term_counts(conn, words)))  # fmt: skip
                    times["hint lookup"].append(time.perf_counter() - started)
    result: dict[str, float] = {}
    for label, samples in times.items():
        ordered = sorted(samples)
        result[f"{label} p50 ms"] = round(statistics.median(ordered) * 1000, 2)
        result[f"{label} p95 ms"] = round(ordered[int(0.95 * len(ordered))] * 1000, 2)
    return result


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--sets", default=",".join(SETS), help="comma-separated (default: %(default)s)")
    parser.add_argument("--limit-conversations", type=int, metavar="N", help="LoCoMo: only the first N chats")
    parser.add_argument("--eval-dir", type=Path, default=DEFAULT_EVAL_DIR)
    parser.add_argument("--cache-dir", type=Path, default=DEFAULT_CACHE_DIR)
    parser.add_argument("--store", type=Path, metavar="DIR", help="a bench/perf.py store folder to time on")
    parser.add_argument("--json", type=Path, metavar="OUT")
    args = parser.parse_args(argv)
    sets = [name for name in args.sets.split(",") if name]
    if unknown := [name for name in sets if name not in SETS]:
        parser.error(f"unknown set(s) {', '.join(unknown)}: use {', '.join(SETS)}")
    rows = [anyio.run(measure_set, name, args) for name in sets]
    print("| set | misspelt | takes | hinted | right |")
    print("|---|---:|---:|---:|---:|")
    for row in rows:
        print(f"| {row['set']} | {row['misspelt']} | {row['takes']} | {row['hinted']} | {row['right']} |")
    for row in rows:
        if row["probes"]:
            kinds = dict.fromkeys(key.rsplit(" ", 1)[0] for key in row["probes"])
            print(f"\n{row['set']} probes (kind: n, answered with nothing, hinted, named a derived form):")
            for kind in kinds:
                p = row["probes"]
                print(f"  {kind}: {p[kind + ' n']}, {p[kind + ' nothing']}, {p[kind + ' hinted']}, {p[kind + ' form']}")
    timing = anyio.run(time_store, args.store) if args.store else {}
    for label, value in timing.items():
        print(f"{label}: {value}")
    if args.json:
        args.json.write_text(json.dumps({"sets": rows, "timing": timing}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
