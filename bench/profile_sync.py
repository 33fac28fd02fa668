"""cProfile of one keyword-only full index of a generated workspace, then of keyword searches on it:
where the time of ``bench/perf.py``'s index and search sections goes, worker threads included.

Usage (from the repository root; with another tree's Python to profile that tree's code)::

    .venv/bin/python bench/profile_sync.py [--files 10000] [--lang en|cjk] [--queries 50] [--top 25]

The engine runs its SQLite and file work through ``anyio.to_thread.run_sync``; each such call is profiled
in its worker thread and the profiles are added to the event loop thread's. ``--queries 0`` skips search.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:  # so `python bench/profile_sync.py` works without an install
    sys.path.insert(0, str(REPO_ROOT))

from bench import workspace_gen
from bench.perf_support import (
    DEFAULT_CACHE,
    DEFAULT_MODEL,
    MEMDEX_ROOT,
    bench_settings,
    cached_workspace,
    isolate_environment,
)
from memdex.memory_core import MemoryEngine


class ThreadProfiles:
    """One ``cProfile.Profile`` per worker thread, on only while a ``run_sync`` call runs there."""

    def __init__(self) -> None:
        self._local = threading.local()
        self.profiles: list[cProfile.Profile] = []
        self._run_sync = anyio.to_thread.run_sync

    def wrap(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        def profiled(*args: Any) -> Any:
            profile = getattr(self._local, "profile", None)
            if profile is None:
                profile = self._local.profile = cProfile.Profile()
                self.profiles.append(profile)
            profile.enable()
            try:
                return fn(*args)
            finally:
                profile.disable()

        return profiled

    def __enter__(self) -> ThreadProfiles:
        original = self._run_sync

        async def run_sync(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
            return await original(self.wrap(fn), *args, **kwargs)

        anyio.to_thread.run_sync = run_sync  # type: ignore[assignment]
        return self

    def __exit__(self, *exc: object) -> None:
        anyio.to_thread.run_sync = self._run_sync


def report(title: str, main: cProfile.Profile, threads: ThreadProfiles, top: int) -> None:
    """The ``top`` functions by own time and by cumulative time, over all threads."""
    stats = pstats.Stats(main)
    for profile in threads.profiles:
        stats.add(profile)
    stats.strip_dirs()
    for order in ("tottime", "cumulative"):
        print(f"\n== {title}, by {order} ==")
        stats.sort_stats(order).print_stats(top)


async def run(args: argparse.Namespace, work: Path) -> None:
    workspace = cached_workspace(args.cache_dir, args.files, 0, args.lang)
    settings = bench_settings(workspace, work / "index.sqlite", "none", DEFAULT_MODEL)
    print(f"memdex from {MEMDEX_ROOT}; {args.files:,} files ({args.lang}) at {workspace}")
    async with MemoryEngine(settings, background_sync=False) as engine:
        main = cProfile.Profile()
        with ThreadProfiles() as threads:
            main.enable()
            sync = await engine.sync()
            main.disable()
        print(f"full index: {sync.seconds:.2f} s under the profiler")
        report("full index", main, threads, args.top)
        if args.queries:
            queries = workspace_gen.sample_queries(args.files, args.queries, lang=args.lang)
            await engine.search(queries[0])  # warm-up
            main = cProfile.Profile()
            with ThreadProfiles() as threads:
                main.enable()
                for q in queries:
                    await engine.search(q)
                main.disable()
            report(f"{len(queries)} keyword searches", main, threads, args.top)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--lang", choices=workspace_gen.LANGS, default="en")
    parser.add_argument("--queries", type=int, default=50, help="keyword searches to profile after the index")
    parser.add_argument("--top", type=int, default=25, help="functions listed per table")
    parser.add_argument("--cache-dir", type=Path, default=DEFAULT_CACHE, help="where the workspace is cached")
    args = parser.parse_args()
    args.cache_dir = args.cache_dir.resolve()
    args.cache_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="memdex-profile-") as tmp:
        isolate_environment(Path(tmp))
        anyio.run(run, args, Path(tmp))
    return 0


if __name__ == "__main__":
    sys.exit(main())
