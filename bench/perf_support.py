"""Measurement plumbing for ``bench/perf.py``: results, statistics, settings, cached inputs, machine facts,
and :func:`wait_until`, which ``bench/quality.py`` shares.

Also :func:`synthetic_documents`, a provider factory for ``MemoryEngine(provider_factory=...)`` that
wraps the embedding provider in :class:`SyntheticVectors`, so a 100k-chunk vector store can be built
without hours of model time.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import platform
import resource
import shutil
import signal
import statistics
import subprocess
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import numpy as np

from bench import workspace_gen
from memdex import memory_core
from memdex.memory_core import MemoryEngine, Settings, load_settings
from memdex.memory_core.embeddings.base import EmbeddingProvider
from memdex.memory_core.embeddings.factory import ProviderChoice, ProviderFactory, open_provider
from memdex.memory_core.stores.sqlite import db
from memdex.memory_core.stores.sqlite.db import driver

REPO_ROOT = Path(__file__).resolve().parents[1]
MEMDEX_ROOT = Path(memory_core.__file__).resolve().parents[1]  # the code measured: this tree unless run against another
DEFAULT_MODEL = REPO_ROOT.parent / "shared" / "models" / "all-MiniLM-L6-v2-f16.gguf"
DEFAULT_CACHE = REPO_ROOT / "bench" / ".cache"


# Results ----------------------------------------------------------------------------------------


@dataclass
class Metric:
    """One reported number, with its target when the issue sets one."""

    section: str
    name: str
    value: float | None
    unit: str
    target: float | None = None
    higher_is_better: bool = False
    note: str = ""
    detail: dict[str, Any] = field(default_factory=dict)

    @property
    def verdict(self) -> str:
        """'pass', 'MISS', or '-' when there is no target (or no value)."""
        if self.target is None or self.value is None:
            return "-"
        ok = self.value >= self.target if self.higher_is_better else self.value <= self.target
        return "pass" if ok else "MISS"

    def as_json(self) -> dict[str, Any]:
        return {
            "section": self.section, "name": self.name, "value": self.value, "unit": self.unit,
            "target": self.target, "target_is_minimum": self.higher_is_better, "verdict": self.verdict,
            "note": self.note, "detail": self.detail,
        }  # fmt: skip


async def wait_until(check: Callable[[], Awaitable[bool]], timeout: float, what: str) -> None:
    """Poll ``check`` until it is true; a RuntimeError naming ``what`` after ``timeout`` seconds."""
    try:
        with anyio.fail_after(timeout):
            while not await check():
                await anyio.sleep(0.01)
    except TimeoutError:
        raise RuntimeError(f"gave up after {timeout:g}s waiting for {what}") from None


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q`` quantile (0..1) of ``values``, linearly interpolated."""
    ordered = sorted(values)
    k = (len(ordered) - 1) * q
    lo = math.floor(k)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def summary(values: Sequence[float], digits: int = 4) -> dict[str, Any]:
    """Median, p95, min, max and the raw runs, for the JSON detail of a metric."""
    return {
        "median": round(statistics.median(values), digits), "p95": round(percentile(values, 0.95), digits),
        "min": round(min(values), digits), "max": round(max(values), digits), "n": len(values),
        "runs": [round(v, digits) for v in values] if len(values) <= 20 else None,
    }  # fmt: skip


def format_table(metrics: Sequence[Metric]) -> str:
    """The readable result table: metric, value, target, verdict."""
    rows = [("metric", "value", "target", "result")]
    for m in metrics:
        value = "n/a" if m.value is None else f"{m.value:,.{_digits(m.value)}f} {m.unit}".rstrip()
        target = "" if m.target is None else f"{'≥' if m.higher_is_better else '≤'} {m.target:g} {m.unit}".rstrip()
        rows.append((f"{m.section}: {m.name}", value, target, m.verdict))
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _digits(value: float) -> int:
    return 0 if abs(value) >= 1000 else 1 if abs(value) >= 10 else 2 if abs(value) >= 0.1 else 3


# Settings and engines ---------------------------------------------------------------------------


def isolate_environment(state_dir: Path) -> None:
    """No MEMDEX_* variable, user config or user state of this machine shapes the numbers."""
    for key in [k for k in os.environ if k.startswith("MEMDEX_")]:
        del os.environ[key]
    os.environ["XDG_CONFIG_HOME"] = str(state_dir / "config")
    os.environ["XDG_STATE_HOME"] = str(state_dir / "state")
    os.environ["HF_HUB_OFFLINE"] = "1"  # everything is local; never wait on the network


