"""memdex's engine: Markdown memory files -> chunks -> embeddings -> an index -> search.

This package never imports MCP or a CLI library; ``server`` adapts it to both, and imports only what is
exported here (a test holds it to that). docs/architecture.md draws the parts behind these names.
"""

from . import limits
from .config import Settings, load_settings
from .config_sections import ServerSettings
from .embeddings.factory import candidates as provider_candidates
from .embeddings.factory import open_provider
from .embeddings.languages import script_warning
from .engine import MemoryEngine, SyncReport
from .errors import (
    ClosedError,
    ConfigError,
    EmbeddingError,
    IndexBusy,
    IndexCorrupt,
    InputError,
    MemdexError,
    PathError,
    StoreError,
    as_memdex_error,
)
from .models import AppendReceipt, EditReceipt, Excerpt, Hit, IndexStatus, SearchAnswer
from .stores.factory import index_owner
from .stores.filters import SearchFilter
from .stores.sqlite.db import driver as sqlite_driver
from .textutil import decode_text, shown, split_lines
from .workspace.appender import append_change, append_entry, format_entry
from .workspace.consolidation import Material as ConsolidationMaterial
from .workspace.consolidation import take as take_consolidation
from .workspace.encodings import utf16_files
from .workspace.files import MemoryFile, Workspace, check_root
from .workspace.history import History
from .workspace.scripts import memory_letters

__all__ = [
    "AppendReceipt",
    "ClosedError",
    "ConfigError",
    "ConsolidationMaterial",
    "EditReceipt",
    "EmbeddingError",
    "Excerpt",
    "History",
    "Hit",
    "IndexBusy",
    "IndexCorrupt",
    "IndexStatus",
    "InputError",
    "MemdexError",
    "MemoryEngine",
    "MemoryFile",
    "PathError",
    "SearchAnswer",
    "SearchFilter",
    "ServerSettings",
    "Settings",
    "StoreError",
    "SyncReport",
    "Workspace",
    "append_change",
    "append_entry",
    "as_memdex_error",
    "check_root",
    "decode_text",
    "format_entry",
    "index_owner",
    "limits",
    "load_settings",
    "memory_letters",
    "open_provider",
    "provider_candidates",
    "script_warning",
    "shown",
    "split_lines",
    "sqlite_driver",
    "take_consolidation",
    "utf16_files",
]
