"""The `memdex` command reports problems it can explain as one line, with exit code 2."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def test_an_unusable_index_path_is_one_line_and_exit_code_2(tmp_path: Path) -> None:
    """An index under a file (not a folder) is explained without a traceback."""
    workspace = tmp_path / "ws"
    (workspace / "memory").mkdir(parents=True)
    (tmp_path / "state").write_text("a file where a folder should be\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMDEX_")}
    env["MEMDEX_EMBEDDING__PROVIDER"] = "none"
    command = [sys.executable, "-m", "memdex.server.cli", "status", "--workspace", str(workspace)]
    result = subprocess.run(
        [*command, "--index", str(tmp_path / "state" / "idx.sqlite")],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith("memdex: ") and "Traceback" not in result.stderr
    assert str(tmp_path / "state") in result.stderr and "--index" in result.stderr
