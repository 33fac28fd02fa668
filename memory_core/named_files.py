"""The files a query names: ``2026-01-15``, ``MEMORY``, ``atlas.md``, a folder such as ``projects``.

A query that names a file wants that file: its chunks rank first. Names are matched literally so
that ordinary words do not trigger it: a date (``YYYY-MM-DD``) matches the daily logs it dates, in
any case; a word (not a bare number: "148" is a count more often than a name) matches a file's
name (with or without its extension) or a folder only when written as the path writes it (``MEMORY`` names MEMORY.md, "memory" in a sentence does not); a
name that would select more than half of the files (the ``memory/`` folder itself) names nothing.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

_DATE = re.compile(r"(?<!\d)(\d{4}-\d{2}-\d{2})(?!\d)")
_NAME = re.compile(r"[\w.-]+(?:/[\w.-]+)*", re.UNICODE)
_EXTENSIONS = (".md", ".jsonl")
MIN_NAME = 3  # shorter words ("a", "to") never name a file


def named_files(query: str, paths: Sequence[str]) -> list[str]:
    """The paths among ``paths`` that ``query`` names, in ``paths`` order (empty: it names none)."""
    words = {word.strip(".-") for word in _NAME.findall(query)}
    names = set(_DATE.findall(query)) | {w for w in words if len(w) >= MIN_NAME and not w.isdigit()}
    named: set[str] = set()
    for name in names:
        chosen = {path for path in paths if _names(name, path)}
        if len(chosen) * 2 <= len(paths):  # a name for most files (the memory/ folder) names none
            named |= chosen
    return [path for path in paths if path in named]


def _names(word: str, path: str) -> bool:
    """True when ``word`` dates the file, or is, as written, its name (with or without extension),
    one of its folders, or a tail of its path."""
    if _DATE.fullmatch(word):
        return word in path.rsplit("/", 1)[-1]
    if "/" in word:
        return path == word or path.endswith("/" + word) or path.startswith(word.rstrip("/") + "/")
    *folders, name = path.split("/")
    stem = next((name[: -len(ext)] for ext in _EXTENSIONS if name.endswith(ext)), name)
    return word in (name, stem) or word in folders
