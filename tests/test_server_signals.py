"""`memdex serve` stops cleanly on SIGINT and SIGTERM, on stdio and HTTP, closing its index."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import free_port, stop_process
from mcp import Client

SIGNALS = [signal.SIGINT, signal.SIGTERM]
EXIT_WITHIN = 30.0  # seconds: a server that ignores the signal never exits; a busy machine may take a few


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "memory").mkdir(parents=True)
    (root / "MEMORY.md").write_text("# Memory\n\n- The deploy key is ORBIT-7734.\n", encoding="utf-8")
    return root


@pytest.fixture
def index(tmp_path: Path) -> Path:
    return tmp_path / "idx.sqlite"


def _serve(workspace: Path, index: Path, *extra: str) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMDEX_")}
    env["MEMDEX_EMBEDDING__PROVIDER"] = "none"
    command = [sys.executable, "-m", "memdex.server.cli", "serve", "--workspace", str(workspace), "--index", str(index)]
    return subprocess.Popen(
        [*command, *extra], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )


@pytest.fixture
def processes() -> Iterator[list[subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for process in started:
        stop_process(process)  # also closes its pipes


def _send(process: subprocess.Popen[bytes], message: dict[str, object]) -> None:
    assert process.stdin is not None
    process.stdin.write(json.dumps(message).encode() + b"\n")
    process.stdin.flush()


def _handshake(process: subprocess.Popen[bytes]) -> None:
    """An initialize handshake over the pipe, as a 2025-06-18 client would do it."""
    client = {"name": "signal-test", "version": "1"}
    params = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": client}
    _send(process, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params})
    assert process.stdout is not None
    answer = json.loads(process.stdout.readline())
    assert answer["id"] == 1 and "result" in answer, answer
    _send(process, {"jsonrpc": "2.0", "method": "notifications/initialized"})


def _wait_for_port(port: int, process: subprocess.Popen[bytes], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert process.poll() is None, "the server exited early"
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise AssertionError(f"nothing listened on {port} within {timeout}s")


def _stop_and_check(process: subprocess.Popen[bytes], sig: signal.Signals, index: Path) -> None:
    """Send ``sig``: the server exits with 0 in time and SQLite's -wal/-shm are gone (a clean close)."""
    assert Path(f"{index}-wal").exists(), "the index should be open in WAL mode before the signal"
    process.send_signal(sig)
    try:
        code = process.wait(timeout=EXIT_WITHIN)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"still running {EXIT_WITHIN}s after {sig.name}") from None
    stderr = process.stderr.read().decode(errors="replace") if process.stderr else ""
    assert code == 0, f"exit code {code} after {sig.name}:\n{stderr[-2000:]}"
    assert not Path(f"{index}-wal").exists() and not Path(f"{index}-shm").exists(), "the index was not closed"


@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: s.name)
def test_a_signal_stops_a_stdio_server_and_closes_the_index(
    workspace: Path, index: Path, processes: list[subprocess.Popen[bytes]], sig: signal.Signals
) -> None:
    """With the client still connected (stdin open), the signal alone ends the server."""
    process = _serve(workspace, index)
    processes.append(process)
    _handshake(process)
    _stop_and_check(process, sig, index)


@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: s.name)
async def test_a_signal_stops_an_http_server_with_a_client_connected(
    workspace: Path, index: Path, processes: list[subprocess.Popen[bytes]], sig: signal.Signals
) -> None:
    """Streamable HTTP with a live client session: the signal still ends it in time, index closed."""
    port = free_port()
    process = _serve(workspace, index, "--transport", "http", "--port", str(port))
    processes.append(process)
    _wait_for_port(port, process)
    async with Client(f"http://127.0.0.1:{port}/mcp", mode="legacy") as client:  # a session with its GET stream open
        assert "memory_search" in {tool.name for tool in (await client.list_tools()).tools}
        _stop_and_check(process, sig, index)