def bench_settings(
    workspace: Path, index: Path, provider: str, model: Path, window_tokens: int = 0, **overrides: Any
) -> Settings:
    """Settings for one benchmark engine: this workspace and index, this embedding provider (and
    embedding.window_tokens)."""
    embedding: dict[str, Any] = {"provider": provider, "local": {"model": str(model)}, "window_tokens": window_tokens}
    return load_settings(workspace=workspace, index_path=index, embedding=embedding, **overrides)


def index_sizes(index: Path) -> dict[str, Any]:
    """Bytes of a closed SQLite index: the file, its WAL (if any), its embedding cache file, the FTS5 index's
    data blocks within the file; and its chunk count and characters."""
    sizes = {name: Path(f"{index}{suffix}").stat().st_size if Path(f"{index}{suffix}").exists() else 0
             for name, suffix in (("file_bytes", ""), ("wal_bytes", "-wal"), ("cache_file_bytes", ".cache"))}  # fmt: skip
    conn = db.connect(index, readonly=True)
    try:
        fts = conn.execute("SELECT sum(length(block)) FROM chunks_fts_data").fetchone()[0]
        chunks, chars = conn.execute("SELECT count(*), sum(length(text)) FROM chunks").fetchone()
    finally:
        conn.close()
    return {**sizes, "fts_data_bytes": fts or 0, "chunks": chunks, "chunk_chars": chars or 0}


def fresh_index(path: Path) -> Path:
    """``path`` with no index (and no WAL/SHM) left from an earlier run."""
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    return path


# Synthetic vectors --------------------------------------------------------------------------------


def random_unit_vector(text: str, dims: int) -> list[float]:
    """A deterministic pseudo-random unit vector for ``text`` (seeded by its SHA-256)."""
    seed = int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "little")
    v = np.random.default_rng(seed).standard_normal(dims).astype(np.float32)
    return (v / np.linalg.norm(v)).tolist()  # type: ignore[no-any-return]


class SyntheticVectors:
    """A started provider whose *document* vectors are random but deterministic (no model time).

    Queries use ``query_vectors`` when the text is there (precomputed with the real model, so a
    search can be timed without its embedding), else the real model. The fingerprint differs
    from the real provider's, so synthetic vectors never pass for real ones.
    """

    def __init__(self, inner: EmbeddingProvider, query_vectors: Mapping[str, list[float]] | None = None) -> None:
        self.inner = inner
        self.query_vectors = dict(query_vectors or {})
        self.id = inner.id
        self.model = inner.model
        self.fingerprint = f"synthetic-{inner.fingerprint}"
        self.dims = inner.dims
        self.max_input_tokens = inner.max_input_tokens

    async def start(self) -> None:
        await self.inner.start()

    async def embed_query(self, text: str) -> list[float]:
        cached = self.query_vectors.get(text)
        return cached if cached is not None else await self.inner.embed_query(text)

    async def embed_batch(self, texts: Sequence[str], *, bulk: bool = False) -> list[list[float]]:
        return [random_unit_vector(t, self.dims) for t in texts]

    async def aclose(self) -> None:
        await self.inner.aclose()


def synthetic_documents(query_vectors: Mapping[str, list[float]] | None = None) -> ProviderFactory:
    """A provider factory for MemoryEngine whose providers are wrapped in :class:`SyntheticVectors`."""

    async def factory(settings: Any, exclude: frozenset[str] = frozenset()) -> ProviderChoice:
        choice = await open_provider(settings, exclude)
        if choice.provider is None:
            return choice
        return ProviderChoice(SyntheticVectors(choice.provider, query_vectors), choice.note)

    return factory


# Cached inputs ------------------------------------------------------------------------------------


def generator_version() -> str:
    """Changes whenever the workspace generator does, so cached inputs are rebuilt."""
    return hashlib.sha256(Path(workspace_gen.__file__).read_bytes()).hexdigest()[:10]


def _cache_entry(cache_dir: Path, name: str) -> Path:
    """``cache_dir/<name>-<generator version>``; entries of older generator versions are deleted."""
    version = generator_version()
    for stale in cache_dir.glob(f"{name}-*"):
        if stale.name != f"{name}-{version}":
            shutil.rmtree(stale, ignore_errors=True)
    return cache_dir / f"{name}-{version}"


def _lang_tag(lang: str) -> str:
    """'' for English (the cache names of before), else ``<lang>-``."""
    return "" if lang == "en" else f"{lang}-"


