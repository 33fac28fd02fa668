"""memdex speed and memory benchmark: one command, every number of the "Speed and memory" issue.

Usage (from the repository root)::

    .venv/bin/python bench/perf.py [--files 10000] [--chunks 100000] [--runs 5] [--queries 200]
                                   [--only embed,index,resync,search,watch,append,serve,rss] [--json out.json]
                                   [--model ../shared/models/all-MiniLM-L6-v2-f16.gguf] [--lang en|cjk] [--tiny]

Sections (each prints its own header, then one table at the end: metric, value, target, verdict):

* ``embed``  — raw ``LocalProvider.embed_batch`` over the exact chunk texts an index would embed vs a
  full index of the same workspace (engine sync, local model, empty index and cache): chunks/s of
  each, the ratio per run (order alternated), target ≥ 0.9.
* ``index``  — keyword-only full index of ``--files`` files from an empty index (target ≤ 5 s), and the
  size of the index it leaves.
* ``resync`` — re-sync of that unchanged workspace (target ≤ 0.3 s).
* ``search`` — engine search p50/p95 at ``--chunks``/10 and ``--chunks`` chunks, keyword-only and
  hybrid, with the query embedding timed apart (targets p50 ≤ 10 ms and ≤ 30 ms). The stores are
  built once under ``bench/.cache`` with *synthetic* document vectors (embedding 100k chunks would
  take hours on 2 cores); query vectors come from the real model.
* ``watch``  — save-to-searchable latency through the running watcher (target ≤ debounce + 0.5 s).
* ``append`` — ``MemoryEngine.append`` p50 on a 1 MB daily log vs a 1 KB one, one writer and eight at
  once, keyword-only, SQLite (``bench/appends.py``): the ratio per run, target ≤ 1.5×.
* ``serve``  — spawning ``memdex serve`` (stdio) on an unindexed ``--files`` workspace to the first
  ``memory_search`` answer, keyword-only and with the local model (target ≤ 1.5 s); also to the first
  answer that has results (the index fills in the background).
* ``rss``    — peak RSS of a process with the local model loaded, searching the ``--chunks`` store
  (target ≤ 400 MB).
* ``postgres`` — the PostgreSQL store against SQLite in the same run, on a pgserver PostgreSQL 16 kept
  under the cache dir: keyword-only full index of ``--files`` files (ratio, target ≤ 3×), search p50 at
  ``--chunks`` chunks with the same synthetic vectors, keyword and hybrid with the query vector
  precomputed (ratio, target ≤ 2×), and save-to-searchable from the host that watches the files to a
  replica (target ≤ debounce + 1 s).

Times are medians of ``--runs`` runs; ratios are measured side by side within a run. ``--tiny`` runs
every section on a tiny input in seconds (the smoke test does). ``--lang cjk`` generates Chinese and
Japanese notes and queries instead of English ones (``bench/workspace_gen.py``; not the append section's
logs, nor MEMORY.md), cached apart.

To time other code with these inputs, run this file with that code's Python: ``memdex`` is imported from
where that interpreter finds it (the machine facts name it), and pass ``--cache-dir`` of its own, since the
cached stores are indexes built by the code that ran.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import psycopg

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:  # so `python bench/perf.py` works without an install
    sys.path.insert(0, str(REPO_ROOT))

from bench import appends, workspace_gen
from bench.perf_support import (
    DEFAULT_CACHE,
    DEFAULT_MODEL,
    Metric,
    Store,
    bench_settings,
    cached_store,
    cached_workspace,
    format_table,
    fresh_index,
    index_sizes,
    isolate_environment,
    local_postgres,
    machine_info,
    peak_rss_mb,
    percentile,
    rss_mb,
    summary,
    synthetic_documents,
    wait_until,
)
from memdex.memory_core import MemoryEngine, Settings
from memdex.memory_core.config_sections import LocalEmbeddingSettings, QuerySettings
from memdex.memory_core.embeddings.local import LocalProvider
from memdex.memory_core.index import indexer
from memdex.memory_core.limits import MAX_CANDIDATES
from memdex.memory_core.search.keyword import keyword_candidates
from memdex.memory_core.stores import records
from memdex.memory_core.stores.postgres import schema as pg_schema
from memdex.memory_core.stores.postgres.connection import PgConn, live_index
from memdex.memory_core.stores.sqlite import db
from memdex.memory_core.stores.sqlite import ops as store
from memdex.memory_core.stores.sqlite.vector_matrix import VectorMatrix
from memdex.memory_core.text.terms import query_terms
from memdex.memory_core.workspace.files import Workspace

SECTIONS = ("embed", "index", "resync", "search", "watch", "append", "serve", "rss", "postgres")
SERVE_TARGET_S = 1.5
SERVE_QUERY = "deploy key owner"  # answered by MEMORY.md, the first file a sync indexes
NONEMPTY_TIMEOUT_S = 60.0
RSS_SEARCHES = 50


@dataclass(frozen=True)
class Config:
    """Sizes and paths of one benchmark run."""

    files: int = 10_000
    chunks: int = 100_000
    runs: int = 5
    queries: int = 200
    embed_chunks: int = 200
    watch_files: int = 1_000
    appends: int = 200  # per log in the append section
    debounce_ms: int | None = None  # None: the configured default
    seed: int = 0
    lang: str = "en"  # of the generated notes and queries (workspace_gen.LANGS)
    window_tokens: int = 0  # embedding.window_tokens of the search and rss stores
    model: Path = DEFAULT_MODEL
    cache_dir: Path = DEFAULT_CACHE
    work: Path = Path(".")
    tiny: bool = False


TINY: dict[str, Any] = {"files": 50, "chunks": 2_000, "runs": 1, "queries": 10, "embed_chunks": 3, "watch_files": 50,
        "debounce_ms": 300}  # fmt: skip


def ms(seconds: float) -> float:
    return seconds * 1000


def _count(n: int) -> str:
    """10,003 -> '10k'; small counts in full."""
    return f"{n / 1000:.0f}k" if n >= 10_000 else f"{n:,}"


class Bench:
    """The sections, sharing the generated inputs and one loaded model."""

    def __init__(self, cfg: Config) -> None:
        self.cfg = cfg
        self._provider: LocalProvider | None = None
        self._keyword_index: Path | None = None

    # Shared inputs ------------------------------------------------------------------------------

    @property
    def workspace(self) -> Path:
        """The ``--files`` workspace (read-only; generated once, cached)."""
        return cached_workspace(self.cfg.cache_dir, self.cfg.files, self.cfg.seed, self.cfg.lang)

    def settings(self, workspace: Path, index: Path, provider: str = "none", **overrides: Any) -> Settings:
        return bench_settings(workspace, index, provider, self.cfg.model, self.cfg.window_tokens, **overrides)

    async def provider(self) -> LocalProvider:
        """The real local model, loaded once (the load is timed and reported by ``embed``)."""
        if self._provider is None:
            self._provider = LocalProvider(LocalEmbeddingSettings(model=str(self.cfg.model)))
            await self._provider.start()
        return self._provider

    async def close(self) -> None:
        if self._provider is not None:
            await self._provider.aclose()

    async def keyword_sync(self, index: Path) -> float:
        """Seconds a keyword-only sync of the ``--files`` workspace into ``index`` takes."""
        async with MemoryEngine(self.settings(self.workspace, index), background_sync=False) as engine:
            report = await engine.sync()
        return report.seconds

    # embed --------------------------------------------------------------------------------------

    async def embed(self) -> list[Metric]:
        """Raw embedder throughput vs a full index with the local model, side by side per run."""
        cfg = self.cfg
        root = cfg.work / "embed-ws"
        workspace_gen.write_workspace(root, chunks=cfg.embed_chunks, seed=cfg.seed, lang=cfg.lang)
        chunking = self.settings(root, cfg.work / "embed.sqlite").chunking
        changes, _ = indexer.prepare(Workspace(root).discover(), {}, tokens=chunking.tokens, overlap=chunking.overlap)
        texts = list(indexer.chunk_texts(changes).values())  # what a sync embeds, deduplicated
        started = time.perf_counter()
        provider = await self.provider()
        load_s = time.perf_counter() - started
        tokens = [len(t) / 4 for t in texts]
        print(f"  {len(texts)} chunks, ~{statistics.median(tokens):.0f} tokens median (chars/4); "
              f"model load {load_s:.2f}s")
        await provider.embed_batch(texts[:4])  # warm-up

        async def raw() -> float:
            t0 = time.perf_counter()
            await provider.embed_batch(texts)
            return time.perf_counter() - t0

        async def index() -> float:
            settings = self.settings(root, fresh_index(cfg.work / "embed.sqlite"), "local")
            async with MemoryEngine(settings, background_sync=False) as engine:
                report = await engine.sync()
                status = await engine.status()
            if status.mode != "hybrid" or status.chunks != len(texts):
                raise RuntimeError(f"the index run did not embed every chunk: {status}")
            return report.seconds

        raw_rates: list[float] = []
        index_rates: list[float] = []
        for run in range(cfg.runs):
            order = [(raw, raw_rates), (index, index_rates)]
            for fn, rates in order if run % 2 == 0 else order[::-1]:
                rates.append(len(texts) / await fn())
            print(f"  run {run + 1}/{cfg.runs}: raw {raw_rates[-1]:.2f}  index {index_rates[-1]:.2f} chunks/s")
        ratios = [i / r for i, r in zip(index_rates, raw_rates, strict=True)]
        common = {"chunks": len(texts), "model_load_s": round(load_s, 3)}
        return [
            Metric("embed", "raw embedder throughput", statistics.median(raw_rates), "chunks/s",
                   detail={**summary(raw_rates), **common}),
            Metric("embed", "memdex index throughput (local model)", statistics.median(index_rates), "chunks/s",
                   detail=summary(index_rates)),
            Metric("embed", "index / raw throughput", statistics.median(ratios), "", 0.9, higher_is_better=True,
                   note="median of per-run ratios", detail=summary(ratios)),
        ]  # fmt: skip

    # index and resync ---------------------------------------------------------------------------

    async def index(self) -> list[Metric]:
        """Keyword-only full index of the ``--files`` workspace, from an empty index each run."""
        cfg = self.cfg
        times, cpu = [], []  # cpu: seconds of this process's CPU (all threads), less shaken by other load
        for run in range(cfg.runs):
            cpu_started = time.process_time()
            times.append(await self.keyword_sync(fresh_index(cfg.work / "keyword.sqlite")))
            cpu.append(time.process_time() - cpu_started)
            print(f"  run {run + 1}/{cfg.runs}: {times[-1]:.2f}s ({cpu[-1]:.2f}s CPU)")
        self._keyword_index = cfg.work / "keyword.sqlite"
        sizes = index_sizes(self._keyword_index)
        print(f"  index file {sizes['file_bytes'] / 1e6:.1f} MB (FTS data {sizes['fts_data_bytes'] / 1e6:.1f} MB), "
              f"{sizes['chunks']:,} chunks")  # fmt: skip
        target = 5.0 * cfg.files / 10_000
        return [Metric("index", f"keyword-only full index, {cfg.files:,} files", statistics.median(times), "s",
                       target, note="target scaled from 5 s per 10k files", detail=summary(times)),
                Metric("index", f"keyword-only full index, {cfg.files:,} files, CPU", statistics.median(cpu), "s",
                       note="process CPU time, engine open included", detail=summary(cpu)),
                Metric("index", f"index file size, {cfg.files:,} files", sizes["file_bytes"] / 1e6, "MB",
                       note=f"FTS data {sizes['fts_data_bytes'] / 1e6:.1f} MB", detail=sizes)]  # fmt: skip

    async def resync(self) -> list[Metric]:
        """Re-sync of the unchanged ``--files`` workspace (what every start and reconcile costs)."""
        cfg = self.cfg
        if self._keyword_index is None:
            self._keyword_index = fresh_index(cfg.work / "keyword.sqlite")
            await self.keyword_sync(self._keyword_index)
        first = await self.keyword_sync(self._keyword_index)  # settles files indexed while "racily clean"
        times = []
        for run in range(cfg.runs):
            times.append(await self.keyword_sync(self._keyword_index))
            print(f"  run {run + 1}/{cfg.runs}: {times[-1]:.3f}s")
        target = 0.3 * cfg.files / 10_000
        return [Metric("resync", f"re-sync unchanged, {cfg.files:,} files", statistics.median(times), "s", target,
                       note="engine open excluded; target scaled from 0.3 s per 10k files",
                       detail={**summary(times), "first_resync_s": round(first, 4)})]  # fmt: skip

    # search -------------------------------------------------------------------------------------

    async def search(self) -> list[Metric]:
        """Search latency at two store sizes; keyword-only and hybrid, query embedding apart."""
        cfg = self.cfg
        provider = await self.provider()
        queries = workspace_gen.sample_queries(cfg.files, cfg.queries, cfg.seed, lang=cfg.lang)
        embed_times, vectors = [], {}
        await provider.embed_query("warm-up")
        for q in queries:
            t0 = time.perf_counter()
            vectors[q] = await provider.embed_query(q)
            embed_times.append(time.perf_counter() - t0)
        metrics = [Metric("search", "query embedding p50 (real model)", ms(percentile(embed_times, 0.5)), "ms",
                          detail={"p95_ms": ms(percentile(embed_times, 0.95)), "queries": len(queries)})]  # fmt: skip
        print(f"  query embedding: p50 {metrics[0].value:.1f} ms, p95 {metrics[0].detail['p95_ms']:.1f} ms")
        for chunks, target in ((max(100, cfg.chunks // 10), 10.0), (cfg.chunks, 30.0)):
            started = time.perf_counter()
            built, build_s = await cached_store(cfg.cache_dir, chunks, cfg.seed, cfg.model, cfg.window_tokens, cfg.lang)
            how = f"built in {build_s:.0f}s" if build_s is not None else "from cache"
            took = time.perf_counter() - started
            sizes = index_sizes(built.index)
            print(f"  store: {built.chunks:,} chunks in {built.files:,} files ({how}, {took:.1f}s); index file "
                  f"{sizes['file_bytes'] / 1e6:.1f} MB (FTS data {sizes['fts_data_bytes'] / 1e6:.1f} MB)")  # fmt: skip
            metrics.append(Metric("search", f"index file size, {_count(built.chunks)} chunks", sizes["file_bytes"] / 1e6,
                                  "MB", note="with vectors", detail={**sizes, "build_s": build_s}))  # fmt: skip
            metrics += await self._search_store(built, queries, vectors, target)
        return metrics

    async def _search_store(
        self, built: Store, queries: list[str], vectors: dict[str, list[float]], target: float
    ) -> list[Metric]:
        cfg = self.cfg
        label = f"{_count(built.chunks)} chunks"
        modes: dict[str, list[tuple[float, float, float]]] = {  # p50, p95, p90 of each run
            "keyword": [], "hybrid": [], "hybrid + real query embedding": []}  # fmt: skip
        factory = synthetic_documents(vectors)
        keyword = MemoryEngine(self.settings(built.workspace, built.index), background_sync=False)
        hybrid = MemoryEngine(
            self.settings(built.workspace, built.index, "local"), background_sync=False, provider_factory=factory
        )
        async with keyword, hybrid:
            await keyword.sync()
            await hybrid.sync()  # starts the provider; the unchanged store needs no indexing
            if not hybrid.vectors_ready:
                raise RuntimeError(f"the store at {built.index} has no usable vectors")
            await wait_until(hybrid.vectors_in_ram, 120, "the vectors are loaded into RAM")
            provider = await self.provider()
            engines: dict[str, Callable[[str], Awaitable[Any]]] = {
                "keyword": keyword.search, "hybrid": hybrid.search,
                "hybrid + real query embedding": lambda q: _embed_then_search(hybrid, provider, q),
            }  # fmt: skip
            for q in queries[:5]:  # warm-up: page cache, connection pool
                for search in engines.values():
                    await search(q)
            rng = random.Random(cfg.seed)
            for _ in range(cfg.runs):
                times: dict[str, list[float]] = {mode: [] for mode in modes}
                for q in rng.sample(queries, len(queries)):
                    for mode in rng.sample(list(engines), len(engines)):  # side by side, order shuffled
                        t0 = time.perf_counter()
                        await engines[mode](q)
                        times[mode].append(time.perf_counter() - t0)
                for mode, samples in times.items():
                    modes[mode].append((percentile(samples, 0.5), percentile(samples, 0.95), percentile(samples, 0.9)))
        parts = _store_breakdown(built.index, queries, vectors)
        metrics = []
        for mode, runs in modes.items():
            p50 = statistics.median(r[0] for r in runs)
            p95 = statistics.median(r[1] for r in runs)
            timed = mode != "hybrid + real query embedding"
            print(f"  {label}, {mode}: p50 {ms(p50):.1f} ms, p95 {ms(p95):.1f} ms")
            detail = {"p95_ms": round(ms(p95), 3), "p90_ms": round(ms(statistics.median(r[2] for r in runs)), 3),
                      "p50_runs_ms": [round(ms(r[0]), 3) for r in runs],
                      "chunks": built.chunks, "files": built.files, "queries": len(queries)}  # fmt: skip
            if mode == "hybrid":
                detail["parts_ms"] = parts
                print(f"  {label}, SQL alone (median ms): " + ", ".join(f"{k} {v:.1f}" for k, v in parts.items()))
            metrics.append(Metric("search", f"{mode} p50, {label}", ms(p50), "ms", target if timed else None,
                                  note="query vector precomputed" if mode == "hybrid" else "", detail=detail))
            metrics.append(Metric("search", f"{mode} p95, {label}", ms(p95), "ms"))
        return metrics

    # watch --------------------------------------------------------------------------------------

    async def watch(self) -> list[Metric]:
        """Save-to-searchable through the running watcher: append a unique token, poll search."""
        cfg = self.cfg
        root = cfg.work / "watch-ws"
        workspace_gen.write_workspace(root, files=cfg.watch_files, seed=cfg.seed, lang=cfg.lang)
        overrides: dict[str, Any] = {"watch": {"debounce_ms": cfg.debounce_ms}} if cfg.debounce_ms else {}
        settings = self.settings(root, fresh_index(cfg.work / "watch.sqlite"), **overrides)
        debounce = settings.watch.debounce_ms / 1000
        async with MemoryEngine(settings, background_sync=True) as engine:
            await wait_until(partial(_is_ready, engine), 120, "the initial sync")
            latencies = await _save_to_searchable(root, engine, max(3, cfg.runs), debounce, "searchable")
        return [Metric("watch", f"save-to-searchable (debounce {debounce:g} s)", statistics.median(latencies), "s",
                       debounce + 0.5, note=f"{cfg.watch_files:,} files, keyword-only",
                       detail={**summary(latencies), "debounce_s": debounce})]  # fmt: skip

    # append -------------------------------------------------------------------------------------

    async def append(self) -> list[Metric]:
        """Append p50 on a 1 MB daily log vs a 1 KB one, one writer and eight (bench/appends.py)."""
        cfg = self.cfg
        settings = partial(self.settings, timezone="UTC")
        return await appends.measure(cfg.work, settings, cfg.runs, 16 if cfg.tiny else cfg.appends, cfg.seed)

    # postgres -----------------------------------------------------------------------------------

    async def postgres(self) -> list[Metric]:
        """The PostgreSQL store side by side with SQLite: indexing, search, and save-to-searchable on a replica."""
        with local_postgres(self.cfg.cache_dir / "postgres") as url:
            return [*await self._pg_index(url), *await self._pg_search(url), *await self._pg_replica(url)]

    def _pg(self, url: str, memory: str, **postgres: Any) -> dict[str, Any]:
        return {"backend": "postgres", "postgres": {"url": url, "memory": memory, **postgres}}

    async def _pg_index(self, url: str) -> list[Metric]:
        cfg = self.cfg
        ratios, lite_times, pg_times = [], [], []
        for run in range(cfg.runs):
            memory = f"perf-index-{os.getpid()}-{run}"  # a new, empty memory per run
            timed = {}
            for backend in ("sqlite", "postgres") if run % 2 == 0 else ("postgres", "sqlite"):
                index = fresh_index(cfg.work / "pg-keyword.sqlite")
                overrides = {"store": self._pg(url, memory)} if backend == "postgres" else {}
                async with MemoryEngine(self.settings(self.workspace, index, **overrides), background_sync=False) as engine:
                    timed[backend] = (await engine.sync()).seconds
            lite_times.append(timed["sqlite"])
            pg_times.append(timed["postgres"])
            ratios.append(timed["postgres"] / timed["sqlite"])
            print(f"  run {run + 1}/{cfg.runs}: sqlite {timed['sqlite']:.2f}s, postgres {timed['postgres']:.2f}s")
            await _drop_memory(url, memory)
        return [
            Metric("postgres", f"keyword-only full index, {cfg.files:,} files, postgres / sqlite", statistics.median(ratios),
                   "x", 3.0, note="median of per-run ratios, order alternated",
                   detail={"sqlite": summary(lite_times), "postgres": summary(pg_times)}),
        ]  # fmt: skip

    async def _pg_search(self, url: str) -> list[Metric]:
        cfg = self.cfg
        provider = await self.provider()
        queries = workspace_gen.sample_queries(cfg.files, cfg.queries, cfg.seed, lang=cfg.lang)
        vectors = {q: await provider.embed_query(q) for q in queries}
        built, _ = await cached_store(cfg.cache_dir, cfg.chunks, cfg.seed, cfg.model, cfg.window_tokens, cfg.lang)
        memory = f"perf-{built.index.parent.name}"  # the cached store's twin, kept with the server's data
        factory = synthetic_documents(vectors)
        stores = {"sqlite": {}, "postgres": {"store": self._pg(url, memory)}}
        engines = {
            (store, mode): MemoryEngine(
                self.settings(built.workspace, built.index, provider, **overrides), background_sync=False,
                provider_factory=factory,
            )
            for store, overrides in stores.items() for mode, provider in (("keyword", "none"), ("hybrid", "local"))
        }  # fmt: skip
        samples: dict[tuple[str, str], list[float]] = {key: [] for key in engines}
        async with contextlib.AsyncExitStack() as stack:
            for engine in engines.values():
                await stack.enter_async_context(engine)
            for (store, mode), engine in engines.items():
                started = time.perf_counter()
                await engine.sync()  # the postgres twin is built on the first run (synthetic vectors)
                print(f"  {store} {mode}: {(await engine.status()).chunks:,} chunks ready in {time.perf_counter() - started:.1f}s")
            await wait_until(engines["sqlite", "hybrid"].vectors_in_ram, 120, "the vectors are loaded into RAM")
            await _vacuum(url)  # the steady state autovacuum reaches: visibility maps set, statistics fresh
            rng = random.Random(cfg.seed)
            for q in queries[:5]:
                for engine in engines.values():
                    await engine.search(q)
            for _ in range(cfg.runs):
                for q in rng.sample(queries, len(queries)):
                    for key in rng.sample(list(engines), len(engines)):  # side by side, order shuffled
                        t0 = time.perf_counter()
                        await engines[key].search(q)
                        samples[key].append(time.perf_counter() - t0)
        label = f"{_count(built.chunks)} chunks"
        metrics = []
        for mode in ("keyword", "hybrid"):
            lite, pg = (ms(percentile(samples[store, mode], 0.5)) for store in ("sqlite", "postgres"))
            print(f"  {label}, {mode}: sqlite p50 {lite:.1f} ms, postgres p50 {pg:.1f} ms")
            metrics.append(Metric("postgres", f"{mode} search p50, {label}, postgres / sqlite", pg / lite, "x",
                                  2.0 if mode == "hybrid" else None, note="query vector precomputed",
                                  detail={"sqlite_p50_ms": round(lite, 2), "postgres_p50_ms": round(pg, 2),
                                          "postgres_p95_ms": round(ms(percentile(samples["postgres", mode], 0.95)), 2)}))  # fmt: skip
        return metrics

    async def _pg_replica(self, url: str) -> list[Metric]:
        cfg = self.cfg
        root = cfg.work / "pg-watch-ws"
        workspace_gen.write_workspace(root, files=cfg.watch_files, seed=cfg.seed, lang=cfg.lang)
        memory = f"perf-replica-{os.getpid()}"
        overrides: dict[str, Any] = {"watch": {"debounce_ms": cfg.debounce_ms}} if cfg.debounce_ms else {}
        primary = self.settings(root, cfg.work / "unused.sqlite", store=self._pg(url, memory), **overrides)
        replica = self.settings(cfg.work, cfg.work / "unused.sqlite", store=self._pg(url, memory, replica=True))
        debounce = primary.watch.debounce_ms / 1000
        async with MemoryEngine(primary, background_sync=True) as writer, MemoryEngine(replica) as reader:
            await wait_until(partial(_is_ready, writer), 300, "the initial sync")
            latencies = await _save_to_searchable(root, reader, max(3, cfg.runs), debounce, "searchable on the replica")
        await _drop_memory(url, memory)
        return [Metric("postgres", f"save-to-searchable on a replica (debounce {debounce:g} s)", statistics.median(latencies),
                       "s", debounce + 1.0, note=f"{cfg.watch_files:,} files, keyword-only; target debounce + 1 s",
                       detail={**summary(latencies), "debounce_s": debounce})]  # fmt: skip

    # serve --------------------------------------------------------------------------------------

    async def serve(self) -> list[Metric]:
        """Spawn ``memdex serve`` (stdio) on an unindexed workspace; time to the first search answer."""
        cfg = self.cfg
        metrics = []
        for provider in ("none", "local"):
            totals, handshakes, with_results, states = [], [], [], []
            for run in range(cfg.runs):
                result = await _first_answer(self.workspace, fresh_index(cfg.work / "serve.sqlite"), provider,
                                             self.cfg.model, cfg.work / f"serve-{provider}-{run}.log")  # fmt: skip
                totals.append(result["total_s"])
                handshakes.append(result["handshake_s"])
                states.append(result["state"])
                if result["with_results_s"] is not None:
                    with_results.append(result["with_results_s"])
                print(f"  {provider}, run {run + 1}: answer after {result['total_s']:.2f}s "
                      f"(handshake {result['handshake_s']:.2f}s), state {result['state']}, "
                      f"{result['chunks']} chunks indexed, {result['results']} results; "
                      f"first answer with results after {result['with_results_s'] or float('nan'):.2f}s")  # fmt: skip
            metrics.append(Metric(
                "serve", f"spawn to first memory_search, provider {provider}", statistics.median(totals), "s",
                SERVE_TARGET_S, note=f"{cfg.files:,} files, empty index; states: {','.join(sorted(set(states)))}",
                detail={**summary(totals), "handshake": summary(handshakes), "index_states": states},
            ))
            metrics.append(Metric(
                "serve", f"spawn to first answer with results, provider {provider}",
                statistics.median(with_results) if with_results else None, "s",
                note=f"polled every 0.1 s, for at most {NONEMPTY_TIMEOUT_S:g} s",
                detail=summary(with_results) if with_results else {},
            ))  # fmt: skip
        return metrics

    # rss ----------------------------------------------------------------------------------------

    async def rss(self) -> list[Metric]:
        """Peak RSS of a fresh process: local model loaded, ``--chunks`` store open, searches run."""
        cfg = self.cfg
        built, _ = await cached_store(cfg.cache_dir, cfg.chunks, cfg.seed, cfg.model, cfg.window_tokens, cfg.lang)
        searches = min(RSS_SEARCHES, cfg.queries)
        cmd = [sys.executable, str(Path(__file__).resolve()), "--rss-worker", str(built.workspace), str(built.index),
               "--model", str(cfg.model), "--files", str(cfg.files), "--queries", str(searches),
               "--window-tokens", str(cfg.window_tokens), "--lang", cfg.lang]  # fmt: skip
        proc = await anyio.run_process(cmd, check=True)
        result = json.loads(proc.stdout.decode().strip().splitlines()[-1])
        print("  " + ", ".join(f"{k} {v}" for k, v in result.items()))
        return [Metric("rss", f"peak RSS, local model + {_count(built.chunks)} chunks", result["peak_mb"], "MB",
                       400.0, note=f"{result['searches']} hybrid searches with real query embeddings", detail=result)]


async def _save_to_searchable(root: Path, searcher: MemoryEngine, runs: int, debounce: float, what: str) -> list[float]:
    """Seconds from appending a unique token to a file under ``root`` (watched by a running engine) until
    ``searcher`` finds it, for each of ``runs`` edits."""
    await anyio.sleep(1.0)  # let the watchers arm
    latencies = []
    for run in range(runs):
        rel = workspace_gen.file_path(run * 7)
        token = f"zqxsaved{run}k{random.randrange(10**6)}"
        with (root / rel).open("a", encoding="utf-8") as fh:
            fh.write(f"\n- perf marker {token}\n")
        t0 = time.perf_counter()
        await wait_until(partial(_finds, searcher, token, rel), 10 + debounce, f"{token} to be {what}")
        latencies.append(time.perf_counter() - t0)
        print(f"  edit {run + 1}: {what} after {ms(latencies[-1]):.0f} ms")
        await anyio.sleep(debounce + 0.3)  # separate bursts
    return latencies


async def _vacuum(url: str) -> None:
    """VACUUM (ANALYZE) the benchmark database, as autovacuum would in a minute or two."""

    def run() -> None:
        with psycopg.connect(url, autocommit=True) as raw:
            raw.execute("VACUUM (ANALYZE)")

    await anyio.to_thread.run_sync(run)


async def _drop_memory(url: str, memory: str) -> None:
    """Delete a benchmark's memory and every row of it from the database."""

    def drop() -> None:
        with psycopg.connect(url, autocommit=True) as raw:
            conn = PgConn(raw, memory)
            with raw.transaction():
                live = live_index(conn)
                if live is not None:
                    raw.execute("DELETE FROM memdex_memories WHERE memory = %s", (memory,))
                    pg_schema.drop_index(conn, live)

    await anyio.to_thread.run_sync(drop)


