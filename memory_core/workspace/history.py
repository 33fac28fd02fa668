"""What agents wrote: one JSON line per append, edit or undo in ``.memdex/history.jsonl`` of the workspace.

The folder is hidden, so it is never indexed, watched or searched. Each line holds the write's id,
time, tool, client, file, lines, the content hash before and after, and the bytes it replaced and
wrote (an edit's pre-image), at their byte offset: enough for :func:`.editor.reverse` to undo it
while the file is as the write left it. Lines are appended under ``flock``, one ``write`` each.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ..errors import InputError, PathError
from .memory_file import append_whole, real_dir

try:
    import fcntl
except ImportError:  # Windows: one write() per line on an O_APPEND descriptor
    fcntl = None  # type: ignore[assignment]

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
STATE_DIR = ".memdex"  # memdex's own files in a workspace: history, proposals, consolidation state


@dataclass(frozen=True)
class Change:
    """One write to a memory file: at byte ``offset``, ``old`` (empty for an append) became ``new``."""

    path: str
    offset: int
    old: str
    new: str
    before: str  # content hash before the write
    after: str  # content hash after it
    start_line: int  # lines that hold ``new`` now (a deletion: the line it happened on)
    end_line: int


@dataclass(frozen=True)
class Entry:
    """A recorded write: the change plus who made it, when, and what it undid (an undo's target)."""

    id: str
    time: str
    tool: str
    client: str
    change: Change
    undoes: str | None = None

    def line(self) -> str:
        data: dict[str, Any] = {"id": self.id, "time": self.time, "tool": self.tool, "client": self.client}
        data.update(asdict(self.change))
        if self.undoes:
            data["undoes"] = self.undoes
        return json.dumps(data, ensure_ascii=False)

    @classmethod
    def parse(cls, line: str) -> Entry:
        data = json.loads(line)
        fields = {key: data[key] for key in Change.__dataclass_fields__}
        return cls(data["id"], data["time"], data["tool"], data["client"], Change(**fields), data.get("undoes"))


def state_dir(root: Path) -> Path:
    """``root``'s :data:`STATE_DIR`, made if missing; PathError when it is a symlink or not a folder."""
    folder = root / STATE_DIR
    with contextlib.suppress(FileExistsError):
        os.mkdir(folder, 0o700)
    if not real_dir(folder):
        raise PathError(f"{folder} is a symlink or not a folder; memdex keeps its history there: make it a folder")
    return folder


class History:
    """The history file of one workspace."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.path = root / STATE_DIR / "history.jsonl"

    def record(self, change: Change, tool: str, client: str, time: str, undoes: str | None = None) -> Entry:
        """Append one entry and return it."""
        entry = Entry(secrets.token_hex(4), time, tool, client, change, undoes)
        data = (entry.line() + "\n").encode("utf-8")
        fd = os.open(state_dir(self.root) / self.path.name, os.O_RDWR | os.O_APPEND | os.O_CREAT | _NOFOLLOW, 0o600)
        try:
            if fcntl is not None:
                fcntl.flock(fd, fcntl.LOCK_EX)
            if _cut_short(fd):  # a line cut by a crash: the entry starts a line of its own
                data = b"\n" + data
            append_whole(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        return entry

    def entries(self) -> list[Entry]:
        """Every entry, oldest first (a line that is not one, e.g. cut by a crash, is skipped)."""
        return list(self._parsed())

    def _parsed(self) -> Iterator[Entry]:
        try:
            fd = os.open(self.path, os.O_RDONLY | _NOFOLLOW)
        except FileNotFoundError:
            return
        with os.fdopen(fd, "rb") as handle:
            for raw in handle:
                with contextlib.suppress(ValueError, KeyError, TypeError):
                    yield Entry.parse(raw.decode("utf-8"))

    def find(self, entry_id: str) -> tuple[Entry, list[Entry]]:
        """The entry ``entry_id`` and the later entries on the same file; InputError when there is none."""
        entries = self.entries()
        for i, entry in enumerate(entries):
            if entry.id == entry_id.strip():
                return entry, [e for e in entries[i + 1 :] if e.change.path == entry.change.path]
        raise InputError(f"no history entry {entry_id!r}; `memdex history` lists them")


def undo_refusal(entry: Entry, later: list[Entry], now: str) -> str:
    """Why ``entry`` cannot be undone now that its file has hash ``now``: an undo already undid it, later
    writes (``later``: the entries after it on that file) changed the file, or someone outside memdex did."""
    path = entry.change.path
    undone = next((e for e in later if e.undoes == entry.id and e.change.after == now), None)
    if undone is not None:
        return f"{entry.id} is already undone (by {undone.id}); `memdex undo {undone.id}` redoes it"
    newest = next((e for e in reversed(later) if e.change.after == now), None)
    if newest is not None:
        return (
            f"{path} changed since {entry.id}: later writes ({', '.join(e.id for e in later)}) changed it; "
            f"undo them first, newest first ({newest.id})"
        )
    return (
        f"{path} changed since {entry.id} outside memdex (its hash is {now}, {entry.id} left it at "
        f"{entry.change.after}); undo by hand, its pre-image is in `memdex history`"
    )


def _cut_short(fd: int) -> bool:
    """Whether the file open on ``fd`` ends inside a line (not in a newline)."""
    size = os.fstat(fd).st_size
    if not size:
        return False
    os.lseek(fd, size - 1, os.SEEK_SET)
    return os.read(fd, 1) != b"\n"
