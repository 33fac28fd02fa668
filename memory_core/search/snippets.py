"""What the agent reads of each hit: the lines of its chunk that best answer the query, within a budget.

A chunk holds ~1,600 characters and the line that answers a question is rarely its first, so a
snippet is not the chunk's head: it is the run of whole lines that scores highest for the query's
terms (each term weighted by how rare it is among the candidates' lines, so "like" counts for
little and "camping" for much), widened with the lines around it while it fits. The answer as a
whole keeps within a character budget, filled best hit first; the top hit is always shown, and what
the hits leave of the budget shows more of the best ones.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ..limits import MIN_SNIPPET_CHARS
from ..models import Explanation, Hit
from ..text.terms import stems, term_keys
from .ranking import Ranked

ELLIPSIS = "…"


@dataclass(frozen=True)
class Window:
    """The lines of a chunk shown as a hit's snippet (1-based, inclusive)."""

    start_line: int
    end_line: int
    text: str
    why: str  # how the lines were chosen, for ``explain``


class LineScorer:
    """Scores a line by the query terms it holds, each weighted by its rarity among the given lines."""

    def __init__(self, terms: Sequence[str], texts: Iterable[str]) -> None:
        self.terms = frozenset[str]().union(*map(term_keys, terms))
        self._held: dict[str, frozenset[str]] = {}  # line -> the query terms it holds
        counts = dict.fromkeys(self.terms, 0)
        lines = 0
        for text in texts:
            for line in text.split("\n"):
                lines += 1
                for term in self.held(line):
                    counts[term] += 1
        self.weights = {term: math.log(1.0 + (lines + 1) / (count + 1)) for term, count in counts.items()}

    def held(self, line: str) -> frozenset[str]:
        """The query terms ``line`` holds (remembered: every line is looked at more than once)."""
        found = self._held.get(line)
        if found is None:
            found = self._held[line] = self.terms & stems(line)
        return found

    def score(self, line: str) -> float:
        # fsum: exact whatever the set's order, so equal windows tie the same way in every process (a plain
        # sum's last bit followed the hash seed, and with it which of two equal windows was shown)
        return math.fsum(self.weights[term] for term in self.held(line))

    def describe(self, lines: Iterable[str]) -> str:
        """The query terms found in ``lines`` with their weights, rarest first."""
        matched = sorted(frozenset[str]().union(*map(self.held, lines)), key=lambda term: -self.weights[term])
        return ", ".join(f"{term} ({self.weights[term]:.1f})" for term in matched)


def best_window(text: str, start_line: int, end_line: int, scorer: LineScorer, max_chars: int) -> Window:
    """The run of whole lines of ``text`` (a chunk of lines ``start_line..end_line``) best for the query.

    A chunk that fits is returned whole. Otherwise the highest-scoring run of lines that fits is
    found, narrowed to its matching lines and widened again around them with context, a line
    before then a line after, while it fits. A single line longer than ``max_chars`` is cut around
    its first match and marked with an ellipsis; a chunk with no matching line shows its head.
    A chunk whose text is not its file's lines one for one (a transcript's readable excerpt) keeps
    its own line range.
    """
    if len(text) <= max_chars:
        return Window(start_line, end_line, text, "the whole chunk (it fits)")
    lines = text.split("\n")
    window = _choose(lines, start_line, scorer, max_chars)
    if len(lines) != end_line - start_line + 1:
        return Window(start_line, end_line, window.text, window.why)
    return window


def _choose(lines: list[str], start_line: int, scorer: LineScorer, max_chars: int) -> Window:
    scores = [scorer.score(line) for line in lines]
    first, last = _best_run(lines, scores, max_chars)
    terms = scorer.describe(lines[first : last + 1]) if scores[first] > 0 else ""
    if len(lines[first]) > max_chars:  # the best line alone is too long
        why = f"line {start_line + first} cut around its first match: " + (terms or "no query term in the chunk")
        return Window(start_line + first, start_line + first, _cut_line(lines[first], scorer, max_chars), why)
    why = f"best-matching lines {start_line + first}-{start_line + last} ({terms}) with context" if terms else (
        "the chunk's first lines: none holds a query term"
    )
    first, last = _widen(lines, first, last, max_chars)
    return Window(start_line + first, start_line + last, "\n".join(lines[first : last + 1]), why)


