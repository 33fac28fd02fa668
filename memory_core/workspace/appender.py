"""Append-only writes to memory files, safe under concurrent callers.

Each append opens the file with :meth:`MemoryFile.open` (missing folders made one at a time, never
through a symlink) under its write lock (:mod:`.locking`, shared with edits), writes the whole entry
with one ``write`` on an ``O_APPEND`` descriptor and ``fsync``s it. Existing text is never rewritten;
it is read a block at a time to count its lines (``\\n`` bytes) and hash it for the history, unless the
file is as this process's last append left it (same inode, size and mtime), whose count and running
hash are remembered; then only its last :data:`TAIL_BYTES` are read.

An entry identical to one of the last :data:`RECENT_ENTRIES` entries of the file is not written
again, so a model that repeats itself during a flush does not duplicate notes, while the same
short note later on ("Tests pass.") is kept. The file's entries are its paragraphs (runs of
non-blank lines), a lone ``## heading`` joined to the paragraph after it, compared without
trailing whitespace; an entry of several paragraphs must match as many in a row.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

from ..errors import InputError
from ..limits import MAX_APPEND_BYTES, MAX_HEADING_CHARS
from ..models import AppendReceipt
from ..textutil import split_lines
from .history import Change
from .locking import locked
from .memory_file import HASH_CHARS, MemoryFile

RECENT_ENTRIES = 3
TAIL_BYTES = 4 * MAX_APPEND_BYTES  # the last few entries, whatever their size
_BLOCK = 1 << 20

# (dev, inode, size, mtime) -> its newlines and the SHA-256 of its bytes so far
_counted: dict[Path, tuple[tuple[int, int, int, int], int, Any]] = {}


def format_entry(text: str, heading: str | None) -> str:
    """Validate an append and return the entry exactly as it will be written (ending in a newline)."""
    if not text.strip():
        raise InputError("text is empty; pass the note to store")
    if "\x00" in text or (heading and "\x00" in heading):
        raise InputError("text contains a NUL byte; pass plain text")
    size = len(text.encode("utf-8"))
    if size > MAX_APPEND_BYTES:
        raise InputError(f"text is {size} bytes; one append takes at most {MAX_APPEND_BYTES}. Split it into parts")
    body = "\n".join(line.rstrip() for line in split_lines(text.strip("\n"))).rstrip()
    if heading is not None:
        heading = heading.strip().lstrip("#").strip()
        if "\n" in heading or len(heading) > MAX_HEADING_CHARS:
            raise InputError(f"heading must be one line of at most {MAX_HEADING_CHARS} characters")
        if heading:
            body = f"## {heading}\n\n{body}"
    return body + "\n"


def append_entry(file: MemoryFile, entry: str, *, title: str | None = None) -> AppendReceipt:
    """Append ``entry`` (from :func:`format_entry`) to ``file``; ``title`` heads a newly created file.

    A repeat of a recent entry writes nothing, and its receipt gives the lines of the earlier copy.
    """
    return append_change(file, entry, title=title)[0]


def append_change(file: MemoryFile, entry: str, *, title: str | None = None) -> tuple[AppendReceipt, Change | None]:
    """:func:`append_entry`, with the change it made for the history (None: a repeat, nothing written)."""
    with locked(file, os.O_RDWR | os.O_APPEND | getattr(os, "O_BINARY", 0), create=True) as fd:
        identity = _identity(fd)
        size = identity[2]
        tail_start = max(0, size - TAIL_BYTES)
        known = _counted.get(file.path)
        if known is not None and known[0] == identity:
            newlines, digest = known[1], known[2].copy()
        else:
            newlines, digest = _scan(fd, size)
        tail = _read(fd, tail_start, size)
        before = digest.hexdigest()[:HASH_CHARS]
        earlier = _recent_copy(entry, tail, newlines, cut=tail_start > 0)
        if earlier is not None:
            receipt = AppendReceipt(
                path=file.rel, start_line=earlier[0], end_line=earlier[1], bytes_written=0, created=False,
                duplicate=True, hash=before,
            )
            return receipt, None
        prefix = _separator(tail, title)
        data = (prefix + entry).encode("utf-8")
        _write_all(fd, data)
        os.fsync(fd)
        digest.update(data)
        _counted[file.path] = (_identity(fd), newlines + data.count(b"\n"), digest.copy())
    after = digest.hexdigest()[:HASH_CHARS]
    start = newlines + prefix.count("\n") + 1  # the file before the entry ends in a newline (or is empty)
    end = start + entry.count("\n") - 1
    receipt = AppendReceipt(
        path=file.rel, start_line=start, end_line=end, bytes_written=len(data), created=size == 0, hash=after
    )
    change = Change(file.rel, size, "", prefix + entry, before, after, start, end)
    return receipt, change


class _Entry(NamedTuple):
    lines: tuple[str, ...]
    first: int
    last: int


def _recent_copy(entry: str, tail: bytes, newlines: int, *, cut: bool) -> tuple[int, int] | None:
    """Where ``entry`` stands among the last :data:`RECENT_ENTRIES` entries of a file ending in ``tail``.

    ``newlines`` counts the whole file's; ``cut`` says the tail starts inside the file, so its first
    line and first entry may be partial and are left out. Returns the copy's first and last line.
    """
    skip = tail.find(b"\n") + 1 if cut else 0
    lines = split_lines(tail[skip:].decode("utf-8", errors="replace"))
    first_line = newlines - tail[skip:].count(b"\n") + 1
    entries = _entries(lines, first_line)[1 if cut else 0 :]
    wanted = [e.lines for e in _entries(split_lines(entry), 1)]
    count = len(wanted)
    latest = len(entries) - count
    for i in range(latest, max(-1, latest - RECENT_ENTRIES), -1):
        if [e.lines for e in entries[i : i + count]] == wanted:
            return entries[i].first, entries[i + count - 1].last
    return None


def _entries(lines: Sequence[str], first: int) -> list[_Entry]:
    """The paragraphs of ``lines`` (numbered from ``first``), a lone ``## heading`` joined to the next one."""
    found: list[_Entry] = []
    current: list[str] = []
    start = end = first
    for number, raw in enumerate(lines, first):
        line = raw.rstrip()
        if line:
            start = start if current else number
            current.append(line)
            end = number
        elif len(current) == 1 and current[0].startswith("## "):
            current.append("")
        elif current:
            found.append(_Entry(tuple(current[: end - start + 1]), start, end))
            current = []
    if current:
        found.append(_Entry(tuple(current[: end - start + 1]), start, end))
    return found