async def _embed_then_search(engine: MemoryEngine, provider: LocalProvider, query: str) -> Any:
    """What a hybrid search costs end to end: the real query embedding, then the search itself."""
    await provider.embed_query(query)
    return await engine.search(query)


async def _is_ready(engine: MemoryEngine) -> bool:
    status = await engine.status()
    if status.state == "error":
        raise RuntimeError(f"sync failed: {status.error}")
    return status.state == "ready" and status.last_sync is not None


async def _finds(engine: MemoryEngine, token: str, rel: str) -> bool:
    return any(hit.path == rel for hit in (await engine.search(token)).results)


def _store_breakdown(index: Path, queries: list[str], vectors: dict[str, list[float]]) -> dict[str, float]:
    """Median ms of the SQL pieces of a search, run directly on one read connection: where the time goes."""
    query = QuerySettings()
    limit = min(MAX_CANDIDATES, query.max_results * query.candidate_multiplier)  # as the engine asks
    matrix = VectorMatrix()
    pieces: dict[str, Callable[[Any, str, list[str]], Any]] = {
        "counts": lambda conn, q, fts: store.counts(conn),
        "keyword_sql": lambda conn, q, terms: keyword_candidates(store, conn, terms, limit, total)[0],
        "vector_sql": lambda conn, q, fts: store.vector_search(conn, vectors[q], limit),
        "vector_ram": lambda conn, q, fts: matrix.search(version, vectors[q], limit),
    }
    times: dict[str, list[float]] = {name: [] for name in pieces}
    conn = db.connect(index, readonly=True)
    try:
        t0 = time.perf_counter()
        matrix.load(conn)
        times["vector_ram_load"] = [time.perf_counter() - t0]
        version = store.read_meta(conn, records.VECTORS_VERSION)
        total = store.counts(conn)[1]
        for q in queries:
            terms = query_terms(q)
            for name, piece in pieces.items():
                t0 = time.perf_counter()
                piece(conn, q, terms)
                times[name].append(time.perf_counter() - t0)
    finally:
        conn.close()
    return {name: round(ms(statistics.median(v)), 3) for name, v in times.items()}


