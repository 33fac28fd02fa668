"""Search filters: which chunks a search may return, decided before either side takes its top candidates.

A filter keeps daily logs of a date range, the files under a path prefix, or one source (Markdown
memory or session transcripts). It becomes one SQL condition over the ``path`` and ``source`` columns
of the chunks, so the keyword and the vector side both rank the allowed chunks only: a filtered
search returns as many hits as exist, never the few survivors of an unfiltered top list.

Dates are those of daily logs, a file named ``YYYY-MM-DD….md`` in a folder named ``memory``
(:data:`~memdex.memory_core.workspace.files.DAILY_LOG`, the rule temporal decay also reads); every other file is undated and is left out
when a date bound is set. Both stores read the date from the path (no column holds it): a range of
the path index finds the logs of the top ``memory/`` folder, nearly all of them, and a test of the
last component the few in deeper ``memory`` folders. :meth:`SearchFilter.sql` writes the condition
for either store; a :class:`Dialect` holds the little each spells its own way.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from dataclasses import dataclass
from typing import Literal

from ..errors import InputError
from ..textutil import shown
from ..workspace.files import DAILY_LOG, SESSIONS_PREFIX, check_path_size

Source = Literal["memory", "sessions"]
SOURCES: tuple[Source, ...] = ("memory", "sessions")

_ISO_DAY = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}\Z")
_FIRST_DAY, _LAST_DAY = dt.date.min.isoformat(), dt.date.max.isoformat()


@dataclass(frozen=True)
class Dialect:
    """How one database spells the parts of a filter's condition that SQL does not share."""

    mark: str  # a parameter's placeholder
    top_log: str  # a path already between ``memory/<first day>`` and past ``memory/<last day>`` is a top-level daily log
    nested_log: str  # a daily log in a deeper ``memory`` folder, dated between two parameters (first and last day)
    in_paths: str  # a path among those of one parameter, a JSON array (one parameter, however many paths)


# SQLite: the rule in few function calls per row (each costs about 0.1 µs, and a search may test
# every chunk). A daily log directly in the top ``memory/`` folder, nearly all of them, lies in a range
# of the path index; ``GLOB date(d) || '*'`` holds only when ``d`` is a real date. A log in a deeper
# ``memory`` folder (``x/memory/2026-01-31.md``) is found through its last component, which is
# computed only for paths containing ``/memory/``.
_SQLITE_TOP_LOG = "path GLOB ('memory/' || date(substr(path, 8, 10)) || '*.md') AND path NOT GLOB 'memory/*/*'"
_FOLDER = "rtrim(path, replace(path, '/', ''))"  # the path up to and including its last '/'
_NAME = f"substr(path, length({_FOLDER}) + 1)"
_SQLITE_NESTED_LOG = (
    f"path GLOB '*/memory/*' AND {_FOLDER} GLOB '*/memory/' AND substr({_NAME}, 1, 10) BETWEEN ? AND ? "
    f"AND {_NAME} GLOB (date(substr({_NAME}, 1, 10)) || '*.md')"
)
SQLITE = Dialect("?", _SQLITE_TOP_LOG, _SQLITE_NESTED_LOG, "path IN (SELECT value FROM json_each(?))")


def _pg_real_day(day: str) -> str:
    """PostgreSQL: true when ``day`` (an expression) is a real date ``YYYY-MM-DD``, without the error a cast
    of ``2026-02-30`` raises: the first of its month moved on by its day keeps that month and day."""
    return (
        f"CASE WHEN {day} ~ '^[0-9]{{4}}-(0[1-9]|1[0-2])-[0-9]{{2}}$' AND {day} >= '0001' THEN to_char(make_date("
        f"substr({day}, 1, 4)::int, substr({day}, 6, 2)::int, 1) + (substr({day}, 9, 2)::int - 1), 'YYYY-MM-DD') = {day} END"
    )


# PostgreSQL: regular expressions; a literal % is written %% (psycopg's placeholders).
_PG_NESTED_DAY = r"substring(path from '/memory/([0-9]{4}-[0-9]{2}-[0-9]{2})[^/]*\.md$')"
POSTGRES = Dialect(
    "%s",
    # Only a day from 29 can be past its month's end: the full test runs for those alone.
    r"path ~ '^memory/[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])[^/]*\.md$' "
    f"AND (substr(path, 16, 2) < '29' OR {_pg_real_day('substr(path, 8, 10)')})",
    f"path LIKE '%%/memory/%%' AND {_PG_NESTED_DAY} BETWEEN %s AND %s AND {_pg_real_day(_PG_NESTED_DAY)}",
    "path IN (SELECT jsonb_array_elements_text(%s::jsonb))",
)

# Transcripts' answer paths all start with ``sessions/``: the path index narrows the source test to them.
_IN_SESSIONS = f"path >= '{SESSIONS_PREFIX}/' AND path < '{SESSIONS_PREFIX}0'"


