"""MemoryBank, English beside Chinese: what the memory_search tool answers by default on chat memory.

Usage (from the repository root)::

    .venv/bin/python bench/memorybank.py [--langs en,cn] [--together] [--mode keyword|hybrid] [--model PATH.gguf]
        [--eval-dir ../shared/eval] [--cache-dir bench/.cache] [--other 20] [--json out.json]

MemoryBank (``../shared/eval/memorybank``) holds the same chats in English and in Chinese: 15 simulated users,
ten days each, and 100 probing questions. It has no gold answers and no evidence labels, so it cannot score
ranking; it shows whether a language is served alike on chat-shaped memory (short lines, one day per file),
which the Wikipedia reading sets (CMRC, JSQuAD) do not. Each user's days become ``memory/YYYY-MM-DD.md``, one
line per message (``- **name**: text``), and each question is searched as the tool answers it by default:

- *answered*: the share of probing questions given any hit (every one asks about the user's own chats);
- *day found*: of the questions that name a day (``On May 6th``, ``在5月6号``), the share whose hits include
  that day's log, a judgement the question states itself (an agent would pass the day as ``after``/``before``;
  this asks without, as a keyword search must find it);
- characters read per answer, as written and weighted (a CJK character counts four, as the budget does);
- *other topic, nothing*: the share of questions from another set (CMRC 2018 for Chinese, SciFact for
  English; ``--other`` per user, seeded) answered with "nothing in memory matches this query".

``--together`` also asks each language's questions of a bilingual memory: the n-th user of every bank in one
workspace, each day's log holding that day's chats in every language of ``--langs`` (rows ``en with cn``).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import anyio

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:  # so `python bench/memorybank.py` works without an install
    sys.path.insert(0, str(REPO_ROOT))

from bench import tool_answers  # noqa: E402 - after the path fix above
from bench.quality import (  # noqa: E402
    BenchWorkspace,
    RunConfig,
    load_cmrc,
    load_scifact,
    materialise,
)
from memdex.memory_core import MemoryEngine  # noqa: E402
from memdex.memory_core.text.chunking import text_cost  # noqa: E402

YEAR = 2023  # the chats run 2023-04-27 to 2023-05-06
_MONTHS = {"april": 4, "may": 5}
_DAY = {
    "en": re.compile(r"\b(April|May)\s+(\d{1,2})(?:st|nd|rd|th)?\b", re.IGNORECASE),
    "cn": re.compile(r"(\d{1,2})月(\d{1,2})[日号]"),
}
_OTHER_SETS = {"en": load_scifact, "cn": load_cmrc}


@dataclass(frozen=True)
class User:
    """One user's chat days as a workspace, and the probing questions about them."""

    workspace: BenchWorkspace
    questions: list[str]


def named_day(lang: str, question: str) -> str | None:
    """The log the question names (``memory/2023-05-06.md``), or None."""
    found = _DAY[lang].search(question)
    if found is None:
        return None
    month, day = (_MONTHS[found[1].lower()], int(found[2])) if lang == "en" else (int(found[1]), int(found[2]))
    return f"memory/{YEAR}-{month:02d}-{day:02d}.md"


def load_users(eval_dir: Path, lang: str) -> list[User]:
    """Every user of the ``lang`` bank with probing questions (the bank's names may carry stray spaces)."""
    folder = eval_dir / "memorybank"
    bank = json.loads((folder / f"memory_bank_{lang}.json").read_text(encoding="utf-8"))
    by_name = {name.strip(): value for name, value in bank.items()}
    users: list[User] = []
    for line in (folder / f"probing_questions_{lang}.jsonl").read_text(encoding="utf-8").splitlines():
        for name, questions in (json.loads(line) if line.strip() else {}).items():
            history = by_name[name.strip()]["history"]
            files = {
                f"memory/{day}.md": "".join(
                    f"- **{name.strip()}**: {turn['query']}\n- **AI**: {turn['response']}\n" for turn in turns
                )
                for day, turns in history.items()
            }
            users.append(User(BenchWorkspace(f"user{len(users) + 1:02d}", files, []), list(questions)))
    return users


@dataclass
class Tally:
    asked: int = 0
    answered: int = 0
    dated: int = 0
    day_found: int = 0
    chars: int = 0
    weighted: int = 0
    other: int = 0
    other_nothing: int = 0


def together(users: Mapping[str, Sequence[User]]) -> dict[str, list[User]]:
    """Per language, its users with their questions over a bilingual memory: the n-th user of every language
    in one workspace, each day's log holding that day's chats in every language, in ``users``' order."""
    merged: dict[str, list[User]] = {lang: [] for lang in users}
    for group in zip(*users.values(), strict=True):
        days = sorted({day for user in group for day in user.workspace.files})
        files = {day: "".join(user.workspace.files.get(day, "") for user in group) for day in days}
        for lang, user in zip(users, group, strict=True):
            merged[lang].append(User(replace(user.workspace, files=files), user.questions))
    return merged


async def run_lang(lang: str, args: argparse.Namespace, memory_langs: Sequence[str] = ()) -> dict[str, Any]:
    """Search every user's questions and other-topic probes in ``lang``; the row of figures. With
    ``memory_langs``, over the memory holding each user's chats in all of them (:func:`together`)."""
    config = RunConfig(cache_dir=args.cache_dir, model=args.model, threads=args.threads)
    mode = tool_answers.default_mode(args.mode)
    others = [query.text for query in _OTHER_SETS[lang](args.eval_dir).workspaces[0].queries]
    if memory_langs:
        users = together({name: load_users(args.eval_dir, name) for name in memory_langs})[lang]
    else:
        users = load_users(args.eval_dir, lang)
    tally = Tally()
    for user in users:
        base = config.cache_dir / f"memorybank-{'+'.join(memory_langs) or lang}" / user.workspace.name
        materialise(user.workspace, base / "workspace")
        settings = config.settings(mode, base / "workspace", base, ())
        async with MemoryEngine(settings, background_sync=False) as engine:
            await engine.sync()
            for question in user.questions:
                answer = await engine.search(question)
                snippets = "\n".join(hit.snippet for hit in answer.results)
                tally.asked += 1
                tally.answered += bool(answer.results)
                tally.chars += len(snippets)
                tally.weighted += text_cost(snippets)
                if day := named_day(lang, question):
                    tally.dated += 1
                    tally.day_found += any(hit.path == day for hit in answer.results)
            for probe in random.Random(f"{lang}-{user.workspace.name}").sample(others, args.other):
                tally.other += 1
                tally.other_nothing += not (await engine.search(probe)).results
    answered = max(tally.answered, 1)
    label = " with ".join([lang, "+".join(name for name in memory_langs if name != lang)]) if memory_langs else lang
    return {
        "lang": label, "mode": args.mode, "n": tally.asked, "answered": tally.answered / tally.asked,
        "dated": tally.dated, "day_found": tally.day_found / max(tally.dated, 1),
        "chars": tally.chars / answered, "weighted_chars": tally.weighted / answered,
        "other_topic_nothing": tally.other_nothing / max(tally.other, 1),
    }  # fmt: skip


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--langs", default="en,cn")
    tool_answers.add_arguments(parser)
    parser.add_argument("--other", type=int, default=20, help="other-topic questions per user")
    parser.add_argument("--together", action="store_true", help="also every language's chats in one memory")
    args = parser.parse_args(argv)
    langs = args.langs.split(",")
    rows = [anyio.run(run_lang, lang, args) for lang in langs]
    if args.together:
        rows += [anyio.run(run_lang, lang, args, langs) for lang in langs]
    tool_answers.print_rows(rows, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
