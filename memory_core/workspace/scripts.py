"""The scripts a memory is written in, sampled from its files (for ``memdex doctor``'s model check)."""

from __future__ import annotations

import os
from collections import Counter

from ..errors import PathError
from ..text.scripts import letters_by_script
from ..textutil import decode_text
from .files import Workspace

SAMPLE_BYTES = 4_000_000  # enough to know the language, little enough to read in a moment


def memory_letters(workspace: Workspace, max_bytes: int = SAMPLE_BYTES) -> Counter[str]:
    """Letters by script in the workspace's memory files (not transcripts), at most ``max_bytes`` read."""
    counts: Counter[str] = Counter()
    left = max_bytes
    for file in workspace.discover():
        if file.source != "memory" or left <= 0:
            continue
        try:
            with os.fdopen(file.open(), "rb") as handle:
                data = handle.read(left)
        except (OSError, PathError):
            continue  # gone or unreadable since the listing: the sample does without it
        left -= len(data)
        counts += letters_by_script(decode_text(data))
    return counts