def log_date(path: str) -> dt.date | None:
    """The date of the daily log at ``path``; None for an undated file (or an impossible date)."""
    match = DAILY_LOG.search(path)
    if match is None:
        return None
    try:
        return dt.date.fromisoformat(match[1])
    except ValueError:
        return None


@dataclass(frozen=True)
class SearchFilter:
    """Which chunks a search may return; every bound left None allows everything.

    ``after``/``before`` are inclusive and keep daily logs only; ``path_prefix`` is a normalised
    workspace-relative folder or file, matched by whole components; ``source`` keeps one source;
    ``paths`` keeps those answer paths only (the files a query names: set by the searcher, not a caller).
    """

    after: dt.date | None = None
    before: dt.date | None = None
    path_prefix: str | None = None
    source: Source | None = None
    paths: tuple[str, ...] | None = None

    @classmethod
    def parse(
        cls,
        after: str | None = None,
        before: str | None = None,
        path_prefix: str | None = None,
        source: str | None = None,
    ) -> SearchFilter:
        """A filter from a caller's arguments (blank counts as not given); InputError naming the bad one."""
        first, last = _day("after", after), _day("before", before)
        if first and last and first > last:
            raise InputError(f"after ({first}) is later than before ({last}); swap them")
        return cls(first, last, _prefix(path_prefix), _source(source))

    @property
    def empty(self) -> bool:
        return (
            self.after is None and self.before is None and self.path_prefix is None and self.source is None
            and self.paths is None
        )  # fmt: skip

    def prefix_bounds(self) -> list[str]:
        """The path prefix as (the file itself, the first and the bound past its folder's range): '0'
        follows '/', so ``prefix/ <= path < prefix0`` is everything under the folder."""
        prefix = self.path_prefix or ""
        return [prefix, f"{prefix}/", f"{prefix}0"]

    def sql(self, dialect: Dialect) -> tuple[str, tuple[str, ...]]:
        """(condition over the chunks' ``path`` and ``source``, its parameters) in ``dialect``; ``"TRUE"`` when
        the filter is empty.

        Every test but the source's reads the path alone (SQLite runs it against ``chunks INDEXED BY
        chunks_path``: the index alone), and the source is read only for paths under ``sessions/``.
        """
        mark = dialect.mark
        parts: list[str] = []
        params: list[str] = []
        if self.path_prefix is not None:
            parts.append(f"(path = {mark} OR (path >= {mark} AND path < {mark}))")
            params += self.prefix_bounds()
        if self.after is not None or self.before is not None:
            first = self.after.isoformat() if self.after else _FIRST_DAY
            last = self.before.isoformat() if self.before else _LAST_DAY
            after_last = last[:-1] + chr(ord(last[-1]) + 1)  # the first 10-character string above ``last``
            parts.append(f"((path >= {mark} AND path < {mark} AND {dialect.top_log}) OR ({dialect.nested_log}))")
            params += [f"memory/{first}", f"memory/{after_last}", first, last]
        if self.source == "sessions":
            parts.append(f"({_IN_SESSIONS} AND source = 'sessions')")
        elif self.source == "memory":
            parts.append(f"(NOT ({_IN_SESSIONS}) OR source = 'memory')")
        if self.paths is not None:
            parts.append(f"({dialect.in_paths})")
            params.append(json.dumps(self.paths))
        return " AND ".join(parts) or "TRUE", tuple(params)


def _day(name: str, raw: str | None) -> dt.date | None:
    text = (raw or "").strip()
    if not text:
        return None
    try:
        if _ISO_DAY.match(text):
            return dt.date.fromisoformat(text)
    except ValueError:
        pass
    raise InputError(f"{name} must be a date like 2026-01-31 (got {shown(raw)})")


def _prefix(raw: str | None) -> str | None:
    """``raw`` as an answer-path prefix: no ``./``, empty or trailing ``/``; ``..`` only leading
    (extra folders outside the workspace are answered as ``../…``)."""
    text = (raw or "").strip()
    check_path_size(text, "pathPrefix")
    if text.startswith(("/", "\\", "~")) or re.match(r"[A-Za-z]:", text):
        raise InputError(f"pathPrefix must be relative to the workspace, like memory/projects/ (got {shown(raw)})")
    parts = [part for part in text.split("/") if part not in ("", ".")]
    climbs = next((i for i, part in enumerate(parts) if part != ".."), len(parts))
    if ".." in parts[climbs:]:
        raise InputError(f"pathPrefix may not contain '..' after a folder name, like memory/projects/ (got {shown(raw)})")
    return "/".join(parts) or None


def _source(raw: str | None) -> Source | None:
    text = (raw or "").strip().lower()
    if not text:
        return None
    if text not in SOURCES:
        raise InputError(f"source must be 'memory' or 'sessions' (got {shown(raw)})")
    return text


def prefix_end(prefix: str) -> str:
    """The first string past every string that begins with ``prefix`` (not empty) in code-point order, which is
    SQLite's and PostgreSQL's "C" order of text: ``prefix <= s < prefix_end(prefix)`` holds exactly those."""
    return prefix[:-1] + chr(ord(prefix[-1]) + 1)
