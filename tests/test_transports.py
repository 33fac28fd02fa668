"""The server over real transports: stdio as a subprocess, SSE and Streamable HTTP on real uvicorn."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from helpers import free_port, stop_process
from mcp import Client
from mcp.client.sse import sse_client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

TOKEN = "s3cret-token"


def _server_args(workspace: Path, *extra: str) -> list[str]:
    return ["-m", "memdex.server.cli", "serve", "--workspace", str(workspace), "--index", str(workspace / "idx.sqlite"), *extra]


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMDEX_")}
    env["XDG_STATE_HOME"] = str(tmp_path / "state")
    return env


def _wait_for_port(port: int, proc: subprocess.Popen[bytes], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"server exited early: {proc.stderr.read().decode() if proc.stderr else ''}")
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise AssertionError(f"server did not listen on {port} within {timeout}s")


@pytest.fixture
def notes(tmp_path: Path) -> Path:
    workspace = tmp_path / "ws"
    (workspace / "memory").mkdir(parents=True)
    (workspace / "MEMORY.md").write_text("# Memory\n\n- The deploy key is ORBIT-7734.\n", encoding="utf-8")
    (workspace / "memory" / "2026-03-01.md").write_text("# 2026-03-01\n\n- Chose SQLite for the cache.\n", encoding="utf-8")
    return workspace


def _run_http_server(tmp_path: Path, workspace: Path, transport: str, *extra: str) -> Iterator[int]:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, *_server_args(workspace, "--transport", transport, "--port", str(port), *extra)],
        env=_env(tmp_path), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )
    try:
        _wait_for_port(port, proc)
        yield port
    finally:
        stop_process(proc)


@pytest.fixture
def http_port(tmp_path: Path, notes: Path) -> Iterator[int]:
    yield from _run_http_server(tmp_path, notes, "http", "--auth-token", TOKEN)


@pytest.fixture
def sse_port(tmp_path: Path, notes: Path) -> Iterator[int]:
    yield from _run_http_server(tmp_path, notes, "sse", "--auth-token", TOKEN)


async def _search_until_found(client: Client, query: str, timeout: float = 20.0) -> dict:
    """Search until the background index has the answer (the handshake does not wait for it)."""
    deadline = time.monotonic() + timeout
    while True:
        result = await client.call_tool("memory_search", {"query": query})
        assert not result.is_error, result.content
        if result.structured_content["results"] or time.monotonic() > deadline:
            return result.structured_content
        await __import__("anyio").sleep(0.1)


async def test_stdio_server_runs_as_a_subprocess_and_answers_tools(tmp_path: Path, notes: Path) -> None:
    """A real `memdex serve` over stdio: tools listed, search and get answered, stdout stays protocol-only."""
    params = StdioServerParameters(command=sys.executable, args=_server_args(notes), env=_env(tmp_path))
    async with Client(params) as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
        assert names == {"memory_search", "memory_get", "memory_append"}
        answer = await _search_until_found(client, "ORBIT-7734")
        assert answer["results"][0]["path"] == "MEMORY.md"
        got = await client.call_tool("memory_get", {"path": "MEMORY.md", "from": 3, "lines": 1})
        assert got.structured_content["text"] == "- The deploy key is ORBIT-7734."


async def test_streamable_http_with_the_token_serves_tools(http_port: int) -> None:
    """Streamable HTTP on real uvicorn answers a client that sends the bearer token."""
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {TOKEN}"})
    async with http, Client(streamable_http_client(f"http://127.0.0.1:{http_port}/mcp", http_client=http)) as client:
        answer = await _search_until_found(client, "SQLite cache")
        assert answer["results"][0]["path"] == "memory/2026-03-01.md"


async def test_streamable_http_without_the_token_is_refused(http_port: int) -> None:
    """No token, or a wrong one, gets 401 before reaching MCP."""
    async with httpx.AsyncClient() as http:
        url = f"http://127.0.0.1:{http_port}/mcp"
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
        assert (await http.post(url, json=body)).status_code == 401
        wrong = await http.post(url, json=body, headers={"Authorization": "Bearer nope"})
        assert wrong.status_code == 401
        assert wrong.headers["www-authenticate"].startswith("Bearer")


async def test_http_host_guard_rejects_a_foreign_host_header(http_port: int) -> None:
    """The SDK's DNS-rebinding guard stays on: a request for another Host is refused."""
    async with httpx.AsyncClient() as http:
        response = await http.post(
            f"http://127.0.0.1:{http_port}/mcp",
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}},
            headers={"Authorization": f"Bearer {TOKEN}", "Host": "evil.example:80",
                     "Accept": "application/json, text/event-stream"},
        )
        assert response.status_code in (403, 421)


async def test_sse_with_the_token_serves_tools(sse_port: int) -> None:
    """Legacy SSE on real uvicorn answers a client that sends the bearer token."""
    transport = sse_client(f"http://127.0.0.1:{sse_port}/sse", headers={"Authorization": f"Bearer {TOKEN}"})
    async with Client(transport) as client:
        answer = await _search_until_found(client, "ORBIT-7734")
        assert answer["results"][0]["path"] == "MEMORY.md"


async def test_sse_without_the_token_is_refused(sse_port: int) -> None:
    """The SSE endpoint and the message endpoint both require the token."""
    async with httpx.AsyncClient() as http:
        assert (await http.get(f"http://127.0.0.1:{sse_port}/sse")).status_code == 401
        assert (await http.post(f"http://127.0.0.1:{sse_port}/messages/", json={})).status_code == 401


async def test_http_without_a_configured_token_needs_none(tmp_path: Path, notes: Path) -> None:
    """With no token configured, a plain client on loopback is served."""
    for port in _run_http_server(tmp_path, notes, "http"):
        async with Client(f"http://127.0.0.1:{port}/mcp") as client:
            tools = await client.list_tools()
            assert "memory_search" in {tool.name for tool in tools.tools}
