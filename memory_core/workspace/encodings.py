"""Memory files memdex reads but does not write: those saved as UTF-16 (for ``memdex doctor``)."""

from __future__ import annotations

import os

from ..errors import PathError
from ..textutil import is_utf16
from .files import Workspace


def utf16_files(workspace: Workspace) -> list[str]:
    """The memory files (not transcripts) that start with a UTF-16 byte-order mark, by path."""
    found = []
    for file in workspace.discover():
        if file.source != "memory":
            continue
        try:
            with os.fdopen(file.open(), "rb") as handle:
                head = handle.read(2)
        except (OSError, PathError):
            continue  # gone or unreadable since the listing
        if is_utf16(head):
            found.append(file.rel)
    return sorted(found)
