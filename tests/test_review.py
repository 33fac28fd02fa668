"""Review mode (edits.review): agent edits of MEMORY.md wait as proposals; `memdex review` applies or rejects them."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from mcp import Client

from memdex.memory_core import MemoryEngine
from memdex.server import build_server

MakeEngine = Callable[..., MemoryEngine]
Write = Callable[[str, str], Path]

MEMORY = "# Memory\n\n- The staging server is alpha.example.com\n- Deploys go out on Tuesdays\n"


async def _propose(engine: MemoryEngine, old: str, new: str) -> dict:
    async with Client(build_server(engine)) as client:
        got = (await client.call_tool("memory_get", {"path": "MEMORY.md"})).structured_content
        result = await client.call_tool(
            "memory_edit", {"path": "MEMORY.md", "oldText": old, "newText": new, "expectedHash": got["hash"]}
        )
    assert not result.is_error, result.content[0].text
    return result.structured_content


async def test_agent_edits_of_memory_md_wait_for_review_and_apply_one_after_the_other(
    make_engine: MakeEngine, write: Write
) -> None:
    memory = write("MEMORY.md", MEMORY)
    notes = write("memory/notes.md", "- draft\n")
    first = await _propose(make_engine(edits={"review": True}), "alpha", "beta")
    second = await _propose(make_engine(edits={"review": True}), "Tuesdays", "Thursdays")
    assert first["pending"] is True and "pending review: nothing was written yet" in first["note"]
    assert memory.read_text(encoding="utf-8") == MEMORY  # nothing written until a person applies it
    async with make_engine(edits={"review": True}) as engine:
        await engine.edit("memory/notes.md", "draft", "final", by_agent=True)  # only MEMORY.md is reviewed
        assert notes.read_text(encoding="utf-8") == "- final\n"
        pending = await engine.pending_proposals()
        assert [p.id for p in pending] == [first["id"], second["id"]]
        assert await engine.proposal_diff(pending[0]) == (  # whole lines, in the file as it is
            "--- a/MEMORY.md\n+++ b/MEMORY.md\n@@ line 3 @@\n"
            "-- The staging server is alpha.example.com\n+- The staging server is beta.example.com"
        )
        assert pending[0].diff(None).endswith("@@ line 3 @@\n-alpha\n+beta")  # the file is gone or changed
        outcomes = await engine.review(["all"], [])
        assert [(i, getattr(o, "path", o)) for i, o in outcomes] == [(first["id"], "MEMORY.md"), (second["id"], "MEMORY.md")]
        assert memory.read_text(encoding="utf-8") == MEMORY.replace("alpha", "beta").replace("Tuesdays", "Thursdays")
        assert await engine.pending_proposals() == []
        clients = [e.client for e in await engine.history_entries("MEMORY.md")]
        assert clients == ["mcp (reviewed)", "mcp (reviewed)"]


async def test_a_proposal_is_refused_at_apply_time_when_the_file_changed_and_can_be_rejected(
    make_engine: MakeEngine, write: Write
) -> None:
    memory = write("MEMORY.md", MEMORY)
    proposal = await _propose(make_engine(edits={"review": True}), "alpha", "beta")
    by_hand = MEMORY + "- Added by hand\n"
    memory.write_text(by_hand, encoding="utf-8")
    async with make_engine(edits={"review": True}) as engine:
        [(_, refused)] = await engine.review([proposal["id"]], [])
        assert isinstance(refused, str) and "MEMORY.md changed since you read it" in refused
        assert f"(proposal {proposal['id']}: reject it, or ask the agent to propose it again)" in refused
        assert [p.id for p in await engine.pending_proposals()] == [proposal["id"]]
        assert await engine.review([], [proposal["id"]]) == [(proposal["id"], "rejected")]
        assert await engine.pending_proposals() == []
    assert memory.read_text(encoding="utf-8") == by_hand


def _memdex(workspace: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMDEX_")} | {
        "MEMDEX_EMBEDDING__PROVIDER": "none", "MEMDEX_EDITS__REVIEW": "true",
    }
    command = [sys.executable, "-m", "memdex.server.cli", *args, "--workspace", str(workspace),
               "--index", str(workspace.parent / "cli.sqlite")]
    return subprocess.run(command, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)


async def test_memdex_review_shows_the_diff_and_applies_on_the_command_line(make_engine: MakeEngine, workspace: Path, write: Write) -> None:
    memory = write("MEMORY.md", MEMORY)
    proposal = await _propose(make_engine(edits={"review": True}), "- Deploys go out on Tuesdays\n", "")
    shown = _memdex(workspace, "review")
    assert shown.returncode == 0, shown.stderr
    assert f"proposal {proposal['id']} by mcp" in shown.stdout and "\n-- Deploys go out on Tuesdays\n" in shown.stdout + "\n"
    assert memory.read_text(encoding="utf-8") == MEMORY
    applied = _memdex(workspace, "review", "--apply", proposal["id"])
    assert applied.returncode == 0 and f"{proposal['id']}: applied to MEMORY.md" in applied.stdout, applied.stderr
    assert "Tuesdays" not in memory.read_text(encoding="utf-8")
    again = _memdex(workspace, "review", "--apply", proposal["id"])
    assert again.returncode == 2 and f"no pending proposal '{proposal['id']}'" in again.stderr