def _separator(existing: bytes, title: str | None) -> str:
    """What goes between the file's end (``existing``: its last bytes) and the new entry: a title or a blank line."""
    if not existing:
        return f"{title}\n\n" if title else ""
    if existing.endswith(b"\n\n"):
        return ""
    return "\n" if existing.endswith(b"\n") else "\n\n"


def _identity(fd: int) -> tuple[int, int, int, int]:
    """(device, inode, size, mtime) of an open file: what a remembered line count is valid for."""
    st = os.fstat(fd)
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns


def _read(fd: int, start: int, end: int) -> bytes:
    """Bytes ``start``…``end`` of the file (fewer if it is shorter)."""
    os.lseek(fd, start, os.SEEK_SET)
    chunks = []
    while start < end and (block := os.read(fd, min(_BLOCK, end - start))):
        chunks.append(block)
        start += len(block)
    return b"".join(chunks)


def _scan(fd: int, end: int) -> tuple[int, Any]:
    """How many ``\\n`` bytes the file holds before offset ``end``, and the SHA-256 of those bytes, a block at a time."""
    digest = hashlib.sha256()
    newlines = 0
    for start in range(0, end, _BLOCK):
        block = _read(fd, start, min(start + _BLOCK, end))
        newlines += block.count(b"\n")
        digest.update(block)
    return newlines, digest


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]
