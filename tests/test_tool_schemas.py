"""The MCP tools as clients see them, pinned: a change to a name, text, schema or hint shows up in review.

After a deliberate change, rewrite the snapshot with
``MEMDEX_UPDATE_SNAPSHOTS=1 .venv/bin/python -m pytest tests/test_tool_schemas.py`` and commit the diff.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from mcp import Client

from memdex.memory_core import MemoryEngine, load_settings
from memdex.server import build_server

SNAPSHOT = Path(__file__).parent / "data" / "tool_schemas.json"
FIELDS = ("name", "title", "description", "inputSchema", "outputSchema", "annotations")
UPDATE = os.environ.get("MEMDEX_UPDATE_SNAPSHOTS") == "1"  # read at import: tests run without MEMDEX_* variables


async def listed_tools(tmp_path: Path) -> list[dict[str, Any]]:
    """Every tool of a server with default settings, as the SDK's in-process client lists it."""
    (tmp_path / "ws").mkdir()
    engine = MemoryEngine(load_settings(workspace=tmp_path / "ws", index_path=tmp_path / "index.sqlite"))
    async with Client(build_server(engine)) as client:
        tools = (await client.list_tools()).tools
    dumped = [tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in tools]
    return sorted(({key: tool[key] for key in FIELDS if key in tool} for tool in dumped), key=lambda t: t["name"])


async def test_tool_names_texts_schemas_and_hints_match_the_snapshot(tmp_path: Path) -> None:
    """tests/data/tool_schemas.json holds what list_tools returns (regenerate: MEMDEX_UPDATE_SNAPSHOTS=1)."""
    tools = await listed_tools(tmp_path)
    if UPDATE:
        SNAPSHOT.write_text(json.dumps(tools, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    expected = json.loads(SNAPSHOT.read_text(encoding="utf-8"))
    assert [tool["name"] for tool in tools] == [tool["name"] for tool in expected]
    for tool, pinned in zip(tools, expected, strict=True):
        assert tool == pinned, f"{tool['name']} differs from {SNAPSHOT.name}; if deliberate, regenerate it"