def cached_workspace(cache_dir: Path, files: int, seed: int, lang: str = "en") -> Path:
    """A generated ``files``-file workspace, written once and reused (callers must not modify it)."""
    root = _cache_entry(cache_dir, f"ws-{_lang_tag(lang)}{files}f-s{seed}")
    marker = root / ".complete"
    if not marker.exists():
        shutil.rmtree(root, ignore_errors=True)
        workspace_gen.write_workspace(root, files=files, seed=seed, lang=lang)
        marker.write_text("ok\n")
    return root


@dataclass(frozen=True)
class Store:
    """A cached keyword + vector index over a generated workspace."""

    workspace: Path
    index: Path
    files: int
    chunks: int


async def cached_store(
    cache_dir: Path, chunks: int, seed: int, model: Path, window_tokens: int = 0, lang: str = "en"
) -> tuple[Store, float | None]:
    """A workspace of about ``chunks`` chunks, indexed with synthetic vectors of the model's size
    (one per part with ``window_tokens``).

    Built once (the seconds it took are returned; None when it came from the cache). The vectors
    go through the engine's own write path, so the index looks like a real one, embedding cache
    included; only the numbers in the vectors are random.
    """
    name = f"store-{_lang_tag(lang)}{chunks}c-s{seed}" + (f"-w{window_tokens}" if window_tokens else "")
    root = _cache_entry(cache_dir, name)
    workspace, index, marker = root / "workspace", root / "index.sqlite", root / "store.json"
    if marker.exists():
        info = json.loads(marker.read_text())
        return Store(workspace, index, info["files"], info["chunks"]), None
    shutil.rmtree(root, ignore_errors=True)
    generated = workspace_gen.write_workspace(workspace, chunks=chunks, seed=seed, lang=lang)
    settings = bench_settings(workspace, index, "local", model, window_tokens)
    async with MemoryEngine(settings, background_sync=False, provider_factory=synthetic_documents()) as engine:
        report = await engine.sync()
        status = await engine.status()
        if status.mode != "hybrid":
            raise RuntimeError(f"the synthetic store at {index} has no vectors: {status.note}")
    marker.write_text(json.dumps({"files": status.files, "chunks": status.chunks, "generated": generated.files}))
    return Store(workspace, index, status.files, status.chunks), report.seconds


# Machine facts ----------------------------------------------------------------------------------


def machine_info() -> dict[str, Any]:
    """Cores, RAM, load, versions: what the numbers were measured on."""
    drv = driver()
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:
        cores = os.cpu_count() or 0
    return {
        "cores": cores,
        "ram_gb": round(_meminfo_kb("MemTotal") / 1024**2, 1),
        "load_avg": [round(x, 2) for x in os.getloadavg()],
        "platform": platform.platform(),
        "python": platform.python_version(),
        "sqlite": f"{drv.sqlite_version} ({drv.name})",
        "sqlite_vec": drv.vec_version or f"unavailable: {drv.vec_error}",
        "llama_cpp_python": _version("llama_cpp_python"),
        "mcp": _version("mcp"),
        "memdex_code": str(MEMDEX_ROOT),
        "memdex_commit": _git(MEMDEX_ROOT, "rev-parse", "--short", "HEAD"),
        "memdex_dirty_files": len((_git(MEMDEX_ROOT, "status", "--porcelain") or "").splitlines()),
        "bench_commit": _git(REPO_ROOT, "rev-parse", "--short", "HEAD"),
    }


def _meminfo_kb(key: str) -> int:
    with contextlib.suppress(OSError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def _version(dist: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:
        return None


def _git(repo: Path, *args: str) -> str | None:
    try:
        return subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def rss_mb() -> float:
    """This process's resident set now, in MB (Linux /proc; 0 elsewhere)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def peak_rss_mb() -> float:
    """This process's peak resident set so far, in MB (``ru_maxrss``)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


@contextlib.contextmanager
def local_postgres(folder: Path) -> Iterator[str]:
    """A PostgreSQL 16 + pgvector (the pgserver package, a dev dependency) with its data in ``folder``,
    kept between runs so cached indexes stay; yields the URL of its ``postgres`` database and stops the
    server afterwards."""
    import warnings

    with warnings.catch_warnings():  # platformdirs warns when XDG_RUNTIME_DIR is unset
        warnings.simplefilter("ignore")
        import pgserver

        folder.mkdir(parents=True, exist_ok=True)
        server = pgserver.get_server(folder, cleanup_mode="stop")

    def stop() -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            server.cleanup()

    def stop_then_exit(signum: int, _frame: Any) -> None:  # a bench killed with SIGTERM stops its server first
        signal.signal(signum, signal.SIG_DFL)
        stop()
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, stop_then_exit)
    try:
        yield str(server.get_uri("postgres"))
    finally:
        signal.signal(signal.SIGTERM, previous)
        stop()
