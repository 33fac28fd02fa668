"""memdex's MCP adapter and command line. The engine lives in ``memory_core``."""

from .app import build_server

__all__ = ["build_server"]
