"""Small helpers shared by the tests: loopback ports, subprocess cleanup, polling."""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Awaitable, Callable

import anyio

DEADLINE = 10.0  # generous: watcher debounces in tests are ~300 ms, but CI machines are noisy


def free_port() -> int:
    """A loopback port nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def stop_process(process: subprocess.Popen[bytes]) -> None:
    """Terminate a server this test started, and kill it if it does not exit in time."""
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


async def eventually(check: Callable[[], Awaitable[bool]], what: str, timeout: float = DEADLINE) -> float:
    """Poll ``check`` until it is true; returns the seconds it took."""
    started = time.monotonic()
    while not await check():
        if time.monotonic() - started > timeout:
            raise AssertionError(f"not within {timeout}s: {what}")
        await anyio.sleep(0.05)
    return time.monotonic() - started
