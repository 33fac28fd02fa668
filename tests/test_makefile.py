"""The quick-start targets: `make stdio` keeps stdout for the protocol, `make run` stays keyword-only.

Each runs the real Makefile against a stand-in .venv (``VENV=...``), so nothing is installed.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="needs GNU make")


def _venv(tmp_path: Path, memdex: str) -> Path:
    """A stand-in .venv: its python only says something on stdout (as pip may), its memdex is ``memdex``."""
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").write_text("#!/bin/sh\necho 'pip: Successfully installed memdex'\n")
    (venv / "bin" / "memdex").write_text(f"#!/bin/sh\n{memdex}\n")
    for name in ("python", "memdex"):
        (venv / "bin" / name).chmod(0o755)
    return venv


def _make(target: str, venv: Path, *args: str, stdin: str = "", **env: str) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("MEMDEX_", "MAKE"))} | env
    return subprocess.run(
        ["make", target, f"VENV={venv}", *args], cwd=ROOT, env=environment, input=stdin,
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_make_stdio_writes_nothing_but_protocol_to_stdout(tmp_path: Path) -> None:
    """No command echo and no first-run install output on stdout: a client parses every line as JSON-RPC."""
    venv = _venv(tmp_path, f'exec {sys.executable} -m memdex.server.cli "$@"')
    hello = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}
    result = _make("stdio", venv, stdin=json.dumps(hello) + "\n", XDG_STATE_HOME=str(tmp_path / "state"))
    assert result.returncode == 0, result.stderr
    assert "pip: Successfully installed memdex" in result.stderr  # the first run's install, on stderr
    lines = result.stdout.splitlines()
    assert lines and all(json.loads(line)["jsonrpc"] == "2.0" for line in lines), result.stdout


@pytest.mark.parametrize(
    ("args", "env", "provider"),
    [
        ((), {}, "none"),
        (("MEMDEX_EMBEDDING__PROVIDER=auto",), {}, "auto"),
        ((), {"MEMDEX_EMBEDDING__PROVIDER": "local"}, "local"),
    ],
)
def test_make_run_is_keyword_only_unless_a_provider_is_chosen(
    tmp_path: Path, args: tuple[str, ...], env: dict[str, str], provider: str
) -> None:
    """After `make test` installed llama-cpp-python, `auto` would download the default model on every start."""
    venv = _venv(tmp_path, 'echo "provider=${MEMDEX_EMBEDDING__PROVIDER:-unset} args=$*"')
    (venv / ".installed-run").touch()
    result = _make("run", venv, *args, **env)
    assert result.returncode == 0, result.stderr
    assert f"provider={provider} args=serve --workspace examples/workspace --transport http" in result.stdout


def test_make_test_names_what_failed_and_runs_the_node_clients_when_node_is_there(tmp_path: Path) -> None:
    """`make test` lists failures, errors and skips in its summary (-rfEs), and with npm on PATH installs the
    TypeScript SDK client and the mcpb CLI as locked, as CI does, so their tests run instead of being skipped.
    (`make -n -B`: the commands it would run, none run.)"""
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("MEMDEX_", "MAKE"))}
    with_node = subprocess.run(["make", "-n", "-B", "test", f"VENV={tmp_path / 'venv'}", "NPM=/usr/bin/npm"],
                               cwd=ROOT, env=environment, capture_output=True, text=True, timeout=120)
    assert with_node.returncode == 0, with_node.stderr
    lines = with_node.stdout.splitlines()
    assert "npm ci --prefix tests/ts_client --no-audit --no-fund" in lines
    assert "npm ci --prefix packaging --no-audit --no-fund" in lines
    assert lines[-1] == f"{tmp_path / 'venv'}/bin/python -m pytest -q -rfEs"
    without = subprocess.run(["make", "-n", "-B", "test", f"VENV={tmp_path / 'venv'}", "NPM="],
                             cwd=ROOT, env=environment, capture_output=True, text=True, timeout=120)
    assert without.returncode == 0 and "npm" not in without.stdout, without.stdout + without.stderr