def _best_run(lines: Sequence[str], scores: Sequence[float], max_chars: int) -> tuple[int, int]:
    """The densest run of matching lines within ``max_chars``: the best line and the good lines near it.

    A line is worth its score less half the best line's, so lines that only share a common term
    with the query (a speaker's name on every line) cost more than they bring, and the run does
    not stretch over them. When the best line alone is longer than ``max_chars`` it is returned
    (the caller cuts it); when nothing matches, the first line.
    """
    top = max(range(len(lines)), key=scores.__getitem__)
    if scores[top] <= 0 or len(lines[top]) > max_chars:
        return top, top
    bar = scores[top] / 2
    best = (scores[top] - bar, top, top)
    for first in range(len(lines)):
        if scores[first] <= bar:  # a run starts and ends on a good line
            continue
        total, size = 0.0, -1
        for last in range(first, len(lines)):
            size += len(lines[last]) + 1
            if size > max_chars:
                break
            total += scores[last] - bar
            if total > best[0] and scores[first] > bar and scores[last] > bar:
                best = (total, first, last)
    return best[1], best[2]


def _widen(lines: Sequence[str], first: int, last: int, max_chars: int) -> tuple[int, int]:
    """Add the lines around ``first..last`` while the run fits, two after for each one before.

    What follows a match usually completes it (a heading's section, a question's answer, a list
    item's details), so the context leans forward.
    """
    size = sum(len(line) for line in lines[first : last + 1]) + last - first
    grew = True
    while grew:
        grew = False
        for _ in range(2):
            if last < len(lines) - 1 and size + len(lines[last + 1]) + 1 <= max_chars:
                last += 1
                size += len(lines[last]) + 1
                grew = True
        if first > 0 and size + len(lines[first - 1]) + 1 <= max_chars:
            first -= 1
            size += len(lines[first]) + 1
            grew = True
    return first, last


def _cut_line(line: str, scorer: LineScorer, max_chars: int) -> str:
    """``max_chars`` of a long line, starting a little before its first query term."""
    lowered = line.lower()
    found = [lowered.find(term) for term in scorer.terms]
    hit = min((at for at in found if at >= 0), default=0)
    start = max(0, min(hit - max_chars // 4, len(line) - max_chars))
    piece = line[start : start + max_chars]
    if start > 0:
        piece = ELLIPSIS + piece[1:]
    if start + max_chars < len(line):
        piece = piece[:-1] + ELLIPSIS
    return piece


def fit(
    items: Sequence[Ranked], terms: Sequence[str], budget: int, snippet_chars: int
) -> tuple[list[tuple[Ranked, Window]], int]:
    """Windows for ``items`` (best first) whose texts total at most ``budget`` characters.

    Each snippet gets up to ``snippet_chars``. Once fewer than ``MIN_SNIPPET_CHARS`` characters are
    left, the remaining items are left out; their number is returned beside the hits. The first hit
    is always kept, trimmed to the budget around its best lines. When every item fits, what they
    leave of the budget widens the snippets again, best first (:func:`_widened`).
    """
    scorer = LineScorer(terms, (item.row.text for item in items))
    chosen: list[tuple[Ranked, Window]] = []
    used = 0
    for place, item in enumerate(items):
        room = min(snippet_chars, budget - used)
        if place and room < MIN_SNIPPET_CHARS:
            return chosen, len(items) - place
        row = item.row
        window = best_window(row.text, row.start_line, row.end_line, scorer, max(room, 1))
        used += len(window.text)
        chosen.append((item, window))
    return _widened(chosen, scorer, budget - used), 0


def _widened(chosen: list[tuple[Ranked, Window]], scorer: LineScorer, spare: int) -> list[tuple[Ranked, Window]]:
    """The snippets grown, best hit first, by what every hit left of the budget, up to their chunks."""
    for at, (item, window) in enumerate(chosen):
        row = item.row
        if spare < MIN_SNIPPET_CHARS:
            break
        if len(window.text) < len(row.text):
            wider = best_window(row.text, row.start_line, row.end_line, scorer, len(window.text) + spare)
            spare -= len(wider.text) - len(window.text)
            chosen[at] = (item, wider)
    return chosen


def to_hit(item: Ranked, window: Window, explanation: Explanation | None = None) -> Hit:
    """The hit a caller sees: the window's lines and text, the chunk's range, the scores."""
    row = item.row
    return Hit(
        path=row.path,
        start_line=window.start_line,
        end_line=window.end_line,
        chunk_start_line=row.start_line,
        chunk_end_line=row.end_line,
        score=round(item.score, 6),
        text_score=None if item.text_score is None else round(item.text_score, 6),
        vector_score=None if item.vector_score is None else round(item.vector_score, 6),
        snippet=window.text,
        source="sessions" if row.source == "sessions" else "memory",
        explain=explanation,
    )

