"""Read exact lines of a memory file from disk, in bounded pieces.

The file is read through :meth:`MemoryFile.open` (never through a symlink), and its lines are
numbered as the indexer numbers them: split on ``\\n`` only.

A session transcript is read the way it is indexed: its user and assistant messages as
``User: …`` / ``Assistant: …`` lines, addressed by the JSONL line numbers of the file.
"""

from __future__ import annotations

from ..errors import InputError
from ..limits import MAX_READ_CHARS, MAX_READ_LINES
from ..models import Excerpt
from ..text.transcripts import lines_between, parse_transcript
from ..textutil import decode_text, split_lines
from .memory_file import MemoryFile, content_hash


def read_excerpt(file: MemoryFile, from_line: int = 1, lines: int | None = None) -> Excerpt:
    """Lines ``from_line`` … ``from_line + lines - 1`` of ``file``, capped at 200 lines / 16,000 chars, with
    the whole file's content hash (a memory file's: the hash memory_edit checks).

    For a transcript the lines are JSONL lines, and the text holds the messages among them.
    """
    _check_range(from_line, lines)
    data = file.read_bytes()  # PathError if it cannot be read safely
    answer = excerpt(file.rel, file.source, decode_text(data), from_line, lines)
    return answer.model_copy(update={"hash": content_hash(data)}) if file.source == "memory" else answer


def _check_range(from_line: int, lines: int | None) -> None:
    if from_line < 1:
        raise InputError(f"from must be 1 or more (got {from_line}); lines are numbered from 1")
    if lines is not None and lines < 1:
        raise InputError(f"lines must be 1 or more (got {lines}); omit it to read to the end")


def excerpt(rel: str, source: str, content: str, from_line: int = 1, lines: int | None = None) -> Excerpt:
    """:func:`read_excerpt` of a file's ``content`` (a store's copy, on a host without the files)."""
    _check_range(from_line, lines)
    if source == "sessions":
        transcript = parse_transcript(content)
        total = transcript.total_lines
    else:
        all_lines = split_lines(content)
        total = len(all_lines)
    if total == 0 and from_line == 1:
        return Excerpt(path=rel, text="", from_=1, to=0, total_lines=0)
    if from_line > total:
        raise InputError(f"from={from_line} is past the end of {rel}, which has {total} lines")
    wanted = total - from_line + 1 if lines is None else min(lines, total - from_line + 1)
    last_wanted = from_line + wanted - 1
    window_end = from_line + min(wanted, MAX_READ_LINES) - 1
    if source == "sessions":
        numbered = lines_between(transcript, from_line, window_end)
    else:
        numbered = list(enumerate(all_lines[from_line - 1 : window_end], start=from_line))
    out: list[str] = []
    used = 0
    note = None
    to = window_end
    for number, line in numbered:
        if used + len(line) > MAX_READ_CHARS:
            if out:
                to = number - 1
            else:
                out.append(line[:MAX_READ_CHARS])
                to = number
                note = f"line {number} is longer than {MAX_READ_CHARS} characters and was cut"
            break
        out.append(line)
        used += len(line) + 1  # the newline that joins it to the next line
    next_from = to + 1 if to < total else None  # lines remain, whether the cap or the caller's ``lines`` stopped
    if to < last_wanted and note is None:
        note = f"answer capped at {MAX_READ_LINES} lines / {MAX_READ_CHARS} characters; continue with from={next_from}"
    if not out and note is None:
        note = f"lines {from_line}-{to} hold no user or assistant messages"
    return Excerpt(
        path=rel, text="\n".join(out), from_=from_line, to=to, total_lines=total, next_from=next_from, note=note
    )
