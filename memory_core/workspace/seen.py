"""What this process last saw of a memory file's bytes: their SHA-256 state and ``\\n`` count.

An append to a long daily log would otherwise hash and count the whole file twice (the appender
counts its lines, the indexer proves the indexed bytes unchanged). A :class:`Seen` is valid for the
file exactly as its :data:`Stamp` (device, inode, size, mtime, ctime) describes it: any write,
truncation, replacement or ``utime`` by a person or another process changes the stamp (the ctime at
least), and a file whose stamp differs is read whole again. It is extended only by an append made
under the file's lock to a file still as seen, so the bytes it covers are the file's first
``size`` bytes, and it keeps the digests of the sizes it grew through, for the indexed state an
append is compared with.

A stamp cannot tell a same-size rewrite that lands within the filesystem's timestamp tick of
memdex's own write; such a file is re-hashed by the next full sync, which never uses what is seen.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

Stamp = tuple[int, int, int, int, int]  # (device, inode, size, mtime_ns, ctime_ns)
EARLIER = 32  # digests of the sizes a file grew through, for an index a few appends behind
FILES = 256  # files remembered; the least recently seen is forgotten first

_guard = threading.Lock()
_seen: dict[Path, Seen] = {}


@dataclass(frozen=True)
class Seen:
    """A file's first ``size`` bytes: their running hash (never updated in place) and newline count;
    ``digests`` maps this size and earlier ones to (hex digest, newlines) of the bytes up to there."""

    stamp: Stamp
    sha: hashlib._Hash
    newlines: int
    digests: dict[int, tuple[str, int]]

    @property
    def size(self) -> int:
        return self.stamp[2]

    @property
    def digest(self) -> str:
        return self.digests[self.size][0]

    def extended(self, data: bytes, stamp: Stamp) -> Seen:
        """This file with ``data`` appended, now at ``stamp``."""
        sha = self.sha.copy()
        sha.update(data)
        return make(stamp, sha, self.newlines + data.count(b"\n"), self.digests)


def stamp_of(fd: int) -> Stamp:
    """The stamp of an open file."""
    st = os.fstat(fd)
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns


def hashed(blocks: Iterable[bytes], stamp: Stamp) -> Seen:
    """A file whose whole content, at ``stamp``, is ``blocks`` joined."""
    sha, newlines = hashlib.sha256(), 0
    for block in blocks:
        sha.update(block)
        newlines += block.count(b"\n")
    return make(stamp, sha, newlines)


def recall(path: Path, stamp: Stamp | None = None) -> Seen | None:
    """What was seen of ``path`` if the file is still exactly as then (at ``stamp``), else None; without
    ``stamp``, what was last seen, whatever the file's state now."""
    with _guard:
        seen = _seen.get(path)
    return seen if seen is not None and (stamp is None or seen.stamp == stamp) else None


def remember(path: Path, seen: Seen) -> None:
    """Remember ``seen`` for ``path`` (an append, under the file's lock: the newest state)."""
    with _guard:
        _remember(path, seen)


def remember_instead(path: Path, seen: Seen, earlier: Seen | None) -> None:
    """Remember ``seen`` for ``path`` if ``earlier`` is still what is remembered (a read may be overtaken
    by an append, whose state is newer)."""
    with _guard:
        if _seen.get(path) is earlier:
            _remember(path, seen)


def _remember(path: Path, seen: Seen) -> None:
    _seen.pop(path, None)
    _seen[path] = seen
    if len(_seen) > FILES:
        del _seen[next(iter(_seen))]


def forget(path: Path) -> None:
    with _guard:
        _seen.pop(path, None)


def make(stamp: Stamp, sha: hashlib._Hash, newlines: int, earlier: dict[int, tuple[str, int]] | None = None) -> Seen:
    """A file whose first ``stamp`` size bytes hash to ``sha`` and hold ``newlines``; ``earlier``: the
    digests of its earlier sizes (the latest few are kept)."""
    digests = dict(list(earlier.items())[-(EARLIER - 1) :]) if earlier else {}
    digests[stamp[2]] = (sha.hexdigest(), newlines)
    return Seen(stamp, sha, newlines, digests)
