"""A real third-party client: the official TypeScript SDK (tests/ts_client/client.mjs) against `memdex serve`
as a subprocess, over stdio and over Streamable HTTP, on a copy of examples/workspace.

The client walks the whole surface (initialize, tools, the prompts, resources, subscribe/unsubscribe with
the update notification, an append and its correction by memory_edit, bad arguments) and prints a JSON
summary, asserted here; `memdex undo` then reverses the client's writes. Needs node and
`npm ci --prefix tests/ts_client`; .ci/run installs both, so in CI (``CI`` set) their absence fails.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from helpers import free_port, stop_process

ROOT = Path(__file__).resolve().parent.parent
CLIENT_DIR = ROOT / "tests" / "ts_client"
TOKEN = "ts-client-token-0123456789"


def _missing() -> str | None:
    if shutil.which("node") is None or shutil.which("npm") is None:
        return "node and npm are needed for the TypeScript SDK client (apt-get install nodejs npm)"
    if not (CLIENT_DIR / "node_modules" / "@modelcontextprotocol" / "sdk" / "package.json").is_file():
        return "the TypeScript SDK is not installed: run `npm ci --prefix tests/ts_client`"
    return None


@pytest.fixture(autouse=True)
def _needs_node() -> None:
    if (reason := _missing()) is not None:
        if os.environ.get("CI"):
            pytest.fail(f"CI installs the TypeScript client before the tests, yet: {reason}")
        pytest.skip(reason)


@pytest.fixture
def notes(tmp_path: Path) -> Path:
    workspace = tmp_path / "ws"
    shutil.copytree(ROOT / "examples" / "workspace", workspace)
    return workspace


def _server_args(tmp_path: Path, workspace: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "memdex.server.cli", "serve", "--workspace", str(workspace),
            "--index", str(tmp_path / "idx.sqlite"), *extra]


def _run_client(*args: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    done = subprocess.run(
        ["node", str(CLIENT_DIR / "client.mjs"), *args], cwd=CLIENT_DIR, env=env,
        capture_output=True, text=True, timeout=180,
    )
    lines = done.stdout.strip().splitlines()
    assert done.returncode == 0 and lines, f"client failed ({done.returncode}): {done.stdout}\n{done.stderr[-3000:]}"
    summary: dict[str, Any] = json.loads(lines[-1])
    return summary


def _assert_summary(summary: dict[str, Any], transport: str, workspace: Path) -> str:
    """Check the client's summary; returns the history id of its edit."""
    bad = summary.pop("badArguments")
    edit_id = summary.pop("editId")
    assert summary == {
        "transport": transport,
        "server": "memdex",
        "capabilities": {"tools": True, "prompts": True, "resources": True, "subscribe": True},
        "hasInstructions": True,
        "tools": ["memory_append", "memory_edit", "memory_get", "memory_search"],
        "search": {"isError": False, "mode": "keyword", "paths": summary["search"]["paths"]},
        "get": {"isError": False, "text": "# Memory", "to": 1},
        "prompts": ["memory_consolidate", "memory_flush"],
        "consolidatePrompt": {"mentionsEdit": True, "hasMemoryHash": True, "logs": 3},
        "flushPrompt": {"messages": 1, "roles": ["user"], "mentionsNoReply": True, "mentionsDailyLog": True},
        "resources": [
            "memory://MEMORY.md",
            "memory://memory/2026-11-18.md",
            "memory://memory/2026-11-19.md",
            "memory://memory/2026-11-20.md",
            "memory://status",
        ],
        "readMemory": {"mimeType": "text/markdown", "firstLine": "# Memory"},
        "readStatus": {"mimeType": "application/json", "files": 4},
        "readMissing": {"rpcError": -32602},
        "token": summary["token"],
        "append": {"isError": False, "path": "MEMORY.md"},
        "updatedWhileSubscribed": 1,
        "appendFound": "MEMORY.md",
        "edit": {"isError": False, "hashChanged": True, "historyId": True, "pending": False, "updated": True,
                 "found": "MEMORY.md", "staleRefused": True},
        "editAnnotations": {"destructive": True, "idempotent": False, "readOnly": False},
        "updatedAfterUnsubscribe": 0,
        "aliveAfterErrors": True,
    }
    assert summary["search"]["paths"][0] == "MEMORY.md"  # "PostgreSQL 17 ... billing service" is a MEMORY.md decision
    # Every bad call is an error result with a one-line cause, not a protocol failure or a crash.
    expected_causes = {
        "searchWithoutQuery": "query is missing",
        "searchTooManyResults": "maxResults must be an integer from 1 to 50 (got 999)",
        "getOutsideWorkspace": "'../outside.md' is outside",
        "getNotMarkdown": "'notes.txt' is not a Markdown file",
        "appendBadTarget": "target must be 'daily' or 'long_term' (got 'elsewhere')",
        "editNotFound": "the old text is not in MEMORY.md",
        "editDailyLog": "memory/2026-11-18.md is a daily log, which is append-only",
        "unknownTool": "Unknown tool: memory_delete",
    }
    assert set(bad) == set(expected_causes)
    for name, cause in expected_causes.items():
        assert bad[name]["isError"] is True, (name, bad[name])
        assert cause in bad[name]["text"], (name, bad[name])
        assert "Traceback" not in bad[name]["text"]
    # The append, its correction by memory_edit and the second append reached the file on disk.
    memory = (workspace / "MEMORY.md").read_text(encoding="utf-8")
    assert f"- The TypeScript client corrected {summary['token']}." in memory
    assert f"- The TypeScript client wrote {summary['token']}." not in memory
    assert f"- A second note, {summary['token']}-2." in memory
    return str(edit_id)


