"""What the scripts that search as the ``memory_search`` tool answers by default share (``bench/cjk_answers.py``,
``bench/memorybank.py``): their options, the mode, and the table they print."""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from bench.quality import BASE_MODES, DEFAULT_CACHE_DIR, DEFAULT_EVAL_DIR, DEFAULT_MODEL, Mode


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``--mode keyword|hybrid``, ``--model``, ``--threads``, ``--eval-dir``, ``--cache-dir``, ``--json``."""
    parser.add_argument("--mode", choices=["keyword", "hybrid"], default="keyword")
    parser.add_argument("--model", type=Path, default=DEFAULT_MODEL)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--eval-dir", type=Path, default=DEFAULT_EVAL_DIR)
    parser.add_argument("--cache-dir", type=Path, default=DEFAULT_CACHE_DIR)
    parser.add_argument("--json", type=Path)


def default_mode(name: str) -> Mode:
    """``keyword``, or ``hybrid`` at memdex's default fusion (0.2 / 0.8), not the benchmark's OpenClaw weights."""
    return BASE_MODES["keyword"] if name == "keyword" else replace(BASE_MODES["hybrid"], query={})


def print_rows(rows: Sequence[Mapping[str, Any]], out: Path | None) -> None:
    """``rows`` (one dict each, the same keys) as a Markdown table, floats to 3 places; also as JSON to ``out``."""
    columns = list(rows[0])
    print("| " + " | ".join(columns) + " |")
    print("|" + "---|" * len(columns))
    for row in rows:
        print("| " + " | ".join(f"{v:.3f}" if isinstance(v, float) else str(v) for v in row.values()) + " |")
    if out:
        out.write_text(json.dumps(list(rows), indent=2), encoding="utf-8")
