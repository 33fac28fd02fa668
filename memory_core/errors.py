"""The exceptions memdex raises, one tree so callers can catch at the right depth.

* MemdexError                 base class; its message says what happened and what to do
  + ConfigError               the settings cannot be used as given
  + InputError                a caller's argument is unusable (empty query, bad numbers)
    - PathError               a path is not a readable/writable memory file
  + StoreError                the SQLite index cannot be opened or used
    - VectorUnavailable       sqlite-vec cannot be loaded into this Python's sqlite3
  + ClosedError               the engine was used before start or after close
  + EmbeddingError            an embedding provider failed (``retryable`` says if retrying may help)
    - EmbeddingAuthError      credentials refused (401/403)
    - EmbeddingQuotaError     out of quota or credit
    - EmbeddingTimeout        no answer in time
"""

from __future__ import annotations


class MemdexError(Exception):
    """Base class for every error memdex raises on purpose."""


class ConfigError(MemdexError):
    """The configuration is invalid or incomplete."""


class InputError(MemdexError, ValueError):
    """An argument from a caller (a model, a CLI user) cannot be used."""


class PathError(InputError):
    """A path does not name a memory file this workspace may read or write."""


class StoreError(MemdexError):
    """The SQLite index could not be opened, created or queried."""


class VectorUnavailable(StoreError):
    """sqlite-vec could not be loaded; keyword search still works."""


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
