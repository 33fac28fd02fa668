"""Append-only writes to memory files, safe under concurrent callers.

Each append opens the file with :meth:`MemoryFile.open` (missing folders made one at a time, never
through a symlink) under its write lock (:mod:`.locking`, shared with edits), writes the whole entry
with one ``write`` on an ``O_APPEND`` descriptor and ``fsync``s it. Existing text is never rewritten:
only its last :data:`TAIL_BYTES` are read, unless the file is not as this process last saw it
(:mod:`.seen`); then it is read whole, a block at a time, to count its lines and hash it (for the
history). The append extends what is seen, so the indexer that follows proves the old bytes unchanged
and counts the lines without reading them again.

An entry identical to one of the last :data:`RECENT_ENTRIES` entries of the file is not written
again, so a model that repeats itself during a flush does not duplicate notes, while the same
short note later on ("Tests pass.") is kept. The file's entries are its paragraphs (runs of
non-blank lines), a lone ``## heading`` joined to the paragraph after it, compared without
trailing whitespace; an entry of several paragraphs must match as many in a row.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from typing import NamedTuple

from ..errors import InputError
from ..limits import MAX_APPEND_BYTES, MAX_HEADING_CHARS
from ..models import AppendReceipt
from ..textutil import decode_text, is_unicode, is_utf16, split_lines
from . import seen
from .history import Change
from .locking import locked
from .memory_file import HASH_CHARS, MemoryFile, append_whole, utf16_refusal

RECENT_ENTRIES = 3
TAIL_BYTES = 4 * MAX_APPEND_BYTES  # the last few entries, whatever their size
_BLOCK = 1 << 20



def format_entry(text: str, heading: str | None) -> str:
    """Validate an append and return the entry exactly as it will be written (ending in a newline)."""
    if not text.strip():
        raise InputError("text is empty; pass the note to store")
    if "\x00" in text or (heading and "\x00" in heading):
        raise InputError("text contains a NUL byte; pass plain text")
    if not is_unicode(text) or (heading and not is_unicode(heading)):
        raise InputError(f"{'text' if not is_unicode(text) else 'heading'} is not Unicode text (bytes of another "
                         "encoding, or half a character); pass plain text")
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
        stamp = seen.stamp_of(fd)
        size = stamp[2]
        tail_start = max(0, size - TAIL_BYTES)
        tail = _read(fd, tail_start, size)
        if is_utf16(tail if tail_start == 0 else _read(fd, 0, 2)):
            raise utf16_refusal(file.rel)
        before = seen.recall(file.path, stamp) or seen.hashed(_blocks(fd, size), stamp)
        newlines = before.newlines
        earlier = _recent_copy(entry, tail, newlines, cut=tail_start > 0)
        if earlier is not None:
            receipt = AppendReceipt(
                path=file.rel, start_line=earlier[0], end_line=earlier[1], bytes_written=0, created=False,
                duplicate=True, hash=before.digest[:HASH_CHARS],
            )
            return receipt, None
        prefix = _separator(tail, title)
        written = _in_line_endings(prefix + entry, tail)
        data = written.encode("utf-8")
        unchanged = seen.stamp_of(fd) == stamp  # no other writer since it was read
        try:
            append_whole(fd, data)
        except OSError as exc:  # nothing of the entry stays: say which file could not take it
            raise OSError(exc.errno, exc.strerror, file.rel) from exc
        now = before.extended(data, seen.stamp_of(fd))  # before the fsync, which changes no stamp
        if unchanged and now.size == size + len(data):
            seen.remember(file.path, now)
        else:
            seen.forget(file.path)
        os.fsync(fd)
    after = now.digest[:HASH_CHARS]
    start = newlines + prefix.count("\n") + 1  # the file before the entry ends in a newline (or is empty)
    end = start + entry.count("\n") - 1
    receipt = AppendReceipt(
        path=file.rel, start_line=start, end_line=end, bytes_written=len(data), created=size == 0, hash=after
    )
    change = Change(file.rel, size, "", written, before.digest[:HASH_CHARS], after, start, end)
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
    text = decode_text(tail[skip:])
    wanted = [e.lines for e in _entries(split_lines(entry), 1)]
    if wanted[0][0] not in text:  # a copy holds the entry's first line: no need to parse the tail
        return None
    lines = split_lines(text)
    first_line = newlines - tail[skip:].count(b"\n") + 1
    entries = _entries(lines, first_line)[1 if cut else 0 :]
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
    if existing.endswith((b"\n\n", b"\n\r\n")):
        return ""
    return "\n" if existing.endswith(b"\n") else "\n\n"


def _in_line_endings(text: str, existing: bytes) -> str:
    """``text`` (lines ending in ``\\n``) with the line endings of the file that ends in ``existing``: ``\\r\\n`` when
    most of its lines end so (a file kept on Windows), so that an append does not mix the two."""
    return text.replace("\n", "\r\n") if 2 * existing.count(b"\r\n") > existing.count(b"\n") else text


def _read(fd: int, start: int, end: int) -> bytes:
    """Bytes ``start``…``end`` of the file (fewer if it is shorter)."""
    os.lseek(fd, start, os.SEEK_SET)
    chunks = []
    while start < end and (block := os.read(fd, min(_BLOCK, end - start))):
        chunks.append(block)
        start += len(block)
    return b"".join(chunks)


def _blocks(fd: int, end: int) -> Iterator[bytes]:
    """The file's bytes before offset ``end``, a block at a time."""
    for start in range(0, end, _BLOCK):
        yield _read(fd, start, min(start + _BLOCK, end))
