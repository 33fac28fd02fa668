"""How a folder lists a name: the one answer path of a file that many spellings open.

An answer path spells each component as its folder lists it, so every way to name a file gives
one answer path: on a file system that folds case or Unicode normalisation (macOS, Windows, ext4
casefold), ``MEMORY.md`` stored as ``memory.md`` is ``memory.md``, and a name asked for in NFC
but stored in NFD is its NFD name. Where a folder lists several such spellings of one file (hard
links, on a case-sensitive file system), the first in code-point order is its answer path: for
``MEMORY.md`` and ``memory.md`` linked together, ``MEMORY.md``.
"""

from __future__ import annotations

import functools
import os
import stat
import unicodedata
from collections.abc import Sequence
from pathlib import Path


def listed_name(folder: Path, name: str, among: Sequence[str] | None = None) -> str:
    """How ``folder`` lists the entry that ``name`` opens there.

    Its spellings are the names equal to ``name`` up to case and Unicode normalisation (restricted
    to ``among`` when given, which may also name spellings the folder does not list). The answer is
    the first listed spelling, in code-point order, that opens the same entry, else the first of
    ``among`` that does, else ``name`` (also when it opens nothing).
    """
    try:
        wanted = os.lstat(folder / name)
    except OSError:
        return name
    if (among is None or name in among) and not _may_be_spelled_otherwise(folder, name, wanted):
        return name
    try:
        listed = os.listdir(folder)
    except OSError:
        return name
    key = _fold(name)
    spellings = [*sorted(s for s in listed if _fold(s) == key), *(s for s in among or () if _fold(s) == key)]
    return next((s for s in spellings if (among is None or s in among) and _same_entry(folder / s, wanted)), name)


def _may_be_spelled_otherwise(folder: Path, name: str, wanted: os.stat_result) -> bool:
    """False when ``name`` is surely how ``folder`` lists this entry, without listing the folder.

    That is when it has no other hard link and the file system tells its spellings apart: another
    case or normalisation of ``name`` does not open it (a name without either cannot differ).
    """
    if wanted.st_nlink > 1 and not stat.S_ISDIR(wanted.st_mode):
        return True
    variants = {name.swapcase(), unicodedata.normalize("NFC", name), unicodedata.normalize("NFD", name)} - {name}
    return any(_same_entry(folder / variant, wanted) for variant in variants)


def as_listed(base: Path, parts: Sequence[str]) -> Path:
    """``base`` joined with ``parts``, each spelled as its folder lists it."""
    for part in parts:
        base = base / listed_name(base, part)
    return base


def listed_path(path: Path) -> Path:
    """An absolute path with every component spelled as its folder lists it."""
    return as_listed(Path(path.anchor), path.parts[1:])


def aliases_in(folder: Path, names: Sequence[str]) -> set[str]:
    """The names in a listing of ``folder`` that are another spelling of a listed file (see :func:`listed_name`)."""
    groups: dict[str, list[str]] = {}
    for name in names:
        groups.setdefault(_fold(name), []).append(name)
    return {n for group in groups.values() if len(group) > 1 for n in group if listed_name(folder, n) != n}


@functools.lru_cache(maxsize=1 << 16)
def _fold(name: str) -> str:
    """``name`` with case and Unicode normalisation folded away."""
    return unicodedata.normalize("NFC", unicodedata.normalize("NFD", name).casefold())


def _same_entry(path: Path, wanted: os.stat_result) -> bool:
    try:
        return os.path.samestat(os.lstat(path), wanted)
    except OSError:
        return False
