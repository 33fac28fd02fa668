"""`memdex status` and `memdex doctor`: what the index holds, and whether search is ready and why not.

Both print to stdout for a person or a script; a problem is a line of its own, never a traceback.
"""

from __future__ import annotations

import json
import logging
import time

import anyio

from memdex.memory_core import (
    ConfigError,
    EmbeddingError,
    MemdexError,
    MemoryEngine,
    Settings,
    Workspace,
    check_root,
    index_owner,
    memory_letters,
    open_provider,
    provider_candidates,
    script_warning,
    sqlite_driver,
    utf16_files,
)


async def status(settings: Settings, *, as_json: bool) -> int:
    """`memdex status`: where the workspace and index are, what the index holds, which vectors it has."""
    async with MemoryEngine(settings, background_sync=False) as engine:
        status = await engine.status()
        on_disk = len(await anyio.to_thread.run_sync(engine.workspace.discover))
    drv = sqlite_driver()
    built = engine.built_with
    vectors = {key: built[key] for key in ("provider", "model", "dims")} if built else None
    embedding = settings.embedding
    if as_json:
        info = {
            "workspace": str(engine.workspace.root), "index": engine.index.location, "filesOnDisk": on_disk,
            "filesIndexed": status.files, "chunks": status.chunks, "lastSync": status.last_sync,
            "embedding": {"provider": embedding.provider, "fallback": embedding.fallback}, "indexVectors": vectors,
            "sqlite": drv.sqlite_version, "sqliteDriver": drv.name, "sqliteVec": drv.vec_version, "sqliteVecError": drv.vec_error,
        }  # fmt: skip
        print(json.dumps(info, indent=2))
        return 0
    to_try, skipped = provider_candidates(embedding)
    configured = "none: keyword-only search" if embedding.provider == "none" else (
        f"{embedding.provider}, which finds no provider to try, so keyword-only search ({'; '.join(skipped)})"
        if not to_try else
        f"{embedding.provider} (fallback {embedding.fallback}); `memdex doctor` loads it and says which model answers"
    )
    _print_rows(
        {
            "workspace": str(engine.workspace.root),
            "index": engine.index.location,
            "memory files": f"{on_disk} on disk, {status.files} indexed in {status.chunks} chunks",
            "last sync": status.last_sync or "never; `memdex index` builds the index (a server does it on start)",
            "embeddings": configured,
            "index vectors": f"{vectors['provider']} {vectors['model']} ({vectors['dims']} dims)" if vectors
            else "none: keyword-only search, as configured" if not to_try
            else "none yet: searches are keyword-only until the index is embedded",
            "sqlite": f"{drv.sqlite_version} ({drv.name})",
            "sqlite-vec": drv.vec_version or f"unavailable: {drv.vec_error}",
        }
    )
    return 0


def _print_rows(rows: dict[str, str]) -> None:
    """``key: value`` lines, the values aligned."""
    width = max(map(len, rows)) + 1
    for key, value in rows.items():
        print(f"{key + ':':{width}} {value}")


async def doctor(settings: Settings) -> int:
    """Check what search needs, one line each, and end with a verdict: ``OK: …`` (exit 0) or ``PROBLEMS: N …`` (1)."""
    drv = sqlite_driver()
    problems: list[str] = []
    warnings: list[str] = []
    try:
        if not settings.replica:  # a replica reads the database, never a folder
            check_root(settings.workspace_dir)
            warnings += await anyio.to_thread.run_sync(_file_warnings, settings)
        workspace = str(settings.workspace_dir)
    except ConfigError as exc:
        problems.append(str(exc))
        workspace = f"PROBLEM: {exc}"
    if not drv.vectors and settings.store.backend == "sqlite":
        problems.append(f"sqlite-vec is unavailable ({drv.vec_error}); vector search is off")
    print(f"sqlite        {drv.sqlite_version} via {drv.name}")
    print(f"sqlite-vec    {drv.vec_version or 'unavailable: ' + str(drv.vec_error)}")
    print(f"workspace     {workspace}")
    print(f"index         {await _probe_index(settings, problems)}")
    print(f"embeddings    provider = {settings.embedding.provider}, fallback = {settings.embedding.fallback}")
    ready = await _probe_embeddings(settings, problems)
    if ready and not settings.replica and not problems:
        letters = await anyio.to_thread.run_sync(memory_letters, Workspace(settings.workspace_dir, settings.extra_paths))
        if warning := script_warning(ready[1], letters):
            warnings.append(warning)
    for warning in warnings:
        print(f"WARNING: {warning}")
    if problems:
        print(f"PROBLEMS: {len(problems)}: " + "; ".join(problems))
        return 1
    if ready:
        print(f"OK: keyword and vector search ready ({' '.join(ready)})")
    elif settings.embedding.provider == "none":
        print("OK: keyword search ready (keyword-only, as configured: embedding.provider is none)")
    else:  # auto found nothing to try: keyword-only is what it gives, and a supported way to run
        print("OK: keyword search ready (keyword-only: no local model installed and no API key; either one adds "
              "vector search)")
    return 0


