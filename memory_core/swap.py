"""Replace an index file with a freshly built one, WAL and SHM companions included."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

SUFFIXES = ("", "-wal", "-shm")


def temp_path(target: Path) -> Path:
    """A sibling path to build a replacement index in."""
    return target.with_name(f"{target.name}.tmp-{uuid.uuid4().hex[:8]}")


def remove(path: Path) -> None:
    """Delete an index file and its companions, if present."""
    for suffix in (*SUFFIXES, "-journal"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


def swap(target: Path, built: Path) -> None:
    """Move ``built`` into place of ``target``; on failure ``target`` is restored as it was.

    The caller has closed every writer of both files and checkpointed ``built``. The old main file and
    its ``-wal``/``-shm`` are moved aside first, so the new file can never be opened with the old WAL.
    """
    backup = target.with_name(f"{target.name}.backup-{uuid.uuid4().hex[:8]}")
    moved: list[str] = []
    try:
        for suffix in SUFFIXES:
            if os.path.exists(f"{target}{suffix}"):
                os.replace(f"{target}{suffix}", f"{backup}{suffix}")
                moved.append(suffix)
        for suffix in SUFFIXES[1:]:
            Path(f"{built}{suffix}").unlink(missing_ok=True)
        os.replace(built, target)
    except OSError:
        for suffix in moved:
            os.replace(f"{backup}{suffix}", f"{target}{suffix}")
        raise
    remove(backup)
