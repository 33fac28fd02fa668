"""Which files are memory, and the path policy every read and write goes through.

Memory files are ``MEMORY.md`` (or ``memory.md``) at the workspace root, every ``*.md`` under
``memory/``, and the configured extra paths (folders, searched recursively, or single ``.md``
files). Hidden entries, ``node_modules`` and symlinks below a root are never followed, so a path
can neither climb out of the memory files nor be redirected elsewhere. Paths in answers are
workspace-relative with forward slashes (extra folders outside the workspace start with ``../``).

Every read, stat and append opens the file with :meth:`~.memory_file.MemoryFile.open` (never
through a symlink), and an answer path spells each component as its folder lists it
(:mod:`.spelling`). Two different files ``MEMORY.md`` and ``memory.md`` are both memory files. At
the workspace root a stored spelling that is not a memory name (``Memory.md``) is answered as the
memory name that opens it (``MEMORY.md``).

Session transcripts, when configured, are the ``*.jsonl`` files under the sessions folder (searched
recursively, by the same rules). Their answer paths are virtual: ``sessions/<path inside that
folder>``, whatever the folder's place on disk, and their source is ``"sessions"``.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import posixpath
import re
from collections.abc import Iterator, Sequence
from pathlib import Path

from ..errors import ConfigError, PathError
from ..limits import MAX_PATH_CHARS, MAX_PATH_PARTS
from ..textutil import is_unicode, shown
from .memory_file import MemoryFile, real_dir, refusal, regular_file
from .spelling import Listings, aliases_in, as_listed, listed_name, listed_path

logger = logging.getLogger(__name__)

__all__ = [
    "DAILY_DIR", "DAILY_LOG", "LONG_TERM_NAMES", "ROOT_NAMES", "SESSIONS_PREFIX", "SKIPPED_DIRS", "TRANSCRIPT_SUFFIX",
    "MemoryFile", "Workspace", "answer_path", "check_path_size", "check_root",
]

LONG_TERM_NAMES = ("MEMORY.md", "memory.md")
DAILY_DIR = "memory"
SESSIONS_PREFIX = "sessions"  # first component of every transcript's answer path
TRANSCRIPT_SUFFIX = ".jsonl"
SKIPPED_DIRS = frozenset({"node_modules", "__pycache__"})
ROOT_NAMES = (*LONG_TERM_NAMES, DAILY_DIR)  # the only names the memory files take at the workspace root
# A daily log's path: ``memory/2026-01-31.md``, ``memory/2026-01-31-standup.md``, ``x/memory/2026-01-31.md``.
DAILY_LOG = re.compile(r"(?:^|/)memory/([0-9]{4}-[0-9]{2}-[0-9]{2})[^/]*\.md\Z")


def check_path_size(text: str, name: str = "path") -> None:
    """PathError when the path argument ``name`` is longer or deeper than a memory file's path can be.

    Checked before anything else reads the path, so the work it costs is bounded by these limits.
    """
    if len(text) > MAX_PATH_CHARS:
        raise PathError(
            f"{name} is {len(text):,} characters long; memory paths have at most {MAX_PATH_CHARS:,} characters: "
            "pass a path exactly as memory_search returned it"
        )
    parts = sum(1 for part in text.replace("\\", "/").split("/") if part)
    if parts > MAX_PATH_PARTS:
        raise PathError(
            f"{name} has {parts:,} components (folders and file name); memory paths have at most {MAX_PATH_PARTS}: "
            "pass a path exactly as memory_search returned it"
        )


def _spelled(raw: str) -> str:
    """A caller's path, trimmed and with ``/`` separators; PathError when it is empty, too long or holds a NUL."""
    if not isinstance(raw, str) or not raw.strip():
        raise PathError("path is empty: pass a path exactly as memory_search returned it, e.g. 'MEMORY.md'")
    text = raw.strip()
    check_path_size(text)
    if "\x00" in text:
        raise PathError("path contains a NUL byte; pass a path exactly as memory_search returned it")
    if not is_unicode(text):
        raise PathError(
            f"{shown(text)} is not Unicode text (bytes of another encoding?); memory files have UTF-8 names: pass a path "
            "exactly as memory_search returned it"
        )
    return text.replace("\\", "/")


