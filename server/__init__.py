"""memdex's MCP adapter and command line. The engine lives in ``memory_core``.

The MCP SDK is imported on first use of :func:`build_server`, so commands that never serve (``memdex hook``
runs at every session start of a host) start without it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .app import build_server

__all__ = ["build_server"]


def __getattr__(name: str) -> Any:
    if name == "build_server":
        from .app import build_server

        return build_server
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
