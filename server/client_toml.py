"""Codex's ``config.toml``: the memdex table written, replaced or removed, every other byte of the file kept.

TOML has no standard library writer, and a user's file holds comments and layout worth keeping, so only the
lines of the one table change; the result is parsed again and must hold the old data plus the new table.
"""

from __future__ import annotations

import copy
import json
import re
import tomllib
from pathlib import Path
from typing import Any

from memdex.memory_core import ConfigError

Json = dict[str, Any]

_HEADER = re.compile(r"^\s*(?P<open>\[\[?)\s*(?P<name>[^\]]*?)\s*\]\]?\s*(#.*)?$")
_KEY_PART = re.compile(r"\s*(\"(?:[^\"\\]|\\.)*\"|'[^']*'|[A-Za-z0-9_-]+)\s*(?:\.|$)")


def _key(name: str) -> tuple[str, ...] | None:
    """The parts of a table header's dotted key, or None if it is not one memdex can read."""
    parts: list[str] = []
    pos = 0
    while pos < len(name):
        match = _KEY_PART.match(name, pos)
        if not match:
            return None
        token = match.group(1)
        parts.append(json.loads(token) if token.startswith('"') else token.strip("'"))
        pos = match.end()
    return tuple(parts)


def with_table(path: Path, text: str, key: tuple[str, ...], entry: Json | None) -> str:
    """``text`` with the table ``key`` (and its sub-tables) replaced by ``entry``, appended, or removed.

    Only those lines change. The result is parsed again and must hold exactly the old data with the
    new table, so an edit that would touch anything else is refused.
    """
    data = _data(path, text)
    if _dig(data, key) == entry:
        return text
    lines = text.splitlines(keepends=True)
    start = end = None
    for i, line in enumerate(lines):
        match = _HEADER.match(line)
        if not match:
            continue
        parts = _key(match["name"])
        if start is None and parts == key and match["open"] == "[":
            start = i
        elif start is not None and (parts is None or parts[: len(key)] != key):
            end = i
            break
    table = table_text(key, entry) if entry is not None else ""
    if start is None:
        if _dig(data, key) is not None:
            raise ConfigError(
                f"{path} defines {'.'.join(key)} in a form memdex setup does not edit (an inline table or dotted "
                "keys); remove it by hand, then run memdex setup again"
            )
        if entry is None:
            return text
        gap = "" if not text.strip() or text.endswith("\n\n") else "\n" if text.endswith("\n") else "\n\n"
        result = text + gap + table
    else:
        end = len(lines) if end is None else end
        while end > start + 1 and (not lines[end - 1].strip() or lines[end - 1].lstrip().startswith("#")):
            end -= 1  # blank lines and comments just above the next table belong to it
        tail = "".join(lines[end:])
        if entry is None and start > 0 and not lines[start - 1].strip() and (not tail or not tail[0].strip()):
            start -= 1  # do not leave two blank lines where the table was
        gap = "\n" if table and end < len(lines) and lines[end].strip() else ""
        result = "".join(lines[:start]) + table + gap + tail
    _check(path, data, result, key, entry)
    return result


def _data(path: Path, text: str) -> Json:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path} is not valid TOML ({exc}); fix it by hand, then run memdex setup again") from None


def _dig(data: Json, key: tuple[str, ...]) -> Any:
    node: Any = data
    for part in key:
        node = node.get(part) if isinstance(node, dict) else None
    return node


def _check(path: Path, before: Json, text: str, key: tuple[str, ...], entry: Json | None) -> None:
    """Refuse unless ``text`` holds exactly ``before`` with ``entry`` at ``key`` (removed when None)."""
    expected = copy.deepcopy(before)
    parent = expected
    for part in key[:-1]:
        parent = parent.setdefault(part, {})
    if entry is None:
        parent.pop(key[-1], None)
    else:
        parent[key[-1]] = entry
    allowed = [expected]
    if not parent:  # a table only memdex's entry implied, like [mcp_servers], goes with it
        pruned = copy.deepcopy(expected)
        _dig(pruned, key[:-2]).pop(key[-2], None)
        allowed.append(pruned)
    if tomllib.loads(text) not in allowed:
        raise ConfigError(f"{path}: memdex setup could not edit its table without touching others; edit it by hand")


def table_text(key: tuple[str, ...], entry: Json) -> str:
    """The table ``key`` (bare key parts, like ``mcp_servers.memdex``) with string and string-list values, as TOML."""
    lines = [f"[{'.'.join(key)}]"]
    for field, value in entry.items():
        text = "[" + ", ".join(map(_string, value)) + "]" if isinstance(value, list) else _string(value)
        lines.append(f"{field} = {text}")
    return "\n".join(lines) + "\n"


def _string(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)  # a JSON string is a valid TOML basic string
