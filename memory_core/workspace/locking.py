"""One writer at a time per memory file: a thread lock in this process, ``flock`` between processes.

An edit replaces a file by renaming a new one over it, so a writer that waited for the lock may hold a
descriptor of the file as it was; :func:`locked` then opens the path again, until the descriptor it
holds the lock on is the file the path names. Appends and edits both go through it.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .memory_file import MemoryFile

try:
    import fcntl
except ImportError:  # Windows: the thread lock alone serialises writers in this process
    fcntl = None  # type: ignore[assignment]

_locks: dict[Path, threading.Lock] = {}
_locks_guard = threading.Lock()


@contextmanager
def locked(file: MemoryFile, flags: int, *, create: bool = False) -> Iterator[int]:
    """A descriptor of ``file`` (opened with ``flags`` through :meth:`MemoryFile.open`), held under its
    write lock for the block; it is closed, and the lock released, after."""
    with _locks_guard:
        lock = _locks.setdefault(file.path, threading.Lock())
    with lock:
        while True:
            fd = file.open(flags, create=create)
            try:
                if fcntl is None or _current(file, fd):
                    break
            except BaseException:
                os.close(fd)
                raise
            os.close(fd)  # an edit renamed another file over this one while we waited: lock that one
        try:
            yield fd
        finally:
            os.close(fd)  # closing releases the flock


def _current(file: MemoryFile, fd: int) -> bool:
    """Lock ``fd`` between processes; True when it is still the file at ``file``'s path."""
    fcntl.flock(fd, fcntl.LOCK_EX)
    held = os.fstat(fd)
    try:
        now = os.stat(file.path, follow_symlinks=False)
    except FileNotFoundError:
        return False
    return (held.st_dev, held.st_ino) == (now.st_dev, now.st_ino)
