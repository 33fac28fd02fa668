"""What an agent gets for a Chinese or Japanese question at the tool's defaults, and for nonsense.

Usage (from the repository root)::

    .venv/bin/python bench/cjk_answers.py [--sets cmrc,jsquad] [--mode keyword|hybrid] [--model PATH.gguf]
        [--eval-dir ../shared/eval] [--cache-dir bench/.cache] [--probes 200] [--json out.json]

The workspaces are ``bench/quality.py``'s (one note per paragraph, the same cache), searched the way the
``memory_search`` tool answers by default (no ``max_results`` / ``min_score`` / ``max_chars`` given).
For each set's questions: the share answered, the share whose paragraph is among the hits, the share
whose answer span (any of the set's gold answers) is in the snippets the agent reads (the CJK form of
ev@4k: the default budget is 4,000 weighted characters), and the characters returned per answer, as
written and weighted (a CJK character counts four, as the budget does).

Abstention, as for English in the LoCoMo run: seeded probes that should get "nothing in memory matches
this query" - *gibberish* (4-8 characters drawn from the whole CJK Unified Ideographs block, nearly all rare)
and *unrelated words* (2-4 two-character words from the other set's questions that occur nowhere in this
set's notes, in traditional or simplified characters). The share of probes answered with nothing is reported;
1.0 is right.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:  # so `python bench/cjk_answers.py` works without an install
    sys.path.insert(0, str(REPO_ROOT))

from bench import tool_answers  # noqa: E402 - after the path fix above
from bench.quality import (  # noqa: E402
    _JSQUAD_QUESTION,
    RunConfig,
    Suite,
    load_cmrc,
    load_jsquad,
    materialise,
)
from memdex.memory_core import MemoryEngine  # noqa: E402
from memdex.memory_core.text.chunking import text_cost  # noqa: E402
from memdex.memory_core.text.han_forms import simplified  # noqa: E402

LOADERS = {"cmrc": load_cmrc, "jsquad": load_jsquad}
_HAN_RUN = re.compile(r"[\u3040-\u30ff\u4e00-\u9fff]{2,}")
NOTHING = "nothing in memory matches this query"


def gold_answers(eval_dir: Path, name: str) -> dict[str, list[str]]:
    """Each paragraph's first (non-blank) question's gold answer texts, by the loader's document id."""
    if name == "cmrc":
        contexts = json.loads((eval_dir / "cmrc2018" / "cmrc2018_trial.json").read_text(encoding="utf-8"))
        found: dict[str, list[str]] = {}
        for context in contexts:
            asked = [q for q in context["qas"] if str(q["query_text"]).strip()]
            if asked:
                found[str(context["context_id"])] = [str(a) for a in asked[0]["answers"]]
        return found
    data = json.loads((eval_dir / "jsquad" / "test-v1.3.json").read_text(encoding="utf-8"))["data"]
    answers: dict[str, list[str]] = {}
    for article in data:
        for paragraph in article["paragraphs"]:
            answerable = [q for q in paragraph["qas"] if not q.get("is_impossible")]
            if answerable:
                doc_id = _JSQUAD_QUESTION.sub("", str(answerable[0]["id"]))  # as load_jsquad names it
                answers[doc_id] = [str(a["text"]) for a in answerable[0]["answers"]]
    return answers


def probes(corpus: str, other_questions: Sequence[str], count: int, seed: str) -> dict[str, list[str]]:
    """Seeded gibberish and unrelated-word queries (see the module docstring)."""
    rng = random.Random(seed)
    gibberish = ["".join(chr(rng.randint(0x4E00, 0x9FFF)) for _ in range(rng.randint(4, 8))) for _ in range(count)]
    words = sorted({run[at : at + 2] for q in other_questions for run in _HAN_RUN.findall(q) for at in range(len(run) - 1)})
    folded = simplified(corpus)  # absent in either form: the index holds 東京 as 东京
    absent = [word for word in words if simplified(word) not in folded]
    unrelated = [" ".join(rng.sample(absent, rng.randint(2, 4))) for _ in range(count)]
    return {"gibberish": gibberish, "unrelated": unrelated}


@dataclass
class Tally:
    asked: int = 0
    answered: int = 0
    paragraph: int = 0
    answer_read: int = 0
    chars: int = 0
    weighted: int = 0

    def row(self) -> dict[str, float]:
        n = max(self.asked, 1)
        return {
            "n": self.asked, "answered": self.answered / n, "paragraph_returned": self.paragraph / n,
            "answer_read": self.answer_read / n, "chars": self.chars / n, "weighted_chars": self.weighted / n,
        }  # fmt: skip


async def run_set(name: str, suite: Suite, other: Suite, args: argparse.Namespace) -> dict[str, Any]:
    ws = suite.workspaces[0]
    config = RunConfig(cache_dir=args.cache_dir, model=args.model, threads=args.threads)
    mode = tool_answers.default_mode(args.mode)
    base = config.cache_dir / suite.name / ws.name
    materialise(ws, base / "workspace")
    settings = config.settings(mode, base / "workspace", base, ws.extra_paths)
    answers = gold_answers(args.eval_dir, name)
    corpus = "".join(ws.files.values())
    asked = probes(corpus, [q.text for q in other.workspaces[0].queries], args.probes, f"{name}-probes")
    tally = Tally()
    empty: dict[str, int] = dict.fromkeys(asked, 0)
    async with MemoryEngine(settings, background_sync=False) as engine:
        await engine.sync()
        started = time.perf_counter()
        for query in ws.queries:
            answer = await engine.search(query.text)
            snippets = "\n".join(hit.snippet for hit in answer.results)
            relevant = {unit.path for unit in query.relevant}
            tally.asked += 1
            tally.answered += bool(answer.results)
            tally.paragraph += any(hit.path in relevant for hit in answer.results)
            tally.answer_read += any(gold in snippets for gold in answers.get(query.qid, []))
            tally.chars += len(snippets)
            tally.weighted += text_cost(snippets)
        for kind, texts in asked.items():
            for text in texts:
                answer = await engine.search(text)
                empty[kind] += not answer.results and NOTHING in (answer.warning or "")
        seconds = time.perf_counter() - started
    return {"set": name, "mode": args.mode, **tally.row(),
            **{f"{kind}_nothing": empty[kind] / len(texts) for kind, texts in asked.items()},
            "seconds": round(seconds, 1)}  # fmt: skip


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", default="cmrc,jsquad")
    tool_answers.add_arguments(parser)
    parser.add_argument("--probes", type=int, default=200)
    args = parser.parse_args(argv)
    suites = {name: loader(args.eval_dir) for name, loader in LOADERS.items()}
    rows = []
    for name in args.sets.split(","):
        other = suites["jsquad" if name == "cmrc" else "cmrc"]
        rows.append(anyio.run(run_set, name, suites[name], other, args))
    tool_answers.print_rows(rows, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
