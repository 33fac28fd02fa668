"""Search p50 of two checkouts of memdex, interleaved in one run: the ratio a speed target asks for.

This machine's speed drifts by ±20 % from one minute to the next, more than the gaps the speed targets
ask about (1.1×), so two ``bench/perf.py`` runs one after the other cannot tell 1.05× from 1.15×. Here
each checkout holds its own engines open in a worker process of its own, over a store of the same
generated memory that its own code indexed (cached apart, as ``bench/perf.py`` caches it), and the two
take turns: a block of queries on one, the same block on the other, the order flipped from block to
block. Both then see the same drift. The ratio is HEAD's p50 over BASE's, of all samples, with a 95 %
interval from resampling the blocks.

Usage (from the repository root)::

    .venv/bin/python bench/perf_ab.py 4dacebe                 # that commit against this checkout as it is
    .venv/bin/python bench/perf_ab.py 4dacebe HEAD~1 --chunks 100000 --blocks 40 --json ab.json

BASE and HEAD are commits (checked out into a temporary git worktree) or folders holding a checkout;
HEAD defaults to this checkout, uncommitted changes included. Queries and their vectors (from the real
model, as in ``bench/perf.py``) are the same for both; the document vectors are synthetic.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import inspect
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
PACKAGE_DIRS = ("memory_core", "server", "prompts")  # what ``memdex.*`` maps to (pyproject.toml's package-dir)
MODES = ("keyword", "hybrid")
RESAMPLES = 2_000


# The coordinator ----------------------------------------------------------------------------------


@contextlib.contextmanager
def checkout(rev: str, scratch: Path) -> Iterator[Path]:
    """The folder holding ``rev``: itself when it is one, else a temporary detached worktree of this repo."""
    if Path(rev).is_dir():
        yield Path(rev).resolve()
        return
    tree = scratch / f"tree-{rev.replace('/', '_')}"
    subprocess.run(["git", "-C", str(REPO_ROOT), "worktree", "add", "--detach", "--quiet", str(tree), rev], check=True)
    try:
        yield tree
    finally:
        subprocess.run(["git", "-C", str(REPO_ROOT), "worktree", "remove", "--force", str(tree)], check=False)


def describe(tree: Path) -> str:
    """The tree's short commit, ``+changes`` when it has uncommitted ones."""
    git = ["git", "-C", str(tree)]
    commit = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run([*git, "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True)
    return (commit or tree.name) + ("+changes" if dirty.stdout.strip() else "")


def package_shim(tree: Path, scratch: Path) -> Path:
    """A folder whose ``memdex`` package is ``tree``'s code, to put first on a worker's path."""
    root = scratch / "memdex-of" / tree.name
    package = root / "memdex"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    for name in PACKAGE_DIRS:
        if (tree / name).is_dir():
            (package / name).symlink_to(tree / name)
    return root


class Worker:
    """One checkout's worker process: sends it blocks of queries, reads back their times."""

    def __init__(self, label: str, tree: Path, scratch: Path, args: argparse.Namespace, queries: Path) -> None:
        self.label = label
        env = {k: v for k, v in os.environ.items() if not k.startswith("MEMDEX_")}
        env["PYTHONPATH"] = os.pathsep.join([str(package_shim(tree, scratch / label)), str(tree)])
        cache = args.cache_dir / f"ab-{label}"
        command = [sys.executable, str(Path(__file__).resolve()), "--worker", str(cache), str(queries),
                   "--chunks", str(args.chunks), "--seed", str(args.seed), "--lang", args.lang,
                   "--model", str(args.model)]  # fmt: skip
        self.proc = subprocess.Popen(
            command, cwd=tree, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        self.store = self._reply()

    def _reply(self) -> Any:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise SystemExit(f"the {self.label} worker stopped (exit code {self.proc.wait()}); see its errors above")
        return json.loads(line)

    def run(self, mode: str, queries: Sequence[int]) -> list[float]:
        """Seconds each of ``queries`` (indexes into the shared list) took, searched in ``mode``."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"mode": mode, "queries": list(queries)}) + "\n")
        self.proc.stdin.flush()
        times: list[float] = self._reply()
        return times

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def query_vectors(queries: Sequence[str], model: Path, path: Path) -> None:
    """The queries and their vectors from the real local model, written to ``path`` for both workers."""
    import anyio

    from memdex.memory_core.config_sections import LocalEmbeddingSettings
    from memdex.memory_core.embeddings.local import LocalProvider

    async def embed() -> list[list[float]]:
        provider = LocalProvider(LocalEmbeddingSettings(model=str(model)))
        await provider.start()
        try:
            return [await provider.embed_query(q) for q in queries]
        finally:
            await provider.aclose()

    path.write_text(json.dumps({"queries": list(queries), "vectors": anyio.run(embed)}))


def p50(values: Sequence[float]) -> float:
    return statistics.median(values)


def ratio_interval(base: Sequence[Sequence[float]], head: Sequence[Sequence[float]], seed: int) -> tuple[float, float]:
    """The 95 % interval of p50(head) / p50(base) when the blocks (pairs of samples taken side by side) are
    drawn again with replacement."""
    rng = random.Random(seed)
    ratios = []
    for _ in range(RESAMPLES):
        picks = [rng.randrange(len(base)) for _ in base]
        ratios.append(p50([t for i in picks for t in head[i]]) / p50([t for i in picks for t in base[i]]))
    ratios.sort()
    return ratios[int(0.025 * RESAMPLES)], ratios[int(0.975 * RESAMPLES) - 1]


def compare(args: argparse.Namespace) -> dict[str, Any]:
    """Both checkouts' workers, the blocks taken in turn, and each mode's figures."""
    from bench import workspace_gen
    from bench.perf_support import isolate_environment

    with tempfile.TemporaryDirectory(prefix="memdex-ab-") as tmp, contextlib.ExitStack() as stack:
        scratch = Path(tmp)
        isolate_environment(scratch / "state")
        trees = {"base": stack.enter_context(checkout(args.base, scratch)),
                 "head": stack.enter_context(checkout(args.head, scratch))}  # fmt: skip
        labels = {side: describe(tree) for side, tree in trees.items()}
        if labels["base"] == labels["head"]:
            labels = {side: f"{label}-{side}" for side, label in labels.items()}
        queries = workspace_gen.sample_queries(args.files, args.queries, args.seed, lang=args.lang)
        vectors = scratch / "queries.json"
        query_vectors(queries, args.model, vectors)
        workers: dict[str, Worker] = {}
        try:
            for side in ("base", "head"):
                print(f"{side}: {labels[side]} ({trees[side]}): opening its store", flush=True)
                workers[side] = Worker(labels[side], trees[side], scratch, args, vectors)
                print(
                    f"  {workers[side].store['chunks']:,} chunks in {workers[side].store['files']:,} files", flush=True
                )
            everything = list(range(len(queries)))
            for worker in workers.values():  # warm-up: page cache, connections, the code's own caches
                for mode in args.modes:
                    worker.run(mode, everything)
            rng = random.Random(args.seed)
            blocks: dict[str, dict[str, list[list[float]]]] = {m: {"base": [], "head": []} for m in args.modes}
            for number in range(args.blocks):
                picked = rng.sample(everything, min(args.block, len(everything)))
                order = ("base", "head") if number % 2 == 0 else ("head", "base")
                for mode in args.modes:
                    for side in order:
                        blocks[mode][side].append(workers[side].run(mode, picked))
                if (number + 1) % 10 == 0 or number + 1 == args.blocks:
                    print(f"  block {number + 1}/{args.blocks}", flush=True)
        finally:
            for worker in workers.values():
                worker.close()
    results: dict[str, Any] = {"base": labels["base"], "head": labels["head"], "chunks": args.chunks,
                               "queries": len(queries), "blocks": args.blocks, "block": args.block, "modes": {}}  # fmt: skip
    for mode, sides in blocks.items():
        base = p50([t for block in sides["base"] for t in block])
        head = p50([t for block in sides["head"] for t in block])
        low, high = ratio_interval(sides["base"], sides["head"], args.seed)
        block_ratios = [p50(h) / p50(b) for b, h in zip(sides["base"], sides["head"], strict=True)]
        results["modes"][mode] = {"base_p50_ms": base * 1000, "head_p50_ms": head * 1000, "ratio": head / base,
                                  "interval": [low, high], "block_ratio_median": p50(block_ratios),
                                  "block_ratio_range": [min(block_ratios), max(block_ratios)]}  # fmt: skip
    return results


def report(results: dict[str, Any]) -> str:
    """The figures as lines of text."""
    lines = [f"search p50 at {results['chunks']:,} chunks, {results['head']} against {results['base']}, "
             f"{results['blocks']} blocks of {results['block']} queries taken in turn:"]  # fmt: skip
    for mode, row in results["modes"].items():
        low, high = row["interval"]
        lines.append(
            f"  {mode}: {row['base_p50_ms']:.1f} ms -> {row['head_p50_ms']:.1f} ms, ratio {row['ratio']:.3f}x "
            f"(95 % interval {low:.3f}..{high:.3f}; median of the blocks' ratios {row['block_ratio_median']:.3f}x)"
        )
    return "\n".join(lines)


# The worker (a process of its own, with one checkout's memdex first on its path) -----------------------


def serve_blocks(cache: Path, shared_queries: Path, args: argparse.Namespace) -> None:
    """Open this checkout's store and engines, then answer each block the coordinator sends on stdin."""
    import time

    import anyio

    # the engine first, as `memdex serve` loads it: an older checkout sets numpy's BLAS threads before numpy loads
    engine_module = importlib.import_module("memdex.memory_core.engine")
    perf_support = importlib.import_module("bench.perf_support")
    MemoryEngine = engine_module.MemoryEngine

    shared = json.loads(shared_queries.read_text())
    queries: list[str] = shared["queries"]
    vectors = dict(zip(queries, shared["vectors"], strict=True))
    out = sys.stdout
    sys.stdout = sys.stderr  # nothing but replies on the pipe

    def reply(value: Any) -> None:
        out.write(json.dumps(value) + "\n")
        out.flush()

    async def main() -> None:
        # older checkouts generate English only
        supports_lang = "lang" in inspect.signature(perf_support.cached_store).parameters
        if args.lang != "en" and not supports_lang:
            raise SystemExit(f"this checkout's bench cannot generate --lang {args.lang}")
        extra = {"lang": args.lang} if supports_lang else {}
        built, _ = await perf_support.cached_store(cache, args.chunks, args.seed, args.model, 0, **extra)
        settings = perf_support.bench_settings
        keyword = MemoryEngine(settings(built.workspace, built.index, "none", args.model, 0), background_sync=False)
        hybrid = MemoryEngine(
            settings(built.workspace, built.index, "local", args.model, 0), background_sync=False,
            provider_factory=perf_support.synthetic_documents(vectors),
        )  # fmt: skip
        async with keyword, hybrid:
            await keyword.sync()
            await hybrid.sync()
            await perf_support.wait_until(hybrid.vectors_in_ram, 120, "the vectors are loaded into RAM")
            engines = {"keyword": keyword, "hybrid": hybrid}
            reply({"chunks": built.chunks, "files": built.files})
            while line := await anyio.to_thread.run_sync(sys.stdin.readline):
                ask = json.loads(line)
                engine, times = engines[ask["mode"]], []
                for index in ask["queries"]:
                    started = time.perf_counter()
                    answer = await engine.search(queries[index])
                    times.append(time.perf_counter() - started)
                    if answer.mode != ask["mode"]:
                        raise SystemExit(f"expected a {ask['mode']} search, got {answer.mode}: {answer.warning}")
                reply(times)

    anyio.run(main)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("base", nargs="?", help="the checkout to compare against: a commit or a folder")
    parser.add_argument("head", nargs="?", default=str(REPO_ROOT), help="the checkout compared (default: this one)")
    parser.add_argument("--chunks", type=int, default=100_000, help="chunks in the store searched")
    parser.add_argument("--files", type=int, default=10_000, help="daily logs the queries are drawn from, as perf.py's")
    parser.add_argument("--queries", type=int, default=200, help="distinct queries")
    parser.add_argument("--blocks", type=int, default=40, help="blocks taken in turn")
    parser.add_argument("--block", type=int, default=25, help="queries per block")
    parser.add_argument("--mode", dest="modes", action="append", choices=MODES, help="keyword, hybrid (default both)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--lang", default="en", help="the generated memory's language, as perf.py's --lang")
    parser.add_argument("--model", type=Path, help="GGUF embedding model for the queries (default: perf.py's)")
    parser.add_argument("--cache-dir", type=Path, help="each side's stores, apart (default: perf.py's)")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--worker", nargs=2, type=Path, help=argparse.SUPPRESS)  # a worker's cache dir, queries file
    return parser


def main(argv: Sequence[str] | None = None) -> None:
    args = _parser().parse_args(argv)
    if args.worker is not None:
        cache, shared_queries = args.worker
        serve_blocks(cache, shared_queries, args)
        return
    if args.base is None:
        raise SystemExit("name the checkout to compare against: a commit (e.g. 4dacebe) or a folder")
    if str(REPO_ROOT) not in sys.path:  # so `python bench/perf_ab.py` works without an install
        sys.path.insert(0, str(REPO_ROOT))
    from bench.perf_support import DEFAULT_CACHE, DEFAULT_MODEL

    args.modes = args.modes or list(MODES)
    args.model = (args.model or DEFAULT_MODEL).resolve()
    args.cache_dir = (args.cache_dir or DEFAULT_CACHE).resolve()
    results = compare(args)
    print(report(results))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
