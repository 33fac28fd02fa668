"""Append-only writes to memory files, safe under concurrent callers.

Each append takes a per-file lock (a thread lock, plus ``flock`` between processes where the OS has
it), writes the whole entry with one ``write`` on an ``O_APPEND`` descriptor and ``fsync``s it.
Existing text is never rewritten. An entry whose exact lines already stand whole in the file is not
written again, so a model that repeats itself during a flush does not duplicate notes.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .errors import InputError
from .models import AppendReceipt
from .textutil import split_lines
from .workspace import MemoryFile

try:
    import fcntl
except ImportError:  # Windows: the thread lock alone serialises writers in this process
    fcntl = None  # type: ignore[assignment]

MAX_APPEND_BYTES = 16 * 1024
MAX_HEADING_CHARS = 200

_locks: dict[Path, threading.Lock] = {}
_locks_guard = threading.Lock()


@contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    with _locks_guard:
        lock = _locks.setdefault(path, threading.Lock())
    with lock:
        yield


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
    """Append ``entry`` (from :func:`format_entry`) to ``file``; ``title`` heads a newly created file."""
    file.path.parent.mkdir(parents=True, exist_ok=True)
    with _file_lock(file.path):
        flags = os.O_RDWR | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)
        fd = os.open(file.path, flags, 0o644)
        try:
            if fcntl is not None:
                fcntl.flock(fd, fcntl.LOCK_EX)
            existing = _read_all(fd)
            created = not existing
            if _already_there(entry, existing):
                lines = len(split_lines(existing.decode("utf-8", errors="replace")))
                return AppendReceipt(
                    path=file.rel, start_line=lines, end_line=lines, bytes_written=0, created=False, duplicate=True
                )
            prefix = _separator(existing, title)
            data = (prefix + entry).encode("utf-8")
            _write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)  # closing releases the flock
    before = len(split_lines((existing + prefix.encode("utf-8")).decode("utf-8", errors="replace")))
    after = before + len(split_lines(entry))
    return AppendReceipt(
        path=file.rel, start_line=before + 1, end_line=after, bytes_written=len(data), created=created
    )


def _already_there(entry: str, existing: bytes) -> bool:
    """True when the entry's lines already stand, whole and in order, in the file."""
    block = "\n".join(split_lines(entry.strip()))
    text = "\n".join(split_lines(existing.decode("utf-8", errors="replace")))
    return f"\n{block}\n" in f"\n{text}\n"


def _separator(existing: bytes, title: str | None) -> str:
    """What goes between the file's current end and the new entry: a title or a blank line."""
    if not existing:
        return f"{title}\n\n" if title else ""
    if existing.endswith(b"\n\n"):
        return ""
    return "\n" if existing.endswith(b"\n") else "\n\n"


def _read_all(fd: int) -> bytes:
    os.lseek(fd, 0, os.SEEK_SET)
    chunks = []
    while block := os.read(fd, 1 << 16):
        chunks.append(block)
    return b"".join(chunks)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]
