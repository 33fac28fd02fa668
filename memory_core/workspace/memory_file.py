"""A memory file, and how it is opened: never through a symlink.

Every read, stat and append opens the file with :meth:`MemoryFile.open`: by file descriptor, one
component at a time from the workspace root (or from its extra root or sessions folder when it
is outside the workspace), with ``O_NOFOLLOW``. A symlink swapped into the path after a check is
refused then, never followed. Where ``os.open`` takes no ``dir_fd`` (Windows) each component is
checked and the file then opened by path, which leaves a window for such a swap.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import re
import secrets
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..errors import InputError, PathError
from .seen import Stamp, stamp_of

HASH_CHARS = 16  # a content hash: the first hex digits of the SHA-256 of the file's bytes
# An edit's new file before it is renamed over the old one: hidden, so neither indexed nor watched.
TEMP_NAME = re.compile(r"\.(?P<name>.+)\.memdex-(?P<pid>[0-9]+)-[0-9a-f]{8}\.tmp\Z")

# Linux and macOS open a file component by component below a folder descriptor; Windows cannot.
FD_WALK = {os.open, os.mkdir} <= os.supports_dir_fd and hasattr(os, "O_NOFOLLOW") and hasattr(os, "O_DIRECTORY")
# The last component: never a symlink, and no blocking on a FIFO planted there (fstat refuses it).
_LAST_FLAGS = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)


class _NotRegular(OSError):
    """The opened entry is a folder, FIFO or device, not a regular file."""


@dataclass(frozen=True)
class MemoryFile:
    """A memory file: its answer path (``rel``), where it is on disk, and the folder it is opened from.

    ``base`` is a memory root above ``path`` (None: the file's own folder); nothing between the
    two is followed if it is a symlink.
    """

    rel: str
    path: Path
    source: str = "memory"
    base: Path | None = None

    def open(self, flags: int = os.O_RDONLY, *, create: bool = False) -> int:
        """A descriptor of this regular file, reached without following a symlink; PathError otherwise.

        ``create`` makes the missing folders and the file (``flags`` then usually write). The
        caller closes the descriptor.
        """
        try:
            return self._open(flags, create)
        except OSError as exc:
            raise refusal(self.rel, exc) from None

    def read_bytes(self) -> bytes:
        """The whole file, read through :meth:`open`."""
        return self.read_stamped()[0]

    def read_stamped(self) -> tuple[bytes, Stamp | None]:
        """The whole file, read through :meth:`open`, and its :mod:`.seen` stamp (None when the file
        changed while it was read)."""
        with os.fdopen(self.open(), "rb") as handle:
            try:
                before = stamp_of(handle.fileno())
                data = handle.read()
                after = stamp_of(handle.fileno())
            except OSError as exc:
                raise refusal(self.rel, exc) from None
        return data, before if before == after and len(data) == before[2] else None

    def replace(self, data: bytes, mode: int) -> None:
        """Make ``data`` the file's content atomically: a temporary file in the same folder (``mode``,
        fsynced) renamed over it, then the folder fsynced. A reader sees the old file or the new one."""
        base = self.base or self.path.parent
        parts = self.path.relative_to(base).parts
        temp = f".{parts[-1]}.memdex-{os.getpid()}-{secrets.token_hex(4)}.tmp"
        try:
            if FD_WALK:  # the folder reached without following a symlink; temp and rename inside it
                folder = _open_below(base, (*parts[:-1], "."), os.O_RDONLY | os.O_DIRECTORY, False, last=0)
                try:
                    _write_new(temp, data, mode, folder)
                    try:
                        os.rename(temp, parts[-1], src_dir_fd=folder, dst_dir_fd=folder)
                    except OSError:
                        with contextlib.suppress(OSError):
                            os.unlink(temp, dir_fd=folder)
                        raise
                    os.fsync(folder)
                finally:
                    os.close(folder)
            else:
                os.close(_open_checked(base, parts, os.O_RDONLY, False))  # every folder checked for symlinks
                path = self.path.parent / temp
                _write_new(str(path), data, mode, None)
                try:
                    os.replace(path, self.path)
                except OSError:
                    with contextlib.suppress(OSError):
                        os.unlink(path)
                    raise
        except OSError as exc:
            raise refusal(self.rel, exc) from None

    def _open(self, flags: int, create: bool) -> int:
        base = self.base or self.path.parent
        fd = _open_below(base, self.path.relative_to(base).parts, flags, create)
        if stat.S_ISREG(os.fstat(fd).st_mode):
            return fd
        os.close(fd)
        raise _NotRegular(errno.EISDIR, "not a regular file", self.path.name)


def content_hash(data: bytes) -> str:
    """The content hash of a file's bytes (see :data:`HASH_CHARS`)."""
    return hashlib.sha256(data).hexdigest()[:HASH_CHARS]


