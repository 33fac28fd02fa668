"""The exceptions memdex raises, one tree so callers can catch at the right depth.

* MemdexError                 base class; its message says what happened and what to do
  + ConfigError               the settings cannot be used as given
  + InputError                a caller's argument is unusable (empty query, bad numbers)
    - PathError               a path is not a readable/writable memory file
  + StoreError                the SQLite index, or the disk under it, cannot be used
    - IndexBusy               another process holds the index's write lock: retry shortly
    - IndexCorrupt            the index file is damaged: rebuild it from the Markdown
  + ClosedError               the engine was used before start or after close
  + EmbeddingError            an embedding provider failed (``retryable`` says if retrying may help)
    - EmbeddingAuthError      credentials refused (401/403)
    - EmbeddingQuotaError     out of quota or credit
    - EmbeddingTimeout        no answer in time
  + RerankError               the reranker failed; search keeps the fused order

:func:`as_memdex_error` turns the SQLite and OS errors memdex knows how to explain into this tree.
"""

from __future__ import annotations

import errno


class MemdexError(Exception):
    """Base class for every error memdex raises on purpose."""


class ConfigError(MemdexError):
    """The configuration is invalid or incomplete."""


class InputError(MemdexError, ValueError):
    """An argument from a caller (a model, a CLI user) cannot be used."""


class PathError(InputError):
    """A path does not name a memory file this workspace may read or write."""


class StoreError(MemdexError):
    """The SQLite index could not be opened, created or queried, or its disk is unusable."""


class IndexBusy(StoreError):
    """Another connection holds the index's lock longer than the busy timeout; retrying may help."""


class IndexCorrupt(StoreError):
    """The index file is damaged or is not a SQLite database; it is rebuilt from the Markdown."""



class ClosedError(MemdexError):
    """The engine is not running."""


class EmbeddingError(MemdexError):
    """An embedding provider failed; ``retryable`` says whether trying again may help."""

    retryable: bool = False

    def __init__(self, message: str, *, retryable: bool | None = None) -> None:
        super().__init__(message)
        if retryable is not None:
            self.retryable = retryable


class EmbeddingAuthError(EmbeddingError):
    """The provider refused the credentials (401/403): retrying cannot help."""


class EmbeddingQuotaError(EmbeddingError):
    """The account is out of quota or credit (e.g. ``insufficient_quota``): retrying cannot help."""


class EmbeddingTimeout(EmbeddingError):
    """The provider did not answer in time."""

    retryable = True


class RerankError(MemdexError):
    """The reranker could not be reached, refused the request or gave an unusable answer."""


# Mapping foreign errors ---------------------------------------------------------------------------

# Primary SQLite result codes (https://sqlite.org/rescode.html) -> (error class, message).
_SQLITE_CODES: dict[int, tuple[type[StoreError], str]] = {
    3: (StoreError, "SQLite was denied access to the index (SQLITE_PERM); check the index file's permissions"),
    5: (IndexBusy, "another memdex process is writing the index (database is locked); retry in a moment"),
    6: (IndexBusy, "another memdex process is writing the index (database table is locked); retry in a moment"),
    8: (
        StoreError,
        "the index is read-only; make the index file and its folder writable, or pass --index to a writable place",
    ),
    10: (StoreError, "disk I/O error on the index; check the disk and the index folder, then retry"),
    11: (
        IndexCorrupt,
        "the index is damaged (database disk image is malformed); the Markdown memory is intact "
        "and the index will be rebuilt from it: run `memdex index --force`",
    ),
    13: (StoreError, "disk full: free space on the disk holding the index, then retry"),
    14: (StoreError, "cannot open the index file; check that its folder exists and is writable, or pass --index"),
    26: (
        IndexCorrupt,
        "the index file is not a SQLite database; the Markdown memory is intact and the index will "
        "be rebuilt from it: run `memdex index --force`",
    ),
}

# The driver's message, for drivers that do not set ``sqlite_errorcode``.
_SQLITE_MESSAGES = {
    "database is locked": 5,
    "database table is locked": 6,
    "attempt to write a readonly database": 8,
    "disk i/o error": 10,
    "database disk image is malformed": 11,
    "database or disk is full": 13,
    "unable to open database file": 14,
    "file is not a database": 26,
}


def as_memdex_error(exc: BaseException) -> MemdexError | None:
    """The memdex error explaining ``exc``, or None when memdex has no explanation (a bug).

    A MemdexError is returned as it is; SQLite errors of either driver (stdlib ``sqlite3``,
    ``pysqlite3``) and OSErrors memdex can explain are translated; an exception group is
    translated when every exception in it is.
    """
    if isinstance(exc, MemdexError):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        mapped = [as_memdex_error(inner) for inner in exc.exceptions]
        return mapped[0] if all(mapped) else None
    if _is_sqlite_error(exc):
        return _from_sqlite(exc)
    if isinstance(exc, OSError):
        return _from_os(exc)
    return None


def _is_sqlite_error(exc: BaseException) -> bool:
    """True for ``sqlite3.Error`` and its subclasses of any sqlite3-compatible driver."""
    return any(cls.__name__ == "Error" and "sqlite" in cls.__module__ for cls in type(exc).__mro__)


def _from_sqlite(exc: BaseException) -> StoreError | None:
    code = getattr(exc, "sqlite_errorcode", None)
    primary = code & 0xFF if isinstance(code, int) else _SQLITE_MESSAGES.get(str(exc).strip().lower())
    if primary not in _SQLITE_CODES:
        return None
    kind, message = _SQLITE_CODES[primary]
    return kind(message)


def _from_os(exc: OSError) -> MemdexError | None:
    name = exc.filename if exc.filename is not None else "a file"
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return StoreError(f"disk full writing {name}: free space on that disk, then retry")
    if exc.errno == errno.ELOOP:  # O_NOFOLLOW refused a symlink; memdex opens only memory files that way
        return PathError(f"{name} is a symlink; memdex does not follow symlinks, replace it with the file itself")
    if exc.errno not in _OS_PROBLEMS:
        return None
    problem, memory_step, other_step = _OS_PROBLEMS[exc.errno]
    if str(name).endswith(".md"):
        return PathError(f"{problem}: {name}; {memory_step}")
    return StoreError(f"{problem}: {name}; {other_step}")


_ACCESS = "give the user running memdex read and write access to it"
# errno -> (problem, next step for a memory file, next step for the index or a folder).
_OS_PROBLEMS: dict[int, tuple[str, str, str]] = {
    errno.EACCES: ("permission denied", _ACCESS, f"{_ACCESS}, or pass another --index"),
    errno.EPERM: ("operation not permitted", _ACCESS, f"{_ACCESS}, or pass another --index"),
    errno.EROFS: (
        "read-only file system",
        "serve with --read-only, or move the memory to a writable disk",
        "pass --index with a place on a writable disk",
    ),
    errno.ENOENT: (
        "no such file or folder",
        "check the path; memory_search shows the memory files that exist",
        "check that the folder exists, or pass another --index or --workspace",
    ),
    errno.ENOTDIR: (
        "a part of the path is not a folder",
        "check the path; memory_search shows the memory files",
        "check the path, or pass another --index or --workspace",
    ),
    errno.EEXIST: (  # a folder to create is already a file
        "a part of the path is not a folder",
        "check the path; memory_search shows the memory files",
        "check the path, or pass another --index or --workspace",
    ),
}