def answer_path(raw: str) -> str:
    """``raw`` as an answer path (``memory/2026-01-31.md``, ``../vault/x.md``), by its spelling alone: for
    a host that serves a memory from its store and has no files to resolve it against."""
    text = _spelled(raw)
    if text.startswith("/") or re.match(r"[A-Za-z]:", text):
        raise PathError(f"{raw!r} is an absolute path; pass a path exactly as memory_search returned it")
    return posixpath.normpath(text)


def check_root(root: Path) -> None:
    """Refuse a workspace that would silently create a memory in the wrong place.

    It must be an existing folder; the file system root and the home folder themselves (a desktop
    client's working folder, when ``--workspace`` is left out) only when they already hold memory.
    """
    if not root.exists():
        raise ConfigError(
            f"workspace {root} does not exist; create it with `mkdir -p {root / DAILY_DIR}`, or pass --workspace "
            "with your memory folder"
        )
    if not root.is_dir():
        raise ConfigError(f"workspace {root} is not a folder; pass --workspace with your memory folder")
    where = {Path(root.anchor): "the file system root", Path.home().resolve(): "your home folder"}.get(root)
    if where and not any(os.path.lexists(root / name) for name in ROOT_NAMES):
        raise ConfigError(
            f"workspace {root} is {where} and holds no MEMORY.md or memory/ (is it just the current folder?); "
            "pass --workspace with your memory folder, e.g. --workspace ~/agent-memory"
        )


def _skipped(name: str) -> bool:
    return name.startswith(".") or name in SKIPPED_DIRS


def _unanswerable(name: str) -> str | None:
    """Why no answer path can spell a file or folder name, or None: bytes that are not UTF-8 (which Python holds
    as lone surrogates, and no index row or JSON answer can carry), or a backslash (possible on Linux only), which
    memdex reads as a folder separator in a path given back."""
    if not is_unicode(name):
        return "its name is not UTF-8 text"
    return "its name holds a backslash, which memdex reads as a folder separator" if "\\" in name else None


