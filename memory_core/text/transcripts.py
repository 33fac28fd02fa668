"""Session transcripts: JSONL files of messages, flattened to readable lines. Pure functions, no I/O.

A transcript holds one JSON object per line. A line counts when it is a user or assistant message:
``{"role": "user", "content": ...}``, or the same message in an envelope such as OpenClaw's
``{"type": "message", "message": {"role": ..., "content": ...}}``. ``content`` is a string or a
list of parts, of which only ``{"type": "text", "text": ...}`` parts count (joined with a space);
tool calls, tool results, images, system messages, blank lines and lines that are not JSON are
skipped. Each kept message becomes one flattened line, ``User: …`` or ``Assistant: …``, with its
whitespace (newlines included) collapsed to single spaces and half a character that JSON escaped alone
(``"\\ud83d"``, an emoji cut in two) written as U+FFFD, and the line map records which JSONL
line (1-based) it came from. Chunks and excerpts are addressed by JSONL line numbers, so a search
hit points at the lines of the transcript file itself.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ..textutil import split_lines, with_replacements
from .chunking import Chunk, chunk_markdown

SPEAKERS = {"user": "User", "assistant": "Assistant"}


@dataclass(frozen=True)
class Transcript:
    """The readable side of a transcript: ``lines[i]`` came from JSONL line ``line_map[i]``."""

    lines: list[str]
    line_map: list[int]
    total_lines: int  # JSONL lines in the file, kept or not

    @property
    def text(self) -> str:
        return "\n".join(self.lines)


def parse_transcript(text: str) -> Transcript:
    """Flatten the user and assistant messages of a JSONL transcript, keeping their line numbers."""
    lines: list[str] = []
    line_map: list[int] = []
    raw_lines = split_lines(text)
    for number, raw in enumerate(raw_lines, start=1):
        if not raw.strip():
            continue
        try:
            record = json.loads(raw)
        except (ValueError, RecursionError):
            continue  # not JSON, or a line still being written
        flattened = _flatten(record)
        if flattened is not None:
            lines.append(flattened)
            line_map.append(number)
    return Transcript(lines, line_map, len(raw_lines))


def _flatten(record: Any) -> str | None:
    if not isinstance(record, dict):
        return None
    message = record.get("message")
    if not isinstance(message, dict):
        message = record
    role = message.get("role")
    speaker = SPEAKERS.get(role) if isinstance(role, str) else None
    if speaker is None:
        return None
    text = " ".join(with_replacements(message_text(message.get("content"))).split())
    return f"{speaker}: {text}" if text else None


def message_text(content: Any) -> str:
    """The text of a message's ``content``: a string, or the ``text`` parts of a list, joined by spaces."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return " ".join(
        part["text"]
        for part in content
        if isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str)
    )


def chunk_transcript(transcript: Transcript, tokens: int = 400, overlap: int = 80) -> list[Chunk]:
    """Chunk the flattened text like Markdown, with start/end lines mapped back to JSONL lines."""
    line_map = transcript.line_map
    return [
        Chunk(line_map[c.start_line - 1], line_map[c.end_line - 1], c.text, c.hash)
        for c in chunk_markdown(transcript.text, tokens, overlap)
    ]


def lines_between(transcript: Transcript, first: int, last: int) -> list[tuple[int, str]]:
    """(JSONL line, flattened line) for the messages on JSONL lines ``first`` … ``last`` (inclusive)."""
    return [(n, line) for n, line in zip(transcript.line_map, transcript.lines) if first <= n <= last]


def readable_excerpt(transcript: Transcript, first: int, last: int) -> str:
    """The ``User: …`` / ``Assistant: …`` lines of JSONL lines ``first`` … ``last``, one per line."""
    return "\n".join(line for _, line in lines_between(transcript, first, last))
