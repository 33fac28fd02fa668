"""What a consolidation run gets: the daily logs not yet consolidated, and MEMORY.md with its hash.

``.memdex/consolidated.json`` remembers, per daily log, how many bytes were handed to a run and their
hash; the next run starts after them (the whole log again if it was rewritten rather than grown). A run
takes the oldest pending logs first, within :data:`~memdex.memory_core.limits.CONSOLIDATE_CHARS` bytes; the
rest wait for the next one.
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from ..limits import CONSOLIDATE_CHARS
from ..textutil import decode_text, is_utf16
from .files import DAILY_DIR, DAILY_LOG, Workspace
from .history import STATE_DIR, state_dir
from .memory_file import content_hash

STATE_FILE = "consolidated.json"


@dataclass(frozen=True)
class LogPart:
    """The part of a daily log a run gets: from ``first_line`` (after what earlier runs had) to ``size`` bytes."""

    path: str
    first_line: int
    text: str
    size: int
    hash: str  # of the log's first ``size`` bytes


@dataclass(frozen=True)
class Material:
    """A consolidation run's input."""

    logs: list[LogPart]
    memory_path: str
    memory_text: str
    memory_hash: str
    left_for_later: list[str] = field(default_factory=list)


def take(workspace: Workspace) -> Material:
    """:func:`gather` the material of a run and :func:`mark` its logs as handed over."""
    material = gather(workspace)
    mark(workspace, material)
    return material


def gather(workspace: Workspace) -> Material:
    """The pending parts of the daily logs (oldest first, within the budget) and MEMORY.md as it is now."""
    done = _load(workspace.root)
    logs: list[LogPart] = []
    later: list[str] = []
    used = 0
    for file in sorted(workspace.discover(), key=lambda f: (_day(f.rel), f.rel)):
        if not file.rel.startswith(f"{DAILY_DIR}/") or not DAILY_LOG.search(file.rel):
            continue
        data = file.read_bytes()
        if is_utf16(data):  # counted in UTF-8 bytes, which split into lines at b"\n" as the rest does
            data = decode_text(data).encode("utf-8")
        start = _consolidated_bytes(data, done.get(file.rel))
        part = data[start:]
        if not part.strip():
            continue
        if used + len(part) > CONSOLIDATE_CHARS:
            if logs:
                later.append(file.rel)
                continue
            cut = part.rfind(b"\n", 0, CONSOLIDATE_CHARS) + 1  # a log larger than the budget: its first lines now
            part = part[: cut or CONSOLIDATE_CHARS]
        used += len(part)
        end = start + len(part)
        text = decode_text(part)
        logs.append(LogPart(file.rel, data[:start].count(b"\n") + 1, text, end, content_hash(data[:end])))
    memory = workspace.long_term_file()
    data = memory.read_bytes() if os.path.lexists(memory.path) else b""
    return Material(logs, memory.rel, decode_text(data), content_hash(data), later)


def mark(workspace: Workspace, material: Material) -> None:
    """Record that ``material``'s logs were handed to a run, so the next one starts after them."""
    if not material.logs:
        return
    done = _load(workspace.root)
    done.update({log.path: {"size": log.size, "hash": log.hash} for log in material.logs})
    folder = state_dir(workspace.root)
    temp = folder / f".{STATE_FILE}.{os.getpid()}.tmp"
    temp.write_text(json.dumps(done, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(temp, folder / STATE_FILE)


def _day(rel: str) -> str:
    match = DAILY_LOG.search(rel)
    return match.group(1) if match else ""


def _consolidated_bytes(data: bytes, done: dict[str, object] | None) -> int:
    """How many leading bytes of a log earlier runs had: 0 when none did, or the log changed before that point."""
    if not done:
        return 0
    size = done.get("size")
    if not isinstance(size, int) or size > len(data) or content_hash(data[:size]) != done.get("hash"):
        return 0
    return size


def _load(root: Path) -> dict[str, dict[str, object]]:
    with contextlib.suppress(OSError, ValueError):
        data = json.loads((root / STATE_DIR / STATE_FILE).read_text(encoding="utf-8"))
        if isinstance(data, dict):
            return {k: v for k, v in data.items() if isinstance(v, dict)}
    return {}