def _file_warnings(settings: Settings) -> list[str]:
    """Warnings naming the memory files saved as UTF-16, which memdex searches but does not write to, and those
    it skips for a name no answer path can spell."""
    workspace = Workspace(settings.workspace_dir, settings.extra_paths)
    warnings = []
    if found := utf16_files(workspace):  # a discovery, which fills workspace.misnamed too
        verb, them = ("is", "it") if len(found) == 1 else ("are", "them")
        warnings.append(f"{_names(found)} {verb} saved as UTF-16: memdex searches {them}, but memory_append and "
                        f"memory_edit refuse to write to {them}; save {them} as UTF-8")
    if misnamed := sorted(workspace.misnamed):
        them = "it" if len(misnamed) == 1 else "them"
        warnings.append(f"{_names(misnamed)}: not indexed, since a name there is not UTF-8 text or holds a "
                        f"backslash; rename {them}")
    return warnings


def _names(paths: list[str]) -> str:
    """The first five of ``paths``, and how many more."""
    return ", ".join(paths[:5]) + (f" and {len(paths) - 5} more" if len(paths) > 5 else "")


async def _probe_index(settings: Settings, problems: list[str]) -> str:
    """Where the index lives; for a database, whether it answers (and how much it holds), a problem noted if not."""
    owner = index_owner(settings)
    if settings.store.backend == "sqlite":
        return owner.location
    try:
        await owner.open()
        try:
            files, chunks = await owner.counts()
        finally:
            await owner.close()
    except MemdexError as exc:
        problems.append(str(exc))
        return f"{owner.location}: PROBLEM: {exc}"
    return f"{owner.location}: reachable, {files} files in {chunks} chunks"


async def _probe_embeddings(settings: Settings, problems: list[str]) -> tuple[str, str] | None:
    """Load the configured provider and embed a probe: the provider and model that answered, or None
    (a problem is noted when a provider was wanted)."""
    started = time.perf_counter()
    factory_log = logging.getLogger("memdex.memory_core.embeddings.factory")
    level = factory_log.level
    factory_log.setLevel(logging.ERROR)  # its warning would repeat the reason printed below
    try:
        choice = await open_provider(settings.embedding)
    finally:
        factory_log.setLevel(level)
    provider = choice.provider
    if provider is None:
        print(f"              {choice.note}")
        if choice.tried:  # a provider was wanted and failed; the reason is the line above, said once
            problems.append("no embedding provider loaded (the reason is under embeddings above)")
        return None
    try:
        loaded = time.perf_counter() - started
        where = getattr(provider, "path", None) or getattr(provider, "base_url", None)
        print(f"              {provider.id} {provider.model} ({provider.dims} dims) from {where}, ready in {loaded:.1f}s")
        if choice.note:
            print(f"              {choice.note}")
        started = time.perf_counter()
        await provider.embed_query("memdex doctor probe")
        print(f"              one query embedded in {1000 * (time.perf_counter() - started):.0f} ms")
    except EmbeddingError as exc:
        problems.append(f"{provider.id} failed to embed a probe query: {exc}")
        return None
    finally:
        await provider.aclose()
    return provider.id, provider.model