class Workspace:
    """The memory files of one workspace folder."""

    def __init__(self, root: Path, extra_paths: Sequence[str] = (), sessions_dir: Path | None = None) -> None:
        self.root = listed_path(root.expanduser().resolve())
        self.extra_roots = [r for r in (self._extra_root(p) for p in extra_paths) if r is not None]
        self.sessions_dir = self._sessions_root(sessions_dir) if sessions_dir is not None else None
        self.misnamed: set[str] = set()  # memory files and folders skipped for a name no answer path spells, as shown

    def _sessions_root(self, raw: Path) -> Path:
        path = Path(os.path.expanduser(raw))
        path = listed_path((path if path.is_absolute() else self.root / path).resolve())  # the user chose it
        if not real_dir(path):
            logger.warning("sessions folder %s does not exist (yet); transcripts are indexed once it does", path)
        return path

    def _extra_root(self, raw: str) -> Path | None:
        path = Path(os.path.expanduser(raw))
        path = listed_path((path if path.is_absolute() else self.root / path).resolve())  # the user chose it
        if not is_unicode(self.relpath(path)):
            logger.warning("extra path %s is not UTF-8 text where answer paths spell it; skipping it", raw)
        elif path.is_dir() or (path.is_file() and path.suffix == ".md"):
            return path
        else:
            logger.warning("extra path %s is neither a folder nor a .md file; skipping it", raw)
        return None

    # Discovery ----------------------------------------------------------------------------------

    def discover(self) -> list[MemoryFile]:
        """Every memory file, each once, sorted by answer path."""
        found = {path: self._memory_file(path) for path in self._long_term_paths()}
        for base in [self._canonical(self.root / DAILY_DIR), *self.extra_roots]:
            for path in self._walk(base):
                found.setdefault(path, self._memory_file(path))
        if self.sessions_dir is not None and real_dir(self.sessions_dir):
            for path in self._walk(self.sessions_dir, TRANSCRIPT_SUFFIX):
                found.setdefault(path, self._transcript_file(path))
        return sorted(found.values(), key=lambda f: f.rel)

    def _long_term_paths(self) -> list[Path]:
        """MEMORY.md and memory.md as the root lists them; one path when both names open one file."""
        found: list[Path] = []
        for name in LONG_TERM_NAMES:
            path = self._canonical(self.root / name)
            if regular_file(path) and not any(os.path.samefile(path, f) for f in found):
                found.append(path)
        return found

    def _walk(self, base: Path, suffix: str = ".md") -> Iterator[Path]:
        if regular_file(base):
            if base.suffix == suffix:
                yield base
            return
        if not real_dir(base):  # a symlinked memory/ is not followed; extra roots are already resolved
            return
        stack = [base]
        while stack:
            folder = stack.pop()
            try:
                entries = list(os.scandir(folder))
            except OSError as exc:
                logger.warning("cannot list %s: %s", folder, exc)
                continue
            aliases = aliases_in(folder, [entry.name for entry in entries])
            for entry in entries:
                if _skipped(entry.name) or entry.is_symlink() or entry.name in aliases:
                    continue
                if entry.is_dir(follow_symlinks=False):
                    if self._answerable(entry):
                        stack.append(Path(entry.path))
                elif entry.name.endswith(suffix) and entry.is_file(follow_symlinks=False) and self._answerable(entry):
                    yield Path(entry.path)

    def _answerable(self, entry: os.DirEntry[str]) -> bool:
        """Whether an answer path can spell ``entry``'s name; one it cannot is skipped, and named once in the log
        (and in :attr:`misnamed`, for ``memdex doctor``)."""
        problem = _unanswerable(entry.name)
        if problem is None:
            return True
        spelled = os.fsencode(entry.path).decode("utf-8", errors="backslashreplace")
        if spelled not in self.misnamed:
            self.misnamed.add(spelled)
            logger.warning("skipping %s: %s; rename it to have it indexed", spelled, problem)
        return False

    def _memory_file(self, path: Path) -> MemoryFile:
        return MemoryFile(self.relpath(path), path, base=self._open_base(path, None))

    def _transcript_file(self, path: Path) -> MemoryFile:
        return MemoryFile(self._transcript_rel(path), path, "sessions", self._open_base(path, self.sessions_dir))

    def _open_base(self, path: Path, root: Path | None) -> Path:
        """The folder ``path`` is opened from: the workspace root if it is inside it, else its memory root.

        That is ``root``, or the one the path policy finds; for a single-file root, its folder.
        """
        if str(path).startswith(os.path.join(self.root, "")):  # is_relative_to, at a fraction of the cost
            return self.root
        root = root or self._allowed_base(path)
        return path.parent if root is None or root == path else root

    def _transcript_rel(self, path: Path) -> str:
        assert self.sessions_dir is not None
        return f"{SESSIONS_PREFIX}/{path.relative_to(self.sessions_dir).as_posix()}"

    def relpath(self, path: Path) -> str:
        """The answer path of an absolute path."""
        return Path(os.path.relpath(path, self.root)).as_posix()

    def _canonical(self, target: Path, listings: Listings | None = None) -> Path:
        """``target`` spelled as its folders list it, from the deepest memory root holding it down.

        At the workspace root only :data:`ROOT_NAMES` are spellings a name may take.
        """
        candidates = (self.root, *self.extra_roots, self.sessions_dir)
        roots = [r for r in candidates if r is not None and target.is_relative_to(r)]
        if not roots:
            return target
        base = max(roots, key=lambda r: len(r.parts))
        parts = target.relative_to(base).parts
        if not parts:
            return target
        first = listed_name(base, parts[0], ROOT_NAMES if base == self.root else None, listings)
        return as_listed(base / first, parts[1:], listings)

    # Policy -------------------------------------------------------------------------------------

    def resolve(self, raw: str, *, must_exist: bool = True) -> MemoryFile:
        """Check that ``raw`` names a memory file and return it; PathError with the reason otherwise."""
        given = Path(_spelled(raw))
        if self.sessions_dir is not None and given.parts[:1] == (SESSIONS_PREFIX,):
            transcript = self._resolve_transcript(raw, given)
            if transcript is not None:
                return transcript
        target = self._canonical(Path(os.path.normpath(given if given.is_absolute() else self.root / given)))
        if target.suffix != ".md":
            also = f" (and, read-only, {SESSIONS_PREFIX}/*{TRANSCRIPT_SUFFIX} transcripts)" if self.sessions_dir else ""
            raise PathError(f"{raw!r} is not a Markdown file: only *.md memory files{also} can be read or written")
        base = self._allowed_base(target)
        if base is None:
            raise PathError(
                f"{raw!r} is outside the memory files ({self.describe()}); "
                "use a path exactly as memory_search returned it"
            )
        file = self._memory_file(target)
        self._check(raw, file, target.relative_to(base).parts, must_exist)
        return file

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
        target = self._canonical(self.sessions_dir.joinpath(*rest))
        if target.suffix != TRANSCRIPT_SUFFIX:  # e.g. a bare ".jsonl", which is a hidden file anyway
            return None
        file = self._transcript_file(target)
        self._check(raw, file, target.relative_to(self.sessions_dir).parts, must_exist=True)
        return file

    @staticmethod
    def _check(raw: str, file: MemoryFile, parts: Sequence[str], must_exist: bool) -> None:
        """Refuse hidden or ignored components, and a file that cannot be opened without following a symlink.

        Only a missing file (or folder) passes when it need not exist.
        """
        hidden = next((part for part in parts if _skipped(part)), None)
        if hidden is not None:
            raise PathError(f"{raw!r} goes through a hidden or ignored folder ({hidden}); memory files never do")
        try:
            os.close(file._open(os.O_RDONLY, create=False))
        except OSError as exc:
            if must_exist or not isinstance(exc, FileNotFoundError):
                raise refusal(file.rel, exc) from None

    def classify(self, path: Path, listings: Listings | None = None) -> str | None:
        """The answer path of ``path`` if it would be a memory file, else None.

        Used on watcher events, where the file may already be gone: hidden and ignored folders,
        non-Markdown files and anything outside the memory roots give None. A ``*.jsonl`` file in
        the sessions folder gives its transcript path. A path that exists is spelled as its
        folders list it (as :meth:`discover` spells it); one that is gone, as given. It reads the
        disk (call it on a worker thread); ``listings`` shares folder listings across a batch.
        """
        target = Path(os.path.normpath(path))
        if _skipped(target.name) or target.suffix.lower() not in (".md", TRANSCRIPT_SUFFIX):
            return None
        return self._classified(self._canonical(target, listings))

    def _classified(self, target: Path) -> str | None:
        """:meth:`classify` of a path already spelled as listed (no disk access)."""
        if _skipped(target.name):
            return None
        if target.suffix == TRANSCRIPT_SUFFIX:
            return self._classify_transcript(target)
        if target.suffix != ".md":
            return None
        base = self._allowed_base(target)
        if base is None or any(_skipped(part) or _unanswerable(part) for part in target.relative_to(base).parts):
            return None
        return self.relpath(target)

    def _classify_transcript(self, target: Path) -> str | None:
        sessions = self.sessions_dir
        if sessions is None or target == sessions or not target.is_relative_to(sessions):
            return None
        if any(_skipped(part) or _unanswerable(part) for part in target.relative_to(sessions).parts):
            return None
        return self._transcript_rel(target)

    def files_in(self, folder: Path) -> list[str]:
        """Answer paths of the memory files and transcripts inside ``folder`` (e.g. one that just appeared)."""
        folder = self._canonical(Path(os.path.normpath(folder)))
        paths = [*self._walk(folder)]
        if self.sessions_dir is not None:
            paths += self._walk(folder, TRANSCRIPT_SUFFIX)
        return [rel for path in paths if (rel := self._classified(path)) is not None]

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
        real = list(dict.fromkeys(p for p in candidates if real_dir(p)))
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

    # Well-known files ---------------------------------------------------------------------------

    def daily_file(self, day: dt.date) -> MemoryFile:
        return self._memory_file(self._canonical(self.root / DAILY_DIR / f"{day.isoformat()}.md"))

    def long_term_file(self) -> MemoryFile:
        found = self._long_term_paths()
        return self._memory_file(found[0] if found else self.root / LONG_TERM_NAMES[0])
