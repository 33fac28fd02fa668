"""memdex's engine: Markdown memory files -> chunks -> SQLite index -> search.

This package never imports MCP or a CLI library; ``server`` adapts it to both.
"""

from .config import Settings, load_settings
from .engine import MemoryEngine, SyncReport
from .errors import ClosedError, ConfigError, IndexBusy, IndexCorrupt, InputError, MemdexError, PathError, StoreError
from .models import AppendReceipt, Excerpt, Hit, IndexStatus, SearchAnswer

__all__ = [
    "AppendReceipt",
    "ClosedError",
    "ConfigError",
    "Excerpt",
    "Hit",
    "IndexStatus",
    "IndexBusy",
    "IndexCorrupt",
    "InputError",
    "MemdexError",
    "MemoryEngine",
    "PathError",
    "SearchAnswer",
    "Settings",
    "StoreError",
    "SyncReport",
    "load_settings",
]
