"""memdex's prompt texts, kept as Markdown files beside this module, and their rendering."""

from __future__ import annotations

import datetime as dt
from functools import cache
from importlib import resources
from zoneinfo import ZoneInfo

from memdex.memory_core import ConsolidationMaterial
from memdex.memory_core.limits import HOOK_CONTEXT_CHARS

DATE_PLACEHOLDER = "YYYY-MM-DD"


@cache
def load(name: str) -> str:
    """The text of ``prompts/<name>`` (e.g. ``"memory_flush.md"``), without trailing whitespace."""
    return resources.files(__package__).joinpath(name).read_text(encoding="utf-8").strip()


# What memory_get reads: the file itself, or, on a replica with no files, the copy its database keeps.
FRESHNESS = "{{freshness}}"
_READS = {
    False: "Reads the file on disk, so it is always current.",
    True: "This server is a replica without the files: it reads each file as its indexing host last stored it.",
}


def memory_get_text(replica: bool) -> str:
    """memory_get's description, saying where its lines come from."""
    return load("tools/memory_get.md").replace(FRESHNESS, _READS[replica])


def render_flush(day: dt.date, now: dt.datetime, zone: ZoneInfo | None) -> str:
    """The pre-compaction flush message for ``day``, ending with the current time."""
    text = load("memory_flush.md").replace(DATE_PLACEHOLDER, day.isoformat())
    local = now.astimezone(zone)
    zone_name = zone.key if zone else (local.tzname() or "local time")
    utc = now.astimezone(dt.UTC)
    stamp = f"{local:%A, %B} {local.day}, {local:%Y} {local:%H:%M} ({zone_name}) / {utc:%Y-%m-%d %H:%M} UTC"
    return f"{text}\n\nCurrent time: {stamp}"


def render_consolidate(material: ConsolidationMaterial, now: dt.datetime, zone: ZoneInfo | None) -> str:
    """The consolidation turn: the instructions, MEMORY.md with its hash, then each pending daily log."""
    text = load("memory_consolidate.md").replace("{{budget}}", f"{HOOK_CONTEXT_CHARS:,}")
    size = f"{len(material.memory_text):,} characters"
    parts = [text, f"## {material.memory_path} (hash {material.memory_hash}, {size})\n\n{material.memory_text.strip() or '(empty)'}"]
    if not material.logs:
        parts.append("There are no daily logs to consolidate: every log was handed to an earlier run. Reply with exactly NO_REPLY.")
    for log in material.logs:
        where = f", from line {log.first_line}: earlier lines were consolidated before" if log.first_line > 1 else ""
        parts.append(f"## {log.path}{where}\n\n{log.text.strip()}")
    if material.left_for_later:
        parts.append(f"Left for the next run (over the size of one run): {', '.join(material.left_for_later)}.")
    local = now.astimezone(zone)
    parts.append(f"Current time: {local:%Y-%m-%d %H:%M} ({zone.key if zone else local.tzname() or 'local time'})")
    return "\n\n".join(parts)
