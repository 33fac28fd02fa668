"""Small helpers shared by the tests: loopback ports, subprocess cleanup, polling, a keyword-only answer."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from memdex.memory_core.models import SearchAnswer

# ../shared sits beside the repository: the small GGUF model the tests embed with, and the eval data.
SHARED = Path(__file__).resolve().parents[2] / "shared"
TEST_MODEL = SHARED / "models" / "all-MiniLM-L6-v2-f16.gguf"
LOCOMO = SHARED / "eval" / "locomo" / "locomo10.json"

DEADLINE = 30.0  # generous: watcher debounces in tests are ~300 ms, but a 2-core machine at load 8+ is slow


def shared_reason(path: Path) -> str:
    """Why a test skips without ``path`` from ../shared, and how to get it (pytest -rs shows it)."""
    return (
        f"needs ../shared/{path.relative_to(SHARED).as_posix()}: the shared folder of test data belongs beside "
        "the repository (see README, Development)"
    )


def needs_shared(path: Path) -> pytest.MarkDecorator:
    """Skip unless ``path`` under ../shared exists, saying so."""
    return pytest.mark.skipif(not path.exists(), reason=shared_reason(path))


def free_port() -> int:
    """A loopback port nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def stop_process(process: subprocess.Popen[bytes]) -> None:
    """Terminate a server this test started, kill it if it does not exit in time, close its pipes."""
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
    for stream in (process.stdin, process.stdout, process.stderr):
        if stream is not None:
            stream.close()


async def eventually(check: Callable[[], Awaitable[bool]], what: str, timeout: float = DEADLINE) -> float:
    """Poll ``check`` until it is true; returns the seconds it took."""
    started = time.monotonic()
    while not await check():
        if time.monotonic() - started > timeout:
            raise AssertionError(f"not within {timeout}s: {what}")
        await anyio.sleep(0.05)
    return time.monotonic() - started


@contextlib.contextmanager
def llama_server(model: Path, log: Path) -> Iterator[str]:
    """llama-cpp-python's OpenAI-compatible server with ``model`` for embeddings on a free loopback
    port; yields its base URL (``…/v1``) and stops it afterwards. Its output goes to ``log``."""
    port = free_port()
    command = [sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--embedding", "true"]
    command += ["--host", "127.0.0.1", "--port", str(port), "--n_ctx", "512", "--n_batch", "512", "--verbose", "false"]
    with log.open("wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while True:
            if process.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"llama_cpp.server did not start:\n{log.read_text(errors='replace')[-2000:]}")
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                    break
            except OSError:
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        stop_process(process)


@contextlib.contextmanager
def writes_held(engine: Any) -> Iterator[Callable[[], None]]:
    """Another writer holds ``engine``'s index, as another process would: a SQLite ``BEGIN IMMEDIATE``, or
    the memory's advisory write lock in PostgreSQL. Yields the call that lets go (also done on exit)."""
    settings = engine.settings
    if settings.store.backend == "postgres":
        import psycopg

        from memdex.memory_core.stores.postgres.connection import lock_name

        conn: Any = psycopg.connect(settings.store.postgres.url.get_secret_value(), autocommit=True)
        name = lock_name(settings.memory_name, "write")
        conn.execute("SELECT pg_advisory_lock(hashtextextended(%s, 0))", (name,))
        release = lambda: conn.execute("SELECT pg_advisory_unlock_all()")  # noqa: E731
    else:
        from memdex.memory_core.stores.sqlite import db

        conn = db.connect(settings.index_file)
        conn.execute("BEGIN IMMEDIATE")
        release = lambda: conn.execute("ROLLBACK")  # noqa: E731
    released = False

    def let_go() -> None:
        nonlocal released
        if not released:
            released = True
            release()

    try:
        yield let_go
    finally:
        let_go()
        conn.close()


async def keyword_answer(
    make_engine: Callable[..., Any], write: Callable[[str, str], Path], notes: dict[str, str], query: str
) -> SearchAnswer:
    """The keyword-only answer to ``query`` from ``notes`` (path: text), each written to the workspace first."""
    for path, text in notes.items():
        write(path, text)
    async with make_engine(embedding={"provider": "none"}) as engine:
        await engine.sync()
        return await engine.search(query)
