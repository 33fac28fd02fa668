"""The server over real transports: stdio as a subprocess, SSE and Streamable HTTP on real uvicorn."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from helpers import free_port, stop_process
from mcp import Client
from mcp.client.sse import sse_client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

TOKEN = "s3cret-token-0123456789"


def _server_args(workspace: Path, *extra: str) -> list[str]:
    return ["-m", "memdex.server.cli", "serve", "--workspace", str(workspace), "--index", str(workspace / "idx.sqlite"), *extra]


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMDEX_")}
    env["XDG_STATE_HOME"] = str(tmp_path / "state")
    return env


def _wait_for_port(port: int, proc: subprocess.Popen[bytes], log: Path, host: str = "127.0.0.1", timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"server exited early: {log.read_text(errors='replace')}")
        with socket.socket() as sock:
            if sock.connect_ex((host, port)) == 0:
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


@dataclass(frozen=True)
class Served:
    """A running `memdex serve` on HTTP: its port and the files its stdout and stderr go to."""

    port: int
    stdout: Path
    stderr: Path


@contextlib.contextmanager
def _http_server(
    tmp_path: Path, workspace: Path, transport: str, *extra: str, host: str = "127.0.0.1", env: dict[str, str] | None = None
) -> Iterator[Served]:
    port = free_port()
    served = Served(port, tmp_path / f"serve-{port}.stdout", tmp_path / f"serve-{port}.stderr")
    command = _server_args(workspace, "--transport", transport, "--host", host, "--port", str(port), *extra)
    with served.stdout.open("wb") as out, served.stderr.open("wb") as err:
        proc = subprocess.Popen([sys.executable, *command], env={**_env(tmp_path), **(env or {})}, stdout=out, stderr=err)
    try:
        _wait_for_port(port, proc, served.stderr, host)
        yield served
    finally:
        stop_process(proc)


@pytest.fixture
def http_port(tmp_path: Path, notes: Path) -> Iterator[int]:
    with _http_server(tmp_path, notes, "http", "--auth-token", TOKEN) as served:
        yield served.port


@pytest.fixture
def sse_port(tmp_path: Path, notes: Path) -> Iterator[int]:
    with _http_server(tmp_path, notes, "sse", "--auth-token", TOKEN) as served:
        yield served.port


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
        assert names == {"memory_search", "memory_get", "memory_append", "memory_edit"}
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
    with _http_server(tmp_path, notes, "http") as served:
        async with Client(f"http://127.0.0.1:{served.port}/mcp") as client:
            tools = await client.list_tools()
            assert "memory_search" in {tool.name for tool in tools.tools}


def _serve_briefly(tmp_path: Path, workspace: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    """`memdex serve` expected to refuse to start: its exit code and output (killed after 60 s if it serves)."""
    command = [sys.executable, *_server_args(workspace, "--port", str(free_port()), *extra)]
    return subprocess.run(command, env=_env(tmp_path), capture_output=True, text=True, timeout=60)


def test_a_host_beyond_loopback_without_a_token_is_refused_in_one_line(tmp_path: Path, notes: Path) -> None:
    """--host other than loopback needs --auth-token: exit 2, one line, nothing bound (192.0.2.1 is TEST-NET)."""
    result = _serve_briefly(tmp_path, notes, "--transport", "http", "--host", "192.0.2.1")
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith("memdex: ") and result.stderr.count("\n") == 1, result.stderr
    assert "--auth-token" in result.stderr and "--insecure-no-auth" in result.stderr


@pytest.mark.parametrize(
    ("how", "extra", "env"),
    [
        ("empty flag", ("--auth-token", ""), {}),
        ("short flag", ("--auth-token", "short"), {}),
        ("empty env", (), {"MEMDEX_AUTH_TOKEN": ""}),
        ("short env", (), {"MEMDEX_AUTH_TOKEN": "abc"}),
        ("empty in the config file", ("--config", "{config}"), {}),
    ],
)
def test_an_empty_or_short_token_never_opens_a_host(
    tmp_path: Path, notes: Path, how: str, extra: tuple[str, ...], env: dict[str, str]
) -> None:
    """An unset shell variable (`MEMDEX_AUTH_TOKEN=$TOKEN`) or `--auth-token ""` is not a token: memdex refuses to
    start, in one line naming the minimum, instead of binding 0.0.0.0 and letting `Authorization: Bearer` in."""
    config = tmp_path / "memdex.toml"
    config.write_text('auth_token = ""\n', encoding="utf-8")
    args = [a.replace("{config}", str(config)) for a in extra]
    command = [sys.executable, *_server_args(notes, "--port", str(free_port()), "--transport", "http", "--host", "0.0.0.0", *args)]
    result = subprocess.run(command, env={**_env(tmp_path), **env}, capture_output=True, text=True, timeout=60)
    assert result.returncode == 2, (how, result.stderr)
    assert result.stderr.startswith("memdex: ") and result.stderr.count("\n") == 1, result.stderr
    assert "auth_token" in result.stderr and "at least 16 characters" in result.stderr, result.stderr
    assert "serving http on" not in result.stderr


def test_insecure_no_auth_warns_loudly_and_an_unbindable_host_is_one_line(tmp_path: Path, notes: Path) -> None:
    """--insecure-no-auth lets it past the check with a warning; an address not on this machine is then explained."""
    result = _serve_briefly(tmp_path, notes, "--transport", "http", "--host", "192.0.2.1", "--insecure-no-auth")
    assert "INSECURE: serving on 192.0.2.1 with no auth token" in result.stderr, result.stderr
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.splitlines()[-1].startswith("memdex: cannot listen on 192.0.2.1:")
    assert "serving http on" not in result.stderr


def test_a_busy_port_is_one_line_and_nothing_claims_to_serve(tmp_path: Path, notes: Path) -> None:
    """A port another program holds: 'port N is in use; pass --port', exit 2, and no 'serving' line before it."""
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        command = [sys.executable, *_server_args(notes, "--transport", "http", "--port", str(port))]
        result = subprocess.run(command, env=_env(tmp_path), capture_output=True, text=True, timeout=60)
    assert result.returncode == 2, result.stderr
    assert result.stderr.splitlines()[-1] == f"memdex: port {port} is in use; pass --port with a free one (or stop what uses it)"
    assert "serving" not in result.stderr and "Traceback" not in result.stderr


def _log_has(path: Path, text: str, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while text not in path.read_text(errors="replace"):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def test_sse_says_it_is_deprecated_and_serving_comes_once_listening(tmp_path: Path, notes: Path) -> None:
    """Legacy SSE still serves, and its start tells the user to prefer Streamable HTTP."""
    with _http_server(tmp_path, notes, "sse", "--auth-token", TOKEN) as served:
        assert _log_has(served.stderr, f"memdex serving sse on http://127.0.0.1:{served.port}/sse")
        log = served.stderr.read_text()
    assert "deprecated by the MCP protocol" in log and "--transport http" in log
    assert log.index("deprecated") < log.index("memdex serving sse")


async def test_the_access_log_goes_to_stderr_through_logging(tmp_path: Path, notes: Path) -> None:
    """uvicorn's access lines are log records on stderr, formatted like memdex's; stdout stays empty."""
    with _http_server(tmp_path, notes, "http", "--auth-token", TOKEN) as served:
        async with httpx.AsyncClient() as http:
            assert (await http.post(f"http://127.0.0.1:{served.port}/mcp", json={})).status_code == 401
        assert _log_has(served.stderr, '"POST /mcp HTTP/1.1" 401'), served.stderr.read_text()
        access = next(line for line in served.stderr.read_text().splitlines() if "POST /mcp" in line)
        assert " INFO uvicorn.access: " in access
        assert served.stdout.read_bytes() == b""


async def test_well_known_paths_answer_404_not_401_with_a_token(http_port: int) -> None:
    """OAuth-aware clients probe /.well-known/*; a 401 there would start an OAuth flow memdex cannot finish."""
    async with httpx.AsyncClient() as http:
        for path in ("oauth-protected-resource", "oauth-protected-resource/mcp", "oauth-authorization-server"):
            response = await http.get(f"http://127.0.0.1:{http_port}/.well-known/{path}")
            assert response.status_code == 404, path
        assert (await http.get(f"http://127.0.0.1:{http_port}/mcp")).status_code == 401


@pytest.mark.parametrize("scheme", ["bearer", "BEARER", "bEaReR"])
async def test_the_bearer_scheme_is_accepted_in_any_letter_case(http_port: int, scheme: str) -> None:
    """RFC 9110: the auth scheme is case-insensitive; the token itself is not."""
    http = create_mcp_http_client(headers={"Authorization": f"{scheme} {TOKEN}"})
    async with http, Client(streamable_http_client(f"http://127.0.0.1:{http_port}/mcp", http_client=http)) as client:
        assert "memory_search" in {tool.name for tool in (await client.list_tools()).tools}
    async with httpx.AsyncClient() as http:
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
        for header in (f"{scheme} {TOKEN.upper()}", f"Basic {TOKEN}", f"{scheme}", TOKEN, ""):
            response = await http.post(f"http://127.0.0.1:{http_port}/mcp", json=body, headers={"Authorization": header})
            assert response.status_code == 401, header


def _can_bind(host: str) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind((host, 0))
        except OSError:
            return False
        return True


@pytest.mark.skipif(not _can_bind("127.0.0.2"), reason="127.0.0.2 is not a loopback address here (only Linux routes all of 127/8)")
async def test_the_host_guard_stays_on_beyond_the_sdk_loopback_names(tmp_path: Path, notes: Path) -> None:
    """Bound to 127.0.0.2 (not one of the SDK's three loopback names, so the SDK would drop its guard), the
    guard still refuses a foreign Host or Origin and answers server.allowed_hosts and the bound host."""
    allowed = {"MEMDEX_SERVER__ALLOWED_HOSTS": '["memdex.lan"]'}
    with _http_server(tmp_path, notes, "http", "--auth-token", TOKEN, host="127.0.0.2", env=allowed) as served:
        url = f"http://127.0.0.2:{served.port}/mcp"
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
        base = {"Authorization": f"Bearer {TOKEN}", "Accept": "application/json, text/event-stream"}
        async with httpx.AsyncClient() as http:

            async def status(**headers: str) -> int:
                return (await http.post(url, json=body, headers={**base, **headers})).status_code

            assert await status(Host="evil.example") == 421
            assert await status(Host=f"evil.example:{served.port}") == 421
            assert await status(Host=f"memdex.lan:{served.port}", Origin="http://evil.example") == 403
            for host in (f"memdex.lan:{served.port}", "memdex.lan", f"127.0.0.2:{served.port}", f"localhost:{served.port}"):
                assert await status(Host=host) not in (401, 403, 421), host
            assert await status(Host=f"memdex.lan:{served.port}", Origin=f"http://memdex.lan:{served.port}") not in (403, 421)


def test_the_guard_allows_loopback_the_bound_host_and_configured_names() -> None:
    """On 0.0.0.0 or ::, the defaults are the loopback names plus the bound host; a 'name:port' entry is that port only."""
    from memdex.memory_core.config_sections import ServerSettings
    from memdex.server.http_guard import transport_security

    guard = transport_security(ServerSettings(host="::", allowed_hosts=["box.lan:9000", "10.0.0.5"]))
    assert guard.enable_dns_rebinding_protection
    assert set(guard.allowed_hosts) == {
        "127.0.0.1", "127.0.0.1:*", "localhost", "localhost:*", "[::1]", "[::1]:*", "[::]", "[::]:*",
        "box.lan:9000", "10.0.0.5", "10.0.0.5:*",
    }
    assert "http://box.lan:9000" in guard.allowed_origins and "https://10.0.0.5:*" in guard.allowed_origins
