"""Which files are memory, and the path policy every read and write goes through.

Memory files are ``MEMORY.md`` (or ``memory.md``) at the workspace root, every ``*.md`` under
``memory/``, and the configured extra paths (folders, searched recursively, or single ``.md``
files). Hidden entries, ``node_modules`` and symlinks below a root are never followed, so a path
can neither climb out of the memory files nor be redirected elsewhere. Paths in answers are
workspace-relative with forward slashes (extra folders outside the workspace start with ``../``).

Session transcripts, when configured, are the ``*.jsonl`` files under the sessions folder (searched
recursively, by the same rules). Their answer paths are virtual: ``sessions/<path inside that
folder>``, whatever the folder's place on disk, and their source is ``"sessions"``.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import stat
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from .errors import PathError

logger = logging.getLogger(__name__)

LONG_TERM_NAMES = ("MEMORY.md", "memory.md")
DAILY_DIR = "memory"
SESSIONS_PREFIX = "sessions"  # first component of every transcript's answer path
TRANSCRIPT_SUFFIX = ".jsonl"
SKIPPED_DIRS = frozenset({"node_modules", "__pycache__"})


@dataclass(frozen=True)
class MemoryFile:
    """A memory file: its answer path (``rel``) and where it is on disk."""

    rel: str
    path: Path
    source: str = "memory"


def _skipped(name: str) -> bool:
    return name.startswith(".") or name in SKIPPED_DIRS


class Workspace:
    """The memory files of one workspace folder."""

    def __init__(self, root: Path, extra_paths: Sequence[str] = (), sessions_dir: Path | None = None) -> None:
        self.root = root.expanduser().resolve()
        self.extra_roots = [r for r in (self._extra_root(p) for p in extra_paths) if r is not None]
        self.sessions_dir = self._sessions_root(sessions_dir) if sessions_dir is not None else None

    def _sessions_root(self, raw: Path) -> Path:
        path = Path(os.path.expanduser(raw))
        path = (path if path.is_absolute() else self.root / path).resolve()  # the user chose this folder
        if not _real_dir(path):
            logger.warning("sessions folder %s does not exist (yet); transcripts are indexed once it does", path)
        return path

    def _extra_root(self, raw: str) -> Path | None:
        path = Path(os.path.expanduser(raw))
        path = (path if path.is_absolute() else self.root / path).resolve()  # the user chose this root
        if path.is_dir() or (path.is_file() and path.suffix == ".md"):
            return path
        logger.warning("extra path %s is neither a folder nor a .md file; skipping it", raw)
        return None

    # Discovery ----------------------------------------------------------------------------------

    def discover(self) -> list[MemoryFile]:
        """Every memory file, each once, sorted by answer path."""
        found: dict[Path, MemoryFile] = {}
        for name in LONG_TERM_NAMES:
            candidate = self.root / name
            if _regular_file(candidate) and not any(os.path.samefile(candidate, f) for f in found):
                found[candidate] = self._memory_file(candidate)
        for base in [self.root / DAILY_DIR, *self.extra_roots]:
            for path in self._walk(base):
                found.setdefault(path, self._memory_file(path))
        if self.sessions_dir is not None and _real_dir(self.sessions_dir):
            for path in self._walk(self.sessions_dir, TRANSCRIPT_SUFFIX):
                found.setdefault(path, self._transcript_file(path))
        return sorted(found.values(), key=lambda f: f.rel)

    def _walk(self, base: Path, suffix: str = ".md") -> Iterator[Path]:
        if _regular_file(base):
            if base.suffix == suffix:
                yield base
            return
        if not _real_dir(base):  # a symlinked memory/ is not followed; extra roots are already resolved
            return
        stack = [base]
        while stack:
            folder = stack.pop()
            try:
                entries = list(os.scandir(folder))
            except OSError as exc:
                logger.warning("cannot list %s: %s", folder, exc)
                continue
            for entry in entries:
                if _skipped(entry.name) or entry.is_symlink():
                    continue
                if entry.is_dir(follow_symlinks=False):
                    stack.append(Path(entry.path))
                elif entry.name.endswith(suffix) and entry.is_file(follow_symlinks=False):
                    yield Path(entry.path)

    def _memory_file(self, path: Path) -> MemoryFile:
        return MemoryFile(self.relpath(path), path)

    def _transcript_file(self, path: Path) -> MemoryFile:
        return MemoryFile(self._transcript_rel(path), path, "sessions")

    def _transcript_rel(self, path: Path) -> str:
        assert self.sessions_dir is not None
        return f"{SESSIONS_PREFIX}/{path.relative_to(self.sessions_dir).as_posix()}"

    def relpath(self, path: Path) -> str:
        """The answer path of an absolute path."""
        return Path(os.path.relpath(path, self.root)).as_posix()

    # Policy -------------------------------------------------------------------------------------

    def resolve(self, raw: str, *, must_exist: bool = True) -> MemoryFile:
        """Check that ``raw`` names a memory file and return it; PathError with the reason otherwise."""
        if not isinstance(raw, str) or not raw.strip():
            raise PathError("path is empty: pass a path exactly as memory_search returned it, e.g. 'MEMORY.md'")
        if "\x00" in raw:
            raise PathError("path contains a NUL byte; pass a path exactly as memory_search returned it")
        given = Path(raw.strip().replace("\\", "/"))
        if self.sessions_dir is not None and given.parts[:1] == (SESSIONS_PREFIX,):
            transcript = self._resolve_transcript(raw, given)
            if transcript is not None:
                return transcript
        target = Path(os.path.normpath(given if given.is_absolute() else self.root / given))
        if target.suffix != ".md":
            also = f" (and, read-only, {SESSIONS_PREFIX}/*{TRANSCRIPT_SUFFIX} transcripts)" if self.sessions_dir else ""
            raise PathError(f"{raw!r} is not a Markdown file: only *.md memory files{also} can be read or written")
        base = self._allowed_base(target)
        if base is None:
            raise PathError(
                f"{raw!r} is outside the memory files ({self.describe()}); "
                "use a path exactly as memory_search returned it"
            )
        self._check_components(raw, base, target, must_exist)
        return self._memory_file(target)

    def _resolve_transcript(self, raw: str, given: Path) -> MemoryFile | None:
        """A ``sessions/…`` path: the transcript it names, or None for a memory path such as ``sessions/x.md``.

        ``..`` is refused outright: relative to the sessions folder it would climb out of it, and
        read against the workspace it would mean something else than it seems.
        """
        assert self.sessions_dir is not None
        rest = given.parts[1:]
        if ".." in rest:
            raise PathError(
                f"{raw!r} climbs out of the session transcripts with '..'; "
                "use a path exactly as memory_search returned it"
            )
        if not rest or not rest[-1].endswith(TRANSCRIPT_SUFFIX):
            return None
        target = self.sessions_dir.joinpath(*rest)
        if target.suffix != TRANSCRIPT_SUFFIX:  # e.g. a bare ".jsonl", which is a hidden file anyway
            return None
        self._check_components(raw, self.sessions_dir, target, must_exist=True, transcript=True)
        return self._transcript_file(target)

    def classify(self, path: Path) -> str | None:
        """The answer path of ``path`` if it would be a memory file, else None (no disk access).

        Used on watcher events, where the file may already be gone: hidden and ignored folders,
        non-Markdown files and anything outside the memory roots give None. A ``*.jsonl`` file in
        the sessions folder gives its transcript path.
        """
        target = Path(os.path.normpath(path))
        if _skipped(target.name):
            return None
        if target.suffix == TRANSCRIPT_SUFFIX:
            return self._classify_transcript(target)
        if target.suffix != ".md":
            return None
        base = self._allowed_base(target)
        if base is None or any(_skipped(part) for part in target.relative_to(base).parts):
            return None
        return self.relpath(target)

    def _classify_transcript(self, target: Path) -> str | None:
        sessions = self.sessions_dir
        if sessions is None or target == sessions or not target.is_relative_to(sessions):
            return None
        if any(_skipped(part) for part in target.relative_to(sessions).parts):
            return None
        return self._transcript_rel(target)

    def files_in(self, folder: Path) -> list[str]:
        """Answer paths of the memory files and transcripts inside ``folder`` (e.g. one that just appeared)."""
        paths = [*self._walk(folder)]
        if self.sessions_dir is not None:
            paths += self._walk(folder, TRANSCRIPT_SUFFIX)
        return [rel for path in paths if (rel := self.classify(path)) is not None]

    def file_for(self, rel: str) -> MemoryFile:
        """The MemoryFile for an answer path returned by :meth:`classify` or :meth:`discover`."""
        if self.sessions_dir is not None and rel.startswith(f"{SESSIONS_PREFIX}/") and rel.endswith(TRANSCRIPT_SUFFIX):
            return self._transcript_file(Path(os.path.normpath(self.sessions_dir / rel.split("/", 1)[1])))
        return self._memory_file(Path(os.path.normpath(self.root / rel)))

    def watch_roots(self) -> tuple[list[Path], list[Path]]:
        """(folders to watch recursively, folders to watch flat) for a file watcher.

        A folder inside another watched tree is left out (it would report every event twice).
        """
        candidates = [self.root / DAILY_DIR, *self.extra_roots]
        if self.sessions_dir is not None:
            candidates.append(self.sessions_dir)
        real = list(dict.fromkeys(p for p in candidates if _real_dir(p)))
        trees = [p for p in real if not any(p != q and p.is_relative_to(q) for q in real)]
        flat = [self.root] + [p.parent for p in self.extra_roots if not p.is_dir()]
        return trees, sorted(set(flat))

    def describe(self) -> str:
        """A one-line summary of what counts as memory, for error messages."""
        extras = ", ".join(self.relpath(r) + ("/**/*.md" if r.is_dir() else "") for r in self.extra_roots)
        sessions = f", {SESSIONS_PREFIX}/**/*{TRANSCRIPT_SUFFIX}" if self.sessions_dir is not None else ""
        return "MEMORY.md, memory/**/*.md" + (f", {extras}" if extras else "") + sessions

    def _allowed_base(self, target: Path) -> Path | None:
        for root in self.extra_roots:
            if target == root or (root.is_dir() and target.is_relative_to(root)):
                return root
        if target.is_relative_to(self.root):
            parts = target.relative_to(self.root).parts
            if len(parts) == 1 and parts[0] in LONG_TERM_NAMES:
                return self.root
            if len(parts) >= 2 and parts[0] == DAILY_DIR:
                return self.root
        return None

    def _check_components(
        self, raw: str, base: Path, target: Path, must_exist: bool, *, transcript: bool = False
    ) -> None:
        """Refuse hidden or symlinked components between the root and the file."""
        shown = self._transcript_rel if transcript else self.relpath
        current = base
        for part in target.relative_to(base).parts if target != base else ():
            if _skipped(part):
                raise PathError(f"{raw!r} goes through a hidden or ignored folder ({part}); memory files never do")
            current = current / part
            try:
                mode = os.lstat(current).st_mode
            except FileNotFoundError:
                if must_exist:
                    raise PathError(
                        f"no memory file at {shown(target)}; run memory_search to find existing paths"
                    ) from None
                return
            except OSError as exc:
                raise PathError(f"cannot access {shown(target)}: {exc.strerror}") from None
            if stat.S_ISLNK(mode):
                raise PathError(f"{raw!r} goes through a symlink ({shown(current)}); symlinks are not followed")
        if must_exist and not stat.S_ISREG(os.lstat(target).st_mode):
            raise PathError(f"{shown(target)} is not a regular file")

    # Well-known files ---------------------------------------------------------------------------

    def daily_file(self, day: dt.date) -> MemoryFile:
        return self._memory_file(self.root / DAILY_DIR / f"{day.isoformat()}.md")

    def long_term_file(self) -> MemoryFile:
        for name in LONG_TERM_NAMES:
            if _regular_file(self.root / name):
                return self._memory_file(self.root / name)
        return self._memory_file(self.root / LONG_TERM_NAMES[0])


def _real_dir(path: Path) -> bool:
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def _regular_file(path: Path) -> bool:
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False
