"""Edits of memory files: replace one exact piece of text, atomically, or reverse a recorded write.

Text is matched as UTF-8 bytes, so every other byte of the file (invalid UTF-8 included) stays as it
was. In a file with CRLF line endings the model's ``\\n`` lines (memory_get reads lines without their
``\\r``) match as ``\\r\\n``, and the new text is written with ``\\r\\n`` too. The file is read and
replaced under its write lock (:mod:`.locking`), through :meth:`MemoryFile.replace`, keeping its mode.
"""

from __future__ import annotations

import fnmatch
import os
import re
import stat
from collections.abc import Sequence

from ..errors import InputError
from ..limits import MAX_EDIT_BYTES
from ..textutil import is_unicode, is_utf16
from .files import DAILY_LOG
from .history import Change, Entry
from .locking import locked
from .memory_file import HASH_CHARS, MemoryFile, content_hash, utf16_refusal

_FRONT_MATTER = re.compile(rb"\A(?:\xef\xbb\xbf)?---\r?\n(.*?)^---[ \t]*\r?$", re.DOTALL | re.MULTILINE)
_LOCK_MARKER = re.compile(rb"^memdex[ \t]*:[ \t]*locked[ \t]*\r?$", re.MULTILINE)


def check_editable(rel: str, *, daily_logs: bool, locked_paths: Sequence[str]) -> None:
    """InputError when the settings keep ``rel`` from being edited: a daily log, or a locked path."""
    if not daily_logs and DAILY_LOG.search(rel):
        raise InputError(
            f"{rel} is a daily log, which is append-only (edits.daily_logs = false): add a correction with "
            "memory_append, or edit MEMORY.md"
        )
    if any(fnmatch.fnmatchcase(rel, pattern) for pattern in locked_paths):
        raise InputError(f"{rel} is locked (edits.locked); memdex does not change it: tell the user what to change")


def replace_text(file: MemoryFile, old: str, new: str, expected: str | None, *, write: bool = True) -> Change:
    """Replace the one occurrence of ``old`` in ``file`` by ``new``; ``expected`` is the hash it was read at.

    ``write=False`` checks the same and returns the change without making it (a proposal for review).
    """
    _check_text(old, "old text")
    _check_text(new, "new text", empty=True)
    if old == new:
        raise InputError("old and new text are the same; nothing to change")
    with locked(file, os.O_RDONLY) as fd:
        data, mode = _read_all(fd)
        if is_utf16(data):
            raise utf16_refusal(file.rel)
        now = content_hash(data)
        if expected is not None and expected.strip().lower()[:HASH_CHARS] != now:  # a full SHA-256 hex is fine too
            raise InputError(
                f"{file.rel} changed since you read it (hash {expected.strip()[:HASH_CHARS]!r}, now {now!r}); read it "
                "again with memory_get and retry with the new hash"
            )
        if _locked_by_front_matter(data):
            raise InputError(f"{file.rel} is locked ('memdex: locked' in its front matter); tell the user what to change")
        needle, replacement = _as_in_file(data, old, new)
        count = data.count(needle)
        if count == 0:
            raise InputError(
                f"the old text is not in {file.rel}; copy it exactly from memory_get (whole lines, same spaces)"
            )
        if count > 1:
            raise InputError(
                f"the old text is in {file.rel} {count} times; add neighbouring lines to it so it matches once"
            )
        return _write(file, data, mode, data.index(needle), needle, replacement, write=write)


def reverse(file: MemoryFile, entry: Entry) -> Change:
    """Undo ``entry``'s change of ``file``; InputError (with the file's hash now) when the file changed since."""
    change = entry.change
    with locked(file, os.O_RDONLY) as fd:
        data, mode = _read_all(fd)
        now = content_hash(data)
        written = change.new.encode("utf-8")
        if now != change.after or data[change.offset : change.offset + len(written)] != written:
            raise ChangedSince(now)
        return _write(file, data, mode, change.offset, written, change.old.encode("utf-8"))


class ChangedSince(InputError):
    """The file is no longer as a recorded write left it; ``now`` is its hash."""

    def __init__(self, now: str) -> None:
        super().__init__(f"the file changed since (its hash is {now})")
        self.now = now


def _locked_by_front_matter(data: bytes) -> bool:
    match = _FRONT_MATTER.match(data)
    return match is not None and _LOCK_MARKER.search(match.group(1)) is not None


def _check_text(text: str, name: str, *, empty: bool = False) -> None:
    if not isinstance(text, str) or (not empty and not text):
        raise InputError(f"{name} is empty; pass the exact text to replace, as memory_get shows it")
    if "\x00" in text:
        raise InputError(f"{name} contains a NUL byte; pass plain text")
    if not is_unicode(text):
        raise InputError(f"{name} is not Unicode text (bytes of another encoding, or half a character); pass plain text")
    size = len(text.encode("utf-8"))
    if size > MAX_EDIT_BYTES:
        raise InputError(f"{name} is {size} bytes; one edit takes at most {MAX_EDIT_BYTES} each. Edit in parts")


def _as_in_file(data: bytes, old: str, new: str) -> tuple[bytes, bytes]:
    """``old`` and ``new`` as bytes with the file's line endings: CRLF when the file has them and ``old``
    as given (``\\n``) is not found."""
    needle, replacement = old.encode("utf-8"), new.encode("utf-8")
    if b"\r\n" in data and b"\n" in needle and needle not in data:
        crlf = re.compile(rb"\r?\n")
        return crlf.sub(b"\r\n", needle), crlf.sub(b"\r\n", replacement)
    return needle, replacement


def _read_all(fd: int) -> tuple[bytes, int]:
    """The whole file behind ``fd`` and its permission bits."""
    info = os.fstat(fd)
    chunks = []
    while block := os.read(fd, 1 << 20):
        chunks.append(block)
    return b"".join(chunks), stat.S_IMODE(info.st_mode)


def _write(file: MemoryFile, data: bytes, mode: int, offset: int, old: bytes, new: bytes, *, write: bool = True) -> Change:
    """Write ``data`` with ``old`` at ``offset`` replaced by ``new`` (unless not ``write``); the Change that records it."""
    result = data[:offset] + new + data[offset + len(old) :]
    if write:
        file.replace(result, mode)
    start = data.count(b"\n", 0, offset) + 1
    end = start + max(0, new.count(b"\n") - (1 if new.endswith(b"\n") else 0))
    return Change(
        path=file.rel, offset=offset, old=old.decode("utf-8"), new=new.decode("utf-8"), before=content_hash(data),
        after=content_hash(result), start_line=start, end_line=end,
    )
