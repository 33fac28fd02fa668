"""The files a query names: ``2026-01-15``, ``MEMORY``, ``atlas.md``, a folder such as ``projects``.

A query that names a file wants that file: its chunks rank first. Names are matched literally so
that ordinary words do not trigger it: a date (``YYYY-MM-DD``) matches the daily logs it dates; a
word (not a bare number: "148" is a count more often than a name) matches a file's name, with or
without its extension, or a folder, only when written as the path writes it (``MEMORY`` names
MEMORY.md, "memory" in a sentence does not); a word with a slash matches a path's tail. A name that
would select more than half of the files (the ``memory/`` folder itself) names nothing.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence
from functools import cached_property

_DATE = re.compile(r"(?<!\d)(\d{4}-\d{2}-\d{2})(?!\d)")
_NAME = re.compile(r"[\w.-]+(?:/[\w.-]+)*")
_EXTENSIONS = (".md", ".jsonl")
MIN_NAME = 3  # shorter words ("a", "to") never name a file


class NameIndex:
    """The names of a set of files (file names, stems, folders, dates), for lookups per query.

    Built once per file set: a query then costs a dictionary lookup per word, not a pass over
    every path (50k files took seconds that way, for each word with a slash).
    """

    def __init__(self, paths: Sequence[str]) -> None:
        self.paths = list(paths)
        self._names: defaultdict[str, set[str]] = defaultdict(set)
        for path in self.paths:
            *folders, name = path.split("/")
            stem = next((name[: -len(ext)] for ext in _EXTENSIONS if name.endswith(ext)), name)
            for key in {name, stem, *folders, *_DATE.findall(name)}:
                self._names[key].add(path)

    def named(self, query: str) -> list[str]:
        """The paths ``query`` names, in path order (empty: it names none)."""
        words = {word.strip(".-") for word in _NAME.findall(query)}
        names = set(_DATE.findall(query)) | {w for w in words if len(w) >= MIN_NAME and not w.isdigit()}
        named: set[str] = set()
        for name in names:
            chosen = self._tails(name) if "/" in name else self._names.get(name, set())
            if len(chosen) * 2 <= len(self.paths):  # a name for most files (the memory/ folder) names none
                named |= chosen
        return [path for path in self.paths if path in named] if named else []

    def _tails(self, word: str) -> set[str]:
        """Paths that are ``word``, end with ``/word`` or lie under the folder ``word``."""
        ends, under = self._tail_index
        return ends.get(word, set()) | under.get(word.rstrip("/"), set())

    @cached_property
    def _tail_index(self) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
        """Each path under its last two or more components (``p/x.md``, ``memory/p/x.md``) and under each
        folder it lies in (``memory``, ``memory/p``); built at the first word with a slash."""
        ends: defaultdict[str, set[str]] = defaultdict(set)
        under: defaultdict[str, set[str]] = defaultdict(set)
        for path in self.paths:
            parts = path.split("/")
            for i in range(1, len(parts)):
                ends["/".join(parts[i - 1 :])].add(path)
                under["/".join(parts[:i])].add(path)
        return ends, under


def named_files(query: str, paths: Sequence[str]) -> list[str]:
    """The paths among ``paths`` that ``query`` names (one-off; keep a :class:`NameIndex` to repeat)."""
    return NameIndex(paths).named(query)
