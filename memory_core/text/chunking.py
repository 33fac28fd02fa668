"""Cut Markdown into overlapping, line-addressed chunks. Pure functions, no I/O.

Sizes are budgeted in characters at about four per token; a CJK character counts as a whole
token (four characters) so CJK chunks stay inside the model's budget. A chunk records the 1-based,
inclusive lines it covers. When a chunk is nearly full the cut prefers a Markdown heading or a
blank line, so chunks follow the note's own structure.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from ..limits import MAX_VECTOR_PARTS
from ..textutil import sha256_hex, split_lines

CHARS_PER_TOKEN = 4
CHUNKER_VERSION = "md-1"  # stored in the index identity: change it when boundaries change

_CJK = re.compile(r"[\u2E80-\u9FFF\uA000-\uA4FF\uAC00-\uD7AF\uF900-\uFAFF\U00020000-\U0002FA1F]")
_HEADING = re.compile(r"^\s{0,3}#{1,6}(\s|$)")
_MIN_FILL = 0.5  # a structural cut is taken only once the chunk is at least this full


@dataclass(frozen=True)
class Chunk:
    start_line: int
    end_line: int
    text: str
    hash: str


@dataclass(frozen=True)
class ChunkMark:
    """An indexed chunk as far as :func:`rechunk_tail` needs it: its id, lines and hash."""

    id: int
    start_line: int
    end_line: int
    hash: str


@dataclass(frozen=True)
class _Piece:
    line: int
    text: str
    cost: int  # weighted characters, plus one for the newline


def only_headings(lines: Sequence[str]) -> bool:
    """Whether ``lines`` hold a Markdown heading and nothing else but blank lines: a chunk of them says
    nothing of its own (a heading over a paragraph longer than a chunk is cut off this way)."""
    shown = [line for line in lines if line.strip()]
    return bool(shown) and all(_HEADING.match(line) for line in shown)


def text_cost(text: str) -> int:
    """Weighted length: one per character, four per CJK character."""
    if text.isascii():
        return len(text)
    return len(text) + (CHARS_PER_TOKEN - 1) * len(_CJK.findall(text))


def chunk_markdown(text: str, tokens: int = 400, overlap: int = 80) -> list[Chunk]:
    """Chunk ``text`` into pieces of about ``tokens`` tokens that share ``overlap`` tokens."""
    max_cost, overlap_cost = _budgets(tokens, overlap)
    return _chunk(_pieces(text, max_cost), max_cost, overlap_cost)


def _budgets(tokens: int, overlap: int) -> tuple[int, int]:
    """(largest chunk cost, overlap cost) for ``tokens`` and ``overlap``."""
    return max(32, tokens * CHARS_PER_TOKEN), max(0, min(overlap, tokens - 1)) * CHARS_PER_TOKEN


def _chunk(pieces: list[_Piece], max_cost: int, overlap_cost: int, current: list[_Piece] | None = None) -> list[Chunk]:
    """The chunker proper, from a state: ``current`` holds carried pieces (the overlap of a chunk just cut)."""
    chunks: list[Chunk] = []
    current = list(current or [])
    carried = len(current)  # leading pieces of `current` repeated from the previous chunk
    size = sum(p.cost for p in current)  # of `current`, kept as it changes

    for piece in pieces:
        while current and size + piece.cost > max_cost:
            if carried == len(current):  # only overlap left and it does not fit: drop it
                current, carried, size = [], 0, 0
                break
            cut = _best_cut(current, carried, max_cost)
            emitted = current[:cut]
            chunks.append(_make_chunk(emitted))
            tail = _overlap_tail(emitted, overlap_cost)
            current, carried = tail + current[cut:], len(tail)
            size = sum(p.cost for p in current)
        current.append(piece)
        size += piece.cost
    if len(current) > carried:
        chunks.append(_make_chunk(current))
    return [c for c in chunks if c.text.strip()]


def rechunk_tail(
    text: str, known: Sequence[ChunkMark], stable_lines: int, tokens: int = 400, overlap: int = 80, *, newlines: int = -1
) -> tuple[int, list[Chunk]] | None:
    """The chunks of ``text`` after the last of ``known`` that :func:`chunk_markdown` would cut alike.

    ``known`` are the last chunks (in order) of an earlier version of ``text`` as chunk_markdown cut
    it, whose lines ``1..stable_lines`` ``text`` keeps unchanged (a file that only grew); ``newlines``
    is ``text.count("\\n")`` when the caller knows it. Returns (index in ``known`` of the last chunk kept,
    the chunks after it), equal to chunk_markdown's; None when no known chunk is provably kept.

    Why it is exact: chunk_markdown cuts a chunk when its pieces, from its first one, first overflow
    ``max_cost``. When that piece is on a stable line, the earlier version cut that chunk while reading
    the same pieces, so the full run cuts it too, and then carries only its overlap tail forward:
    every later piece fits beside that tail until the overflow, so resuming from the tail alone with the
    pieces after the chunk continues exactly as the full run does.
    """
    max_cost, overlap_cost = _budgets(tokens, overlap)
    newlines = text.count("\n") if newlines < 0 else newlines
    for index in range(len(known) - 1, -1, -1):  # the latest chunk that qualifies keeps the most
        first = known[index].start_line
        pieces = _pieces(text[_line_offset(text, first, newlines) :], max_cost, first)
        span = _span_of(pieces, known[index])
        if span is None:
            continue
        start, end = span
        used, overflow = 0, None
        for at in range(start, len(pieces)):
            used += pieces[at].cost
            if used > max_cost:
                overflow = at
                break
        if overflow is None or pieces[overflow].line > stable_lines:
            continue
        tail = _overlap_tail(pieces[start:end], overlap_cost)
        return index, _chunk(pieces[end:], max_cost, overlap_cost, tail)
    return None


def _line_offset(text: str, line: int, newlines: int) -> int:
    """Where 1-based line ``line`` of ``text`` (which holds ``newlines``) starts, found from the end."""
    at = len(text)
    for _ in range(newlines - line + 2):
        at = text.rfind("\n", 0, at)
    return at + 1


def _span_of(pieces: list[_Piece], mark: ChunkMark) -> tuple[int, int] | None:
    """The pieces ``[start, end)`` that make up the chunk ``mark``, or None unless exactly one run does
    (segments of a long line may repeat)."""
    starts = [i for i, p in enumerate(pieces) if p.line == mark.start_line]
    ends = [i + 1 for i, p in enumerate(pieces) if p.line == mark.end_line]
    found = [(s, e) for s in starts for e in ends if e > s and _make_chunk(pieces[s:e]).hash == mark.hash]
    return found[0] if len(found) == 1 else None


def _pieces(text: str, max_cost: int, first_line: int = 1) -> list[_Piece]:
    pieces: list[_Piece] = []
    for number, line in enumerate(split_lines(text), start=first_line):
        cost = text_cost(line)
        if cost <= max_cost - 1:
            pieces.append(_Piece(number, line, cost + 1))
            continue
        for segment in _split_long_line(line, max_cost - 1):
            pieces.append(_Piece(number, segment, text_cost(segment) + 1))
    return pieces


def _split_long_line(line: str, limit: int) -> list[str]:
    """Split a line longer than ``limit`` (weighted) into segments of at most ``limit``, preferring spaces."""
    segments: list[str] = []
    start, cost = 0, 0
    last_space = -1
    for i, ch in enumerate(line):
        weight = CHARS_PER_TOKEN if _CJK.match(ch) else 1
        if cost + weight > limit:
            cut = last_space + 1 if last_space > start + (i - start) // 2 else i
            segments.append(line[start:cut])
            start = cut
            cost = text_cost(line[start:i])
            last_space = -1
        cost += weight
        if ch == " ":
            last_space = i
    segments.append(line[start:])
    return [s for s in segments if s]


def _best_cut(pieces: list[_Piece], carried: int, max_cost: int) -> int:
    """Where to end the chunk: before a heading or after a blank line when it is full enough."""
    best = len(pieces)
    filled = 0
    for j in range(len(pieces)):
        if j > carried and filled >= _MIN_FILL * max_cost:
            if _HEADING.match(pieces[j].text) or not pieces[j - 1].text.strip():
                best = j
        filled += pieces[j].cost
    return best


def _overlap_tail(pieces: list[_Piece], budget: int) -> list[_Piece]:
    """The last whole pieces of a chunk that fit in the overlap budget."""
    tail: list[_Piece] = []
    used = 0
    for piece in reversed(pieces):
        if used + piece.cost > budget:
            break
        tail.insert(0, piece)
        used += piece.cost
    return tail


def _make_chunk(pieces: list[_Piece]) -> Chunk:
    parts: list[str] = []
    previous_line = None
    for piece in pieces:
        if previous_line is not None:
            parts.append("" if piece.line == previous_line else "\n")
        parts.append(piece.text)
        previous_line = piece.line
    text = "".join(parts)
    return Chunk(pieces[0].line, pieces[-1].line, text, sha256_hex(text))


def vector_parts(text: str, window_tokens: int) -> list[str]:
    """The texts a chunk is embedded as; a vector search scores the chunk by its best part.

    With ``window_tokens`` 0, or a chunk that fits one window, the chunk itself. Otherwise runs of
    its whole lines of about ``window_tokens`` each (a longer line is a part of its own), at most
    :data:`MAX_VECTOR_PARTS`: the windows widen for a chunk that would need more.
    """
    lines = text.split("\n")
    costs = [text_cost(line) + 1 for line in lines]
    budget = window_tokens * CHARS_PER_TOKEN
    if window_tokens <= 0 or sum(costs) - 1 <= budget:
        return [text]
    # Greedy packing never leaves two neighbouring parts that would fit together, so it makes fewer
    # than 2 * total / budget parts: this budget bounds them by MAX_VECTOR_PARTS.
    budget = max(budget, -(-2 * sum(costs) // MAX_VECTOR_PARTS))
    parts: list[list[str]] = [[]]
    used = 0
    for line, cost in zip(lines, costs, strict=True):
        if parts[-1] and used + cost > budget:
            parts.append([])
            used = 0
        parts[-1].append(line)
        used += cost
    texts = ["\n".join(part) for part in parts]
    return [t for t in texts if t.strip()] or [text]