async def _first_answer(workspace: Path, index: Path, provider: str, model: Path, log: Path) -> dict[str, Any]:
    """Spawn ``memdex serve`` over stdio; time the first ``memory_search`` answer, then the first with results."""
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client

    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMDEX_")}
    env |= {"MEMDEX_EMBEDDING__PROVIDER": provider, "MEMDEX_EMBEDDING__LOCAL__MODEL": str(model),
            "MEMDEX_LOG_LEVEL": "WARNING"}  # fmt: skip
    args = ["-m", "memdex.server.cli", "serve", "--workspace", str(workspace), "--index", str(index)]
    params = StdioServerParameters(command=sys.executable, args=args, env=env, cwd=str(REPO_ROOT))

    async def search(client: Client) -> dict[str, Any]:
        answer = await client.call_tool("memory_search", {"query": SERVE_QUERY})
        if answer.is_error:
            raise RuntimeError(f"memory_search failed: {answer.content}")
        return answer.structured_content or {}

    with log.open("w") as errlog:
        t0 = time.perf_counter()
        async with Client(stdio_client(params, errlog=errlog)) as client:
            handshake = time.perf_counter() - t0
            first = await search(client)
            total = time.perf_counter() - t0
            answer, with_results = first, None
            while not answer.get("results") and time.perf_counter() - t0 < NONEMPTY_TIMEOUT_S:
                await anyio.sleep(0.1)
                answer = await search(client)
            if answer.get("results"):
                with_results = time.perf_counter() - t0
    status = first.get("indexStatus", {})
    return {"total_s": total, "handshake_s": handshake, "with_results_s": with_results, "state": status.get("state"),
            "chunks": status.get("chunks"), "results": len(first.get("results", []))}  # fmt: skip


