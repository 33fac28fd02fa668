"""Consolidation: the memory_consolidate prompt and `memdex hook consolidate` hand over the daily logs not yet
consolidated and MEMORY.md with its hash, and remember what they handed over."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from mcp import Client

from memdex.memory_core import MemoryEngine
from memdex.memory_core.limits import CONSOLIDATE_CHARS
from memdex.server import build_server

MakeEngine = Callable[..., MemoryEngine]
Write = Callable[[str, str], Path]

MEMORY = "# Memory\n\n- The staging server is alpha.example.com\n"


async def _prompt(engine: MemoryEngine) -> str:
    async with Client(build_server(engine)) as client:
        prompt = await client.get_prompt("memory_consolidate")
    [message] = prompt.messages
    assert message.role == "user"
    return message.content.text


async def test_the_prompt_hands_over_each_log_once_and_then_only_what_was_added(
    make_engine: MakeEngine, workspace: Path, write: Write
) -> None:
    memory = write("MEMORY.md", MEMORY)
    write("memory/2026-11-18.md", "# 2026-11-18\n\n- Ana prefers tea\n")
    log = write("memory/2026-11-19.md", "# 2026-11-19\n\n- Staging moved to gamma.example.com\n")
    write("memory/notes.md", "- not a daily log\n")
    first = await _prompt(make_engine())
    digest = hashlib.sha256(memory.read_bytes()).hexdigest()[:16]
    assert f"## MEMORY.md (hash {digest}, " in first and "- The staging server is alpha.example.com" in first
    assert "memory_edit" in first and "newest wins" in first and "9,000 characters" in first
    assert first.index("## memory/2026-11-18.md\n\n# 2026-11-18\n\n- Ana prefers tea") < first.index("## memory/2026-11-19.md")
    assert "not a daily log" not in first

    second = await _prompt(make_engine())
    assert "## memory/2026-11-1" not in second and "There are no daily logs to consolidate" in second

    with log.open("a", encoding="utf-8") as handle:
        handle.write("- Deploys moved to Thursdays\n")
    third = await _prompt(make_engine())
    assert "## memory/2026-11-19.md, from line 4: earlier lines were consolidated before\n\n- Deploys moved to Thursdays" in third
    assert "gamma.example.com" not in third and "2026-11-18" not in third

    log.write_text("# 2026-11-19\n\n- Rewritten by hand\n", encoding="utf-8")  # not a growth: the whole log again
    assert "## memory/2026-11-19.md\n\n# 2026-11-19\n\n- Rewritten by hand" in await _prompt(make_engine())


async def test_a_utf16_log_is_handed_over_as_text_and_then_only_what_was_added(make_engine: MakeEngine, workspace: Path) -> None:
    """A daily log saved by Windows PowerShell 5 (UTF-16): its text, not its bytes read as UTF-8, and after it grew
    only its new lines."""
    log = workspace / "memory" / "2026-11-19.md"
    log.write_bytes("# 2026-11-19\r\n\r\n- \u4e0a\u6d77 office moved to floor 3\r\n".encode("utf-16"))  # 上: bytes 0a 4e
    first = await _prompt(make_engine())
    with log.open("ab") as handle:
        handle.write("- Deploys moved to Thursdays\r\n".encode("utf-16-le"))
    second = await _prompt(make_engine())
    assert "## memory/2026-11-19.md\n\n# 2026-11-19\r\n\r\n- \u4e0a\u6d77 office moved to floor 3" in first
    assert "## memory/2026-11-19.md, from line 4: earlier lines were consolidated before\n\n- Deploys moved to Thursdays" in second
    assert "floor 3" not in second


async def test_logs_over_the_budget_wait_for_the_next_run(make_engine: MakeEngine, write: Write) -> None:
    half = "".join(f"- fact {i:05d} worth keeping\n" for i in range(CONSOLIDATE_CHARS // 2 // 26 + 10))
    for day in ("2026-11-01", "2026-11-02", "2026-11-03"):
        write(f"memory/{day}.md", f"# {day}\n\n{half}")
    first = await _prompt(make_engine())
    assert "## memory/2026-11-01.md" in first and "## memory/2026-11-02.md" not in first
    assert "Left for the next run (over the size of one run): memory/2026-11-02.md, memory/2026-11-03.md." in first
    second = await _prompt(make_engine())
    assert "## memory/2026-11-02.md" in second and "## memory/2026-11-01.md" not in second


async def test_a_read_only_server_offers_no_consolidation(make_engine: MakeEngine, write: Write) -> None:
    write("MEMORY.md", MEMORY)
    async with Client(build_server(make_engine(read_only=True))) as client:
        names = [p.name for p in (await client.list_prompts()).prompts]
    assert names == ["memory_flush"]


def test_the_consolidate_hook_prints_the_prompt_once_per_log(workspace: Path, write: Write) -> None:
    write("MEMORY.md", MEMORY)
    write("memory/2026-11-18.md", "# 2026-11-18\n\n- Ana prefers tea\n")
    command = [sys.executable, "-m", "memdex.server.cli", "hook", "consolidate", "--workspace", str(workspace)]
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMDEX_")}
    runs = [subprocess.run(command, input="{}", capture_output=True, text=True, timeout=60, env=env) for _ in range(2)]
    assert [(r.returncode, r.stderr) for r in runs] == [(0, ""), (0, "")]
    assert "- Ana prefers tea" in runs[0].stdout and runs[0].stdout.startswith("Memory consolidation:")
    assert "- Ana prefers tea" not in runs[1].stdout and "There are no daily logs to consolidate" in runs[1].stdout
    assert (workspace / ".memdex" / "consolidated.json").is_file()