def _undo_round_trip(tmp_path: Path, workspace: Path, edit_id: str, token: str) -> None:
    """`memdex undo` of the client's edit: refused while a later append stands, then, that undone first, it
    restores the line the client first wrote."""
    def memdex(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "memdex.server.cli", *args, "--workspace", str(workspace),
                               "--index", str(tmp_path / "idx.sqlite")], capture_output=True, text=True, timeout=60)

    refused = memdex("undo", edit_id)
    assert refused.returncode == 2 and "undo them first, newest first" in refused.stderr, refused.stderr
    later = refused.stderr.split("newest first (")[1].split(")")[0]
    assert memdex("undo", later).returncode == 0
    undone = memdex("undo", edit_id)
    assert undone.returncode == 0, undone.stderr
    memory = (workspace / "MEMORY.md").read_text(encoding="utf-8")
    assert f"- The TypeScript client wrote {token}." in memory and "corrected" not in memory and "second note" not in memory
    tools = [line.split()[2] for line in memdex("history").stdout.splitlines() if not line.startswith("    ")]
    assert tools == ["append", "edit", "append", "undo", "undo"]


def test_typescript_sdk_client_over_stdio(tmp_path: Path, notes: Path) -> None:
    """The TS SDK spawns `memdex serve` over stdio and every step of the walk answers as expected."""
    summary = _run_client("stdio", *_server_args(tmp_path, notes))
    token = summary["token"]
    _undo_round_trip(tmp_path, notes, _assert_summary(summary, "stdio", notes), token)


def test_typescript_sdk_client_over_streamable_http(tmp_path: Path, notes: Path) -> None:
    """The TS SDK's Streamable HTTP transport, with a bearer token, against `memdex serve --transport http`."""
    port = free_port()
    server = subprocess.Popen(
        _server_args(tmp_path, notes, "--transport", "http", "--port", str(port), "--auth-token", TOKEN),
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            assert server.poll() is None, f"server exited early: {server.stderr.read().decode() if server.stderr else ''}"
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", port)) == 0:
                    break
            assert time.monotonic() < deadline, f"server did not listen on {port}"
            time.sleep(0.1)
        url = f"http://127.0.0.1:{port}/mcp"
        refused = subprocess.run(["node", str(CLIENT_DIR / "client.mjs"), "http", url], cwd=CLIENT_DIR,
                                 capture_output=True, text=True, timeout=60)
        assert refused.returncode == 1 and "unauthorized" in refused.stdout, refused.stdout  # no token: 401
        summary = _run_client("http", url, env={**os.environ, "MCP_BEARER_TOKEN": TOKEN})
        assert server.poll() is None, "the server must outlive the client's bad calls"
    finally:
        stop_process(server)
    token = summary["token"]
    _undo_round_trip(tmp_path, notes, _assert_summary(summary, "http", notes), token)