def append_whole(fd: int, data: bytes) -> None:
    """Write ``data`` at the end of the file open on ``fd`` (``O_APPEND``), whole or not at all: when a write fails
    (a full disk, a file size limit), what it had written is cut off again, unless another writer appended since."""
    start = os.fstat(fd).st_size
    view, done = memoryview(data), 0
    try:
        while done < len(data):
            done += os.write(fd, view[done:])
    except OSError:
        with contextlib.suppress(OSError):
            if done and os.fstat(fd).st_size == start + done:
                os.ftruncate(fd, start)
        raise


def _write_new(name: str, data: bytes, mode: int, folder: int | None) -> None:
    """Create ``name`` (it must not exist), write ``data``, set ``mode``, fsync; nothing is left on failure."""
    fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _LAST_FLAGS, 0o600, dir_fd=folder)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        if hasattr(os, "fchmod"):
            os.fchmod(fd, mode)
        os.fsync(fd)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(name, dir_fd=folder)
        raise
    finally:
        os.close(fd)


def sweep_temp_files(folder: Path) -> list[str]:
    """Remove what an edit killed before its rename left in ``folder``: temporary files whose process is gone."""
    removed = []
    with contextlib.suppress(OSError), os.scandir(folder) as entries:
        for entry in entries:
            match = TEMP_NAME.fullmatch(entry.name)
            if match and not _alive(int(match["pid"])) and entry.is_file(follow_symlinks=False):
                with contextlib.suppress(OSError):
                    os.unlink(entry.path)
                    removed.append(entry.name)
    return removed


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # alive under another user, or no such check here (Windows)
        return True
    return True


def _open_below(base: Path, parts: Sequence[str], flags: int, create: bool, last: int = _LAST_FLAGS) -> int:
    """Open ``base/parts…``; a symlinked component fails (ELOOP, or ENOTDIR for a folder)."""
    if not FD_WALK:
        return _open_checked(base, parts, flags, create)
    folder = os.open(base, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for part in parts[:-1]:
            if create:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, dir_fd=folder)
            inner = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=folder)
            os.close(folder)
            folder = inner
        return os.open(parts[-1], flags | last | (os.O_CREAT if create else 0), 0o644, dir_fd=folder)
    finally:
        os.close(folder)


def _open_checked(base: Path, parts: Sequence[str], flags: int, create: bool) -> int:
    """:func:`_open_below` where ``os.open`` takes no ``dir_fd``: each component checked, then opened by path."""
    current = base
    for part in parts[:-1]:
        current = current / part
        if create:
            with contextlib.suppress(FileExistsError):
                os.mkdir(current)
        if not real_dir(current):
            raise OSError(errno.ENOTDIR if os.path.lexists(current) else errno.ENOENT, "not a folder", part)
    target = current / parts[-1]
    if os.path.islink(target):
        raise OSError(errno.ELOOP, "a symlink", parts[-1])
    return os.open(target, flags | _LAST_FLAGS | (os.O_CREAT if create else 0), 0o644)


def utf16_refusal(rel: str) -> InputError:
    """The InputError for a write to a UTF-16 file: UTF-8 text added to it would read as nonsense in its editor."""
    return InputError(
        f"{rel} is saved as UTF-16 text and memdex writes UTF-8 only, so nothing was written: the two encodings in one "
        f"file would garble it. Ask the user to save {rel} as UTF-8 (Notepad: Save As, Encoding UTF-8), then retry"
    )


def refusal(rel: str, exc: OSError) -> PathError:
    """The PathError for a memory file that could not be opened."""
    if isinstance(exc, _NotRegular) or exc.errno == errno.EISDIR:
        return PathError(f"{rel} is not a regular file; use a path exactly as memory_search returned it")
    if exc.errno == errno.ENOENT:
        return PathError(f"no memory file at {rel}; run memory_search to find existing paths")
    if exc.errno in (errno.ELOOP, errno.EMLINK):
        return PathError(f"{rel} is or goes through a symlink ({exc.filename}); symlinks are not followed")
    if exc.errno == errno.ENOTDIR:
        return PathError(f"{rel} goes through {exc.filename}, a symlink or not a folder; symlinks are not followed")
    return PathError(f"cannot access {rel}: {exc.strerror}")


def real_dir(path: Path) -> bool:
    """True for a folder that is not a symlink."""
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def regular_file(path: Path) -> bool:
    """True for a regular file that is not a symlink."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False
