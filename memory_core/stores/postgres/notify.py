"""Telling other hosts what changed: PostgreSQL NOTIFY payloads of a memory's changed paths, sent at commit."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence

from .connection import PgConn

CHANGES_CHANNEL = "memdex_changes"
NOTIFY_BYTES = 6000  # paths per notification, in bytes: PostgreSQL refuses payloads from 8,000 bytes


def announce(conn: PgConn, paths: Sequence[str] | None) -> None:
    """Tell every listening host that these paths of the live index changed (None: all of them), when
    the transaction commits. A shadow's writes are not live yet and are not announced."""
    if conn.fixed:
        return
    for batch in [None] if paths is None else batches(paths):
        payload = json.dumps({"memory": conn.memory, "paths": batch})
        conn.execute("SELECT pg_notify(%s, %s)", (CHANGES_CHANNEL, payload))


def batches(paths: Sequence[str]) -> Iterator[list[str]]:
    """``paths`` in lists of about NOTIFY_BYTES of JSON each."""
    batch: list[str] = []
    size = 0
    for path in paths:
        if batch and size + len(path) + 4 > NOTIFY_BYTES:
            yield batch
            batch, size = [], 0
        batch.append(path)
        size += len(path) + 4  # the quotes, a comma and a space
    if batch:
        yield batch


def parse_announcement(payload: str, memory: str) -> tuple[bool, list[str] | None]:
    """(whether ``payload`` is about ``memory``, its changed paths or None for all)."""
    try:
        data = json.loads(payload)
    except ValueError:
        return False, None
    if not isinstance(data, dict) or data.get("memory") != memory:
        return False, None
    paths = data.get("paths")
    return True, [str(p) for p in paths] if isinstance(paths, list) else None
