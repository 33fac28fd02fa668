"""Opening and closing engines leaves no file descriptor and no thread behind."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from fake_provider import HashFactory
from helpers import eventually

from memdex.memory_core import MemoryEngine

pytestmark = pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="counts descriptors through /proc")


def _fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def _threads() -> list[str]:
    """Live threads other than anyio's pooled workers (idle ones are reused, and exit after 10 s)."""
    return sorted(t.name for t in threading.enumerate() if t.name != "AnyIO worker thread")


async def _cycle(make_engine: Callable[..., MemoryEngine], n: int) -> None:
    """One engine's whole life: background sync, watcher, vectors, searches, an append, a read."""
    async with make_engine(background_sync=True, watch={"debounce_ms": 100}, provider_factory=HashFactory()) as engine:

        async def synced() -> bool:
            return (await engine.status()).last_sync is not None

        await eventually(synced, "the first sync")
        await engine.append(f"Cycle {n} stored a note about leak checks.")
        await engine.search("leak checks")
        await engine.read("MEMORY.md")
        await engine.sync()


async def test_engines_release_every_descriptor_and_thread(
    make_engine: Callable[..., MemoryEngine], write: Callable[[str, str], Path]
) -> None:
    write("MEMORY.md", "# Memory\n\n- Leak checks run in CI.\n")
    await _cycle(make_engine, 0)  # warm-up: worker threads, driver probe, imports
    fds, threads = _fds(), _threads()
    for n in range(1, 6):
        await _cycle(make_engine, n)

    async def released() -> bool:  # a watch thread lets go of its inotify handle within RUST_TIMEOUT_MS
        return _fds() <= fds and len(_threads()) <= len(threads)

    await eventually(released, f"descriptors and threads released: {_fds()} fds (before: {fds}), {_threads()}", 3)
