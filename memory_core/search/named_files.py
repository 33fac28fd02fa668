"""The files a query names: ``2026-01-15``, ``MEMORY``, ``atlas.md``, a folder written as a path, ``projects/``.

A query that names a file wants that file: its chunks rank first. Names are matched literally so
that ordinary words do not trigger it: a date (``YYYY-MM-DD``) matches the daily logs it dates; a
word (not a bare number: "148" is a count more often than a name) matches a file's name, with or
without its extension, only when written as the path writes it (``MEMORY`` names MEMORY.md, "memory"
in a sentence does not); a word with a slash matches a path's tail or a folder (``projects/``,
``memory/projects``). A folder's bare name names nothing: "memory", "notes" or "projects" is an ordinary
word more often than a folder, and every query that held it put that folder's notes, on whatever
topic, before its answer. A name that would select more than half of the files names nothing.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence
from functools import cached_property

_DATE = re.compile(r"(?<!\d)(\d{4}-\d{2}-\d{2})(?!\d)")
_NAME = re.compile(r"[\w.-]+(?:/[\w.-]+)*/?")  # a trailing slash marks a folder
_EXTENSIONS = (".md", ".jsonl")
MIN_NAME = 3  # shorter words ("a", "to") never name a file


def iso_dates(text: str) -> list[str]:
    """The ISO dates (``YYYY-MM-DD``) ``text`` writes, each once, in order."""
    return list(dict.fromkeys(_DATE.findall(text)))


class NameIndex:
    """The names of a set of files (file names, stems, folders, dates), for lookups per query.

    Built once per file set: a query then costs a dictionary lookup per word, not a pass over
    every path (50k files took seconds that way, for each word with a slash).
    """

    def __init__(self, paths: Sequence[str]) -> None:
        self.paths = list(paths)
        self._names: defaultdict[str, set[str]] = defaultdict(set)
        days: set[str] = set()
        for path in self.paths:
            name = path.rsplit("/", 1)[-1]
            stem = next((name[: -len(ext)] for ext in _EXTENSIONS if name.endswith(ext)), name)
            dates = _DATE.findall(name)
            days.update(dates)
            for key in {name, stem, *dates}:
                self._names[key].add(path)
        self.log_days = frozenset(days)  # the dates the files' names hold: the days with a daily log

    def naming(self, query: str) -> tuple[list[str], list[str]]:
        """The paths ``query`` names, in path order, and the names that chose them, as the query writes them."""
        words = {word.strip(".-") for word in _NAME.findall(query)}
        names = set(iso_dates(query)) | {w for w in words if len(w.strip("/")) >= MIN_NAME and not w.isdigit()}
        named: set[str] = set()
        naming: list[str] = []
        for name in sorted(names):
            chosen = self._tails(name) if "/" in name else self._names.get(name, set())
            if chosen and len(chosen) * 2 <= len(self.paths):  # a name for most files (the memory/ folder) names none
                named |= chosen
                naming.append(name)
        return ([path for path in self.paths if path in named], naming) if named else ([], [])

    def _tails(self, word: str) -> set[str]:
        """Paths that are ``word``, end with ``/word`` or lie under a folder ``word`` (``projects/`` or
        ``memory/projects``: the folder's path or its last components)."""
        ends, under = self._tail_index
        word = word.rstrip("/")
        return ends.get(word, set()) | under.get(word, set())

    @cached_property
    def _tail_index(self) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
        """Each path under its last two or more components (``p/x.md``, ``memory/p/x.md``) and under each
        folder it lies in, by the folder's path and its tails (``memory``, ``memory/p``, ``p``); built at the
        first word with a slash."""
        ends: defaultdict[str, set[str]] = defaultdict(set)
        under: defaultdict[str, set[str]] = defaultdict(set)
        for path in self.paths:
            parts = path.split("/")
            for i in range(1, len(parts)):
                ends["/".join(parts[i - 1 :])].add(path)
                for j in range(i):
                    under["/".join(parts[j:i])].add(path)
        return ends, under

