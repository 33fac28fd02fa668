"""How a rebuilt index replaces the live one, safely for every process that has it open.

A rebuild is built in a shadow file beside the index and copied *into* the live file with SQLite's
backup API, as one write transaction on the live database: every connection, in every process,
sees either the old index or the new one, and nothing is ever renamed or deleted under them. A
kill at any point leaves the live index as it was, plus at most a stale shadow file.

One rebuild or reset runs at a time per index, across processes: it holds an advisory lock on
``<index>.lock``. A rebuild's last catch-up and install, and a reset, hold ``<index>.gate``
exclusively, which every write to the live index, and every open (which may create or migrate it),
holds shared: no edit made by another process can fall between the catch-up and the install and be
overwritten, and a reset looks at the file again when no other process is at work on it. Opening an index sweeps the shadow files that no rebuild holds any more
(``.rebuild-*``, and the ``.tmp-*``/``.backup-*`` files earlier versions could leave behind).
"""

from __future__ import annotations

import logging
import os
import time
import uuid
from pathlib import Path
from typing import Any

try:
    import fcntl
except ImportError:  # Windows: no advisory lock; one process per index is assumed there
    fcntl = None  # type: ignore[assignment]

logger = logging.getLogger(__name__)

COMPANIONS = ("-wal", "-shm", "-journal")
_SQLITE_BUSY, _SQLITE_LOCKED = 5, 6
SHADOW_MARKERS = (".rebuild-", ".tmp-", ".backup-")


def shadow_path(index: Path) -> Path:
    """A fresh sibling path to build a replacement index in."""
    return index.with_name(f"{index.name}.rebuild-{uuid.uuid4().hex[:8]}")


def remove(path: Path) -> None:
    """Delete a database file and its companions, if present."""
    for suffix in ("", *COMPANIONS):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


class FileLock:
    """An advisory ``flock`` on one file, shared or exclusive; released by ``release`` or by the process dying."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None

    def acquire(self, *, wait: bool, shared: bool = False) -> bool:
        """Take the lock; False, without waiting, when ``wait`` is off and another holder has it."""
        if fcntl is None:
            return True
        if self._fd is not None:
            raise RuntimeError(f"{self.path} is already locked by this object")
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
        mode = fcntl.LOCK_SH if shared else fcntl.LOCK_EX
        try:
            fcntl.flock(fd, mode if wait else mode | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd
        return True

    @property
    def held(self) -> bool:
        return self._fd is not None

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing releases the lock
            self._fd = None


class RebuildLock(FileLock):
    """The lock one index's rebuilds and resets take, across processes (``<index>.lock``)."""

    def __init__(self, index: Path) -> None:
        super().__init__(Path(f"{index}.lock"))


class WriteGate(FileLock):
    """``<index>.gate``: every write to the live index and every open hold it shared; installing a rebuild
    and a reset hold it exclusively, so that no other process writes meanwhile."""

    def __init__(self, index: Path) -> None:
        super().__init__(Path(f"{index}.gate"))


def sweep(index: Path) -> list[Path]:
    """Remove shadow files left by killed rebuilds; returns what was removed.

    Only when no rebuild runs (the lock is free): a running rebuild's shadow is never touched.
    """
    lock = RebuildLock(index)
    if not lock.acquire(wait=False):
        return []
    try:
        stale = sorted(
            {
                index.with_name(name)
                for entry in _siblings(index)
                for name in [_without_companion(entry)]
                if any(name[len(index.name) :].startswith(m) for m in SHADOW_MARKERS)
            }
        )
        for path in stale:
            remove(path)
    finally:
        lock.release()
    if stale:
        logger.info("removed %d stale index file(s) left by an interrupted rebuild: %s",
                    len(stale), ", ".join(p.name for p in stale))  # fmt: skip
    return stale


def _siblings(index: Path) -> list[str]:
    """Names of the files beside ``index`` that start with its name and a dot (no glob: names may hold ``[``)."""
    prefix = f"{index.name}."
    try:
        return [entry.name for entry in os.scandir(index.parent) if entry.name.startswith(prefix)]
    except FileNotFoundError:
        return []


def _without_companion(name: str) -> str:
    for suffix in COMPANIONS:
        if name.endswith(suffix):
            return name.removesuffix(suffix)
    return name


def copy_database(source: Any, target: Any, *, wait: float = 0.0) -> None:
    """Copy every page of connection ``source``'s database over ``target``'s, in one transaction.

    The driver's backup would retry a locked target for ever; here a target that another connection
    keeps locked past the busy timeout (and then ``wait`` more seconds) raises the driver's "database
    is locked" error instead.
    """
    deadline = time.monotonic() + wait

    def progress(status: int, remaining: int, total: int) -> None:
        if status in (_SQLITE_BUSY, _SQLITE_LOCKED) and time.monotonic() >= deadline:
            raise target.OperationalError("database is locked")

    source.backup(target, pages=-1, progress=progress)


def install(shadow: Any, live: Any, *, wait: float = 60.0) -> None:
    """Copy the complete database of connection ``shadow`` over the live one, in one transaction.

    Every memdex writer is held off by then (the write gate); a foreign connection that keeps the
    live index locked is waited for up to ``wait`` seconds, so a finished rebuild is not thrown away.
    """
    copy_database(shadow, live, wait=wait)