# The RSS worker (a fresh process) -----------------------------------------------------------------


async def _rss_worker(
    workspace: Path, index: Path, model: Path, files: int, searches: int, window_tokens: int, lang: str
) -> dict[str, Any]:
    phases = {"start_mb": rss_mb()}
    queries = workspace_gen.sample_queries(files, searches, lang=lang)
    settings = bench_settings(workspace, index, "local", model, window_tokens)
    factory = synthetic_documents()  # document vectors stay synthetic; queries use the real model
    async with MemoryEngine(settings, background_sync=False, provider_factory=factory) as engine:
        await engine.sync()
        phases["after_open_and_sync_mb"] = rss_mb()
        for q in queries:
            answer = await engine.search(q)
            if answer.mode != "hybrid":
                raise RuntimeError(f"expected hybrid search, got {answer.mode}: {answer.warning}")
        phases["after_searches_mb"] = rss_mb()
        status = await engine.status()
    return {**{k: round(v, 1) for k, v in phases.items()}, "peak_mb": round(peak_rss_mb(), 1),
            "chunks": status.chunks, "searches": len(queries)}  # fmt: skip


# CLI ----------------------------------------------------------------------------------------------


async def run(cfg: Config, sections: list[str]) -> dict[str, Any]:
    machine = machine_info()
    print("machine: " + ", ".join(f"{k} {v}" for k, v in machine.items()), flush=True)
    bench = Bench(cfg)
    metrics: list[Metric] = []
    ran: dict[str, dict[str, Any]] = {}
    try:
        for name in sections:
            print(f"\n== {name} ==", flush=True)
            started = time.perf_counter()
            metrics += await getattr(bench, name)()
            ran[name] = {"seconds": round(time.perf_counter() - started, 1), "load_avg_after": os.getloadavg()[0]}
    finally:
        await bench.close()
    print("\n" + format_table(metrics))
    if cfg.tiny:
        print("(--tiny: inputs far below the issue's sizes; the verdicts only show that every section runs)")
    config = {k: str(v) if isinstance(v, Path) else v for k, v in asdict(cfg).items()}
    return {"machine": machine, "config": config, "sections": ran, "metrics": [m.as_json() for m in metrics]}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=Config.files, help="workspace size for index/resync/serve")
    parser.add_argument("--chunks", type=int, default=Config.chunks, help="largest search store (and chunks/10)")
    parser.add_argument("--runs", type=int, default=Config.runs, help="runs per measurement (medians)")
    parser.add_argument("--queries", type=int, default=Config.queries, help="search queries per run")
    parser.add_argument("--embed-chunks", type=int, default=Config.embed_chunks, help="chunks for the embed section")
    parser.add_argument("--watch-files", type=int, default=Config.watch_files, help="workspace size for watch")
    parser.add_argument("--appends", type=int, default=Config.appends, help="appends per log in the append section")
    parser.add_argument("--debounce-ms", type=int, help="watch.debounce_ms (default: memdex's default)")
    parser.add_argument("--seed", type=int, default=Config.seed)
    parser.add_argument("--lang", choices=workspace_gen.LANGS, default=Config.lang,
                        help="language of the generated notes and queries (cjk: Chinese and Japanese)")  # fmt: skip
    parser.add_argument("--window-tokens", type=int, default=Config.window_tokens, metavar="N",
                        help="embedding.window_tokens of the search and rss stores (their caches are kept apart)")
    parser.add_argument("--model", type=Path, default=Config.model, help="GGUF embedding model")
    parser.add_argument("--cache-dir", type=Path, default=Config.cache_dir, help="cached workspaces and stores")
    parser.add_argument("--only", help=f"comma-separated sections ({','.join(SECTIONS)}); default all")
    parser.add_argument("--tiny", action="store_true", help="every section on a tiny input, one run")
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument("--rss-worker", nargs=2, type=Path, metavar=("WORKSPACE", "INDEX"), help=argparse.SUPPRESS)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    sections = [s.strip() for s in args.only.split(",")] if args.only else list(SECTIONS)
    if unknown := [s for s in sections if s not in SECTIONS]:
        raise SystemExit(f"unknown section(s) {', '.join(unknown)}; choose from {', '.join(SECTIONS)}")
    if not args.model.is_file():
        raise SystemExit(f"model {args.model} not found; pass --model")
    with tempfile.TemporaryDirectory(prefix="memdex-perf-") as tmp:
        isolate_environment(Path(tmp))
        if args.rss_worker:
            workspace, index = args.rss_worker
            result = anyio.run(_rss_worker, workspace, index, args.model, args.files, args.queries, args.window_tokens,
                               args.lang)  # fmt: skip
            print(json.dumps(result))
            return 0
        cfg = Config(
            files=args.files, chunks=args.chunks, runs=args.runs, queries=args.queries,
            embed_chunks=args.embed_chunks, watch_files=args.watch_files, appends=args.appends, debounce_ms=args.debounce_ms,
            seed=args.seed, lang=args.lang, window_tokens=args.window_tokens, model=args.model.resolve(), cache_dir=args.cache_dir.resolve(), work=Path(tmp),
            tiny=args.tiny,
        )  # fmt: skip
        if args.tiny:
            cfg = replace(cfg, **TINY)
        cfg.cache_dir.mkdir(parents=True, exist_ok=True)
        result = anyio.run(run, cfg, sections)
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
