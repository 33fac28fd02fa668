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


class Listings:
    """Folder listings grouped by folded name, each kept while its folder's mtime stays the same.

    Spelling many names of one big folder (a burst of watcher events on a case-folding file system,
    where every name needs the listing) then lists it once, not once per name. An entry made in the
    same clock tick as the listing can be missed, so keep one only for a batch of lookups.
    """

    def __init__(self) -> None:
        self._folders: dict[Path, tuple[int, dict[str, list[str]]]] = {}

    def spellings(self, folder: Path, key: str) -> list[str]:
        """The names ``folder`` lists whose fold is ``key``, in code-point order; OSError if it cannot be listed."""
        mtime = os.stat(folder).st_mtime_ns
        listing = self._folders.get(folder)
        if listing is None or listing[0] != mtime:
            groups: dict[str, list[str]] = {}
            for name in sorted(os.listdir(folder)):
                groups.setdefault(_fold(name), []).append(name)
            listing = self._folders[folder] = (mtime, groups)
        return listing[1].get(key, [])


def listed_name(folder: Path, name: str, among: Sequence[str] | None = None, listings: Listings | None = None) -> str:
    """How ``folder`` lists the entry that ``name`` opens there.

    Its spellings are the names equal to ``name`` up to case and Unicode normalisation (restricted
    to ``among`` when given, which may also name spellings the folder does not list). The answer is
    the first listed spelling, in code-point order, that opens the same entry, else the first of
    ``among`` that does, else ``name`` (also when it opens nothing). ``listings`` may hold the
    folder's listing already.
    """
    return _listed(folder, name, among, listings) or name


def _listed(folder: Path, name: str, among: Sequence[str] | None, listings: Listings | None) -> str | None:
    """:func:`listed_name`, or None when ``name`` opens nothing in ``folder``."""
    try:
        wanted = os.lstat(folder / name)
    except OSError:
        return None
    if (among is None or name in among) and not _may_be_spelled_otherwise(folder, name, wanted):
        return name
    key = _fold(name)
    try:
        listed = listings.spellings(folder, key) if listings else sorted(s for s in os.listdir(folder) if _fold(s) == key)
    except OSError:
        return name
    spellings = [*listed, *(s for s in among or () if _fold(s) == key)]
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


def as_listed(base: Path, parts: Sequence[str], listings: Listings | None = None) -> Path:
    """``base`` joined with ``parts``, each spelled as its folder lists it.

    Below the first part that does not exist nothing does, so the rest is joined as given, at once:
    spelling each would cost a path as long as the whole, for each of them (quadratic in the parts).
    """
    for i, part in enumerate(parts):
        listed = _listed(base, part, None, listings)
        if listed is None:
            return base.joinpath(*parts[i:])
        base = base / listed
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
