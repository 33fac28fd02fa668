"""The ``append`` section of ``bench/perf.py``: append latency on a short and a long daily log.

``MemoryEngine.append`` returns once its note is indexed, so its latency includes re-indexing the log.
Each run appends to a fresh 1 KB log and a fresh 1 MB log of the same generated Markdown (keyword-only,
SQLite, one engine per log), with one writer and with eight writers at once, and reports each append's
p50 and the ratio long / short measured in the same run.
"""

from __future__ import annotations

import datetime as dt
import random
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import anyio

from memdex.memory_core import MemoryEngine, Settings

from .perf_support import Metric, percentile, summary

SIZES = {"1 KB": 1_000, "1 MB": 1_000_000}
WRITERS = (1, 8)
TARGET_RATIO = 1.5  # the issue: a 1 MB log's append p50 within 1.5x of a 1 KB log's
_WORDS = [
    "deploy",
    "key",
    "owner",
    "billing",
    "service",
    "rotate",
    "nightly",
    "backup",
    "review",
    "merge",
    "tests",
    "flaky",
    "cache",
    "index",
]


def write_log(path: Path, size: int, seed: int) -> None:
    """A daily log of about ``size`` bytes: a title, then ``## heading`` + paragraph entries."""
    rng = random.Random(seed)
    parts, used, n = [f"# {path.stem}\n\n"], 0, 0
    while used < size:
        entry = f"## Entry {n}\n\n" + " ".join(rng.choice(_WORDS) for _ in range(rng.randint(15, 60))) + "\n\n"
        parts.append(entry)
        used, n = used + len(entry), n + 1
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(parts), encoding="utf-8")


async def append_latencies(settings: Settings, writers: int, appends: int) -> list[float]:
    """Seconds of each of ``appends`` appends (``writers`` at once) to today's log of an indexed workspace."""
    latencies: list[float] = []
    async with MemoryEngine(settings, background_sync=False) as engine:
        await engine.sync()

        async def writer(w: int) -> None:
            for i in range(appends // writers):
                started = time.perf_counter()
                await engine.append(f"Writer {w} note {i}: rotated the zq{w}x{i} deploy key.")
                latencies.append(time.perf_counter() - started)

        async with anyio.create_task_group() as tg:
            for w in range(writers):
                tg.start_soon(writer, w)
    return latencies


async def measure(
    work: Path, settings_for: Callable[[Path, Path], Settings], runs: int, appends: int, seed: int
) -> list[Metric]:
    """p50 per log size and writer count, and the long / short ratio per run (median over ``runs``)."""
    today = dt.datetime.now(dt.UTC).date().isoformat()  # the engines run in UTC
    p50s: dict[tuple[str, int], list[float]] = {(size, w): [] for size in SIZES for w in WRITERS}
    ratios: dict[int, list[float]] = {w: [] for w in WRITERS}
    for run in range(runs):
        for writers in WRITERS:
            order = list(SIZES) if run % 2 == 0 else list(reversed(SIZES))  # alternate which goes first
            for label in order:
                root = work / f"append-{run}-{writers}-{label.replace(' ', '')}"
                write_log(root / "ws" / "memory" / f"{today}.md", SIZES[label], seed)
                settings = settings_for(root / "ws", root / "index.sqlite")
                p50s[label, writers].append(percentile(await append_latencies(settings, writers, appends), 0.5))
            short, long = (p50s[label, writers][-1] for label in SIZES)
            ratios[writers].append(long / short)
    metrics: list[Metric] = []
    for writers in WRITERS:
        who = "1 writer" if writers == 1 else f"{writers} writers at once"
        for label in SIZES:
            values = p50s[label, writers]
            metrics.append(Metric("append", f"append p50, {label} log, {who}", statistics.median(values) * 1000, "ms",
                                  note=f"{appends} appends, keyword-only, SQLite", detail=summary(values)))  # fmt: skip
        metrics.append(Metric("append", f"append p50, 1 MB / 1 KB log, {who}", statistics.median(ratios[writers]), "x",
                              TARGET_RATIO, note="ratio per run, median", detail=summary(ratios[writers])))  # fmt: skip
    return metrics
