"""What the agent reads of each hit: the lines of its chunk that best answer the query, within a budget.

A chunk holds ~1,600 characters and the line that answers a question is rarely its first, so a
snippet is not the chunk's head: it is the run of whole lines that scores highest for the query's
terms (each term weighted by how rare it is among the candidates' lines and in the whole memory, so
"like" counts for little and "camping" for much), widened with the lines around it while it fits.
The answer as a whole keeps within a character budget, filled best hit first; the top hit is always
shown, and what the hits leave of the budget shows more of the best ones.

Sizes are weighted characters (:func:`~..text.chunking.text_cost`): what the agent pays for in tokens, so a
CJK character counts four. A line too long to show whole (CJK notes often hold a paragraph per line) is
cut into sentences (``。！？!?``), and the sentences that best answer are shown; only a sentence longer
than the room is cut by characters, around its first match.
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from ..limits import ANSWER_JSON_CHARS, EXPLAIN_FIELDS_CHARS, MIN_SNIPPET_CHARS, RESULT_FIELDS_CHARS
from ..models import Explanation, Hit
from ..text.chunking import only_headings, text_cost
from ..text.han_forms import simplified
from ..text.terms import index_stems, stems, term_index_keys, term_keys
from .ranking import Ranked

ELLIPSIS = "…"
# The hits below the best one share what its room leaves of the budget, each at least this share of
# ``snippet_chars`` and at most all of it: the best hit is the likeliest answer, worth its lines around the match,
# and two more hits fit the default answer (8 results, 700 then 471 characters each, 4,000 in all), while an answer
# of a few hits keeps rooms of 700. Against 6 of 700 each, LoCoMo ev@2k / ev@4k: keyword 0.694 / 0.767 -> 0.700 /
# 0.781, hybrid 0.702 / 0.789 -> 0.704 / 0.795 (docs/benchmarks.md). Two thirds for every lower hit, whatever
# their number, read less at 2,000 characters in hybrid search: an answer of few hits widened its best one more.
LOWER_ROOM = 2 / 3
_SENTENCE = re.compile(r"[^。！？!?]*(?:[。！？!?]+[」』）)\"']*\s*|$)")  # a sentence with its end marks and closing quotes


@dataclass(frozen=True)
class Window:
    """The lines of a chunk shown as a hit's snippet (1-based, inclusive)."""

    start_line: int
    end_line: int
    text: str
    why: str  # how the lines were chosen, for ``explain``


class LineScorer:
    """Scores a line by the query terms it holds, each weighted by its rarity among the given lines and, when
    ``memory_weights`` gives it (a match key's weight in the whole index), in the memory: the geometric mean of
    the two. The lines alone misjudge a word that the candidates share and the memory does not: among the logs
    of one month "volunteer" is on many lines and "doing" on few, so the lines alone showed "doing".

    Terms match by match keys, as coverage does; a term that no line holds so matches as the index matches it
    (:func:`..text.terms.term_index_keys`): "invoice" finds the line that says "invoices", which FTS5 found."""

    def __init__(self, terms: Sequence[str], texts: Iterable[str], memory_weights: Mapping[str, float] | None = None) -> None:
        lines = [line for text in texts for line in text.split("\n")]
        self.terms = frozenset[str]().union(*map(term_keys, terms))
        self.forms: frozenset[str] = frozenset()
        self._held: dict[str, frozenset[str]] = {line: self.terms & stems(line) for line in lines}  # line -> its terms
        matched = frozenset[str]().union(*self._held.values())
        if lines and (unmatched := [term for term in terms if not term_keys(term) <= matched]):
            self.forms = frozenset[str]().union(*map(term_index_keys, unmatched))
            self._held = {line: held | (self.forms & index_stems(line)) for line, held in self._held.items()}
        counts = dict.fromkeys(self.terms | self.forms, 0)
        for line in lines:
            for term in self._held[line]:
                counts[term] += 1
        local = {term: math.log(1.0 + (len(lines) + 1) / (count + 1)) for term, count in counts.items()}
        memory = memory_weights or {}
        self.weights = {term: math.sqrt(weight * memory[term]) if memory.get(term, 0.0) > 0 else weight
                        for term, weight in local.items()}  # fmt: skip

    def held(self, line: str) -> frozenset[str]:
        """The query terms ``line`` holds (remembered: every line is looked at more than once)."""
        found = self._held.get(line)
        if found is None:
            found = self.terms & stems(line)
            if self.forms:
                found |= self.forms & index_stems(line)
            self._held[line] = found
        return found

    def score(self, line: str) -> float:
        # fsum: exact whatever the set's order, so equal windows tie the same way in every process (a plain
        # sum's last bit followed the hash seed, and with it which of two equal windows was shown)
        return math.fsum(self.weights[term] for term in self.held(line))

    def describe(self, lines: Iterable[str]) -> str:
        """The query terms found in ``lines`` with their weights, rarest first."""
        matched = sorted(frozenset[str]().union(*map(self.held, lines)), key=lambda term: -self.weights[term])
        return ", ".join(f"{term} ({self.weights[term]:.1f})" for term in matched)


def best_window(
    text: str,
    start_line: int,
    end_line: int,
    scorer: LineScorer,
    max_chars: int,
    shown: frozenset[tuple[int, str]] = frozenset(),
) -> Window:
    """The run of whole lines of ``text`` (a chunk of lines ``start_line..end_line``) best for the query.

    A chunk that fits (``max_chars`` weighted characters) is returned whole. Otherwise the highest-scoring
    run of lines that fits is found, narrowed to its matching lines and widened again around them with
    context, a line before then a line after, while it fits. A single line longer than ``max_chars`` shows
    its best sentences (:func:`_cut_line`); a chunk with no matching line shows its head.
    Lines in ``shown`` (number and text: lines of the file another hit of the answer shows whole, as
    neighbouring chunks overlap) are left out: the window is chosen in the stretch of the chunk's other lines
    that holds the best of them, so an answer never shows a line twice.
    A chunk whose text is not its file's lines one for one (a transcript's readable excerpt) keeps
    its own line range.
    """
    lines = text.split("\n")
    one_for_one = len(lines) == end_line - start_line + 1
    first, last = _unshown_stretch(lines, start_line, scorer, shown) if one_for_one else (0, len(lines) - 1)
    part = lines[first : last + 1]
    if text_cost(joined := "\n".join(part)) <= max_chars:
        why = "the whole chunk (it fits)" if len(part) == len(lines) else "the chunk's lines no other hit shows (they fit)"
        window = Window(start_line + first, start_line + last, joined, why)
    else:
        window = _choose(part, start_line + first, scorer, max_chars)
    return window if one_for_one else Window(start_line, end_line, window.text, window.why)


def _unshown_stretch(
    lines: list[str], start_line: int, scorer: LineScorer, shown: frozenset[tuple[int, str]]
) -> tuple[int, int]:
    """The run of ``lines`` (indexes, inclusive) outside ``shown`` that holds the best-scoring such line; all
    of them when none is shown, or when every line is (then there is nothing new to show instead)."""
    free = [(start_line + at, line) not in shown for at, line in enumerate(lines)]
    if all(free) or not any(free):
        return 0, len(lines) - 1
    best = max((at for at in range(len(lines)) if free[at]), key=lambda at: scorer.score(lines[at]))
    first, last = best, best
    while first > 0 and free[first - 1]:
        first -= 1
    while last < len(lines) - 1 and free[last + 1]:
        last += 1
    return first, last


def _choose(lines: list[str], start_line: int, scorer: LineScorer, max_chars: int) -> Window:
    scores = [scorer.score(line) for line in lines]
    costs = [text_cost(line) + 1 for line in lines]  # with its newline
    first, last = _best_run(scores, costs, max_chars)
    terms = scorer.describe(lines[first : last + 1]) if scores[first] > 0 else ""
    if costs[first] - 1 > max_chars:  # the best line alone is too long
        why = f"line {start_line + first}, its best sentences: " + (terms or "no query term in the chunk")
        return Window(start_line + first, start_line + first, _cut_line(lines[first], scorer, max_chars), why)
    why = f"best-matching lines {start_line + first}-{start_line + last} ({terms}) with context" if terms else (
        "the chunk's first lines: none holds a query term"
    )
    first, last = _widen(costs, first, last, max_chars)
    after = _under_headings(lines, first, last)
    if after is not None and (room := max_chars - sum(costs[first:after])) >= MIN_SNIPPET_CHARS:
        # a heading alone says nothing: show what it heads
        cut = _cut_line(lines[after], scorer, room)
        why += f", and line {start_line + after} under it, its best sentences"
        return Window(start_line + first, start_line + after, "\n".join([*lines[first:after], cut]), why)
    return Window(start_line + first, start_line + last, "\n".join(lines[first : last + 1]), why)


def _under_headings(lines: list[str], first: int, last: int) -> int | None:
    """The line a window of only headings (and blank lines) heads, when it goes on past the window (it did not
    fit whole); None for any other window."""
    if not only_headings(lines[first : last + 1]):
        return None
    return next((at for at in range(last + 1, len(lines)) if lines[at].strip()), None)


def _best_run(scores: Sequence[float], costs: Sequence[int], max_chars: int) -> tuple[int, int]:
    """The densest run of matching pieces (lines, or a line's sentences) within ``max_chars``: the best
    piece and the good pieces near it; ``costs`` are the pieces' sizes, separators included.

    A piece is worth its score less half the best piece's, so pieces that only share a common term
    with the query (a speaker's name on every line) cost more than they bring, and the run does
    not stretch over them. When the best piece alone is larger than ``max_chars`` it is returned
    (the caller cuts it); when nothing matches, the first piece.
    """
    top = max(range(len(scores)), key=scores.__getitem__)
    if scores[top] <= 0 or costs[top] - 1 > max_chars:
        return top, top
    bar = scores[top] / 2
    best = (scores[top] - bar, top, top)
    for first in range(len(scores)):
        if scores[first] <= bar:  # a run starts and ends on a good piece
            continue
        total, size = 0.0, -1
        for last in range(first, len(scores)):
            size += costs[last]
            if size > max_chars:
                break
            total += scores[last] - bar
            if total > best[0] and scores[last] > bar:
                best = (total, first, last)
    return best[1], best[2]


def _widen(costs: Sequence[int], first: int, last: int, max_chars: int) -> tuple[int, int]:
    """Add the pieces around ``first..last`` while the run fits, two after for each one before.

    What follows a match usually completes it (a heading's section, a question's answer, a list
    item's details), so the context leans forward.
    """
    size = sum(costs[first : last + 1]) - 1
    grew = True
    while grew:
        grew = False
        for _ in range(2):
            if last < len(costs) - 1 and size + costs[last + 1] <= max_chars:
                last += 1
                size += costs[last]
                grew = True
        if first > 0 and size + costs[first - 1] <= max_chars:
            first -= 1
            size += costs[first]
            grew = True
    return first, last


def _cut_line(line: str, scorer: LineScorer, max_chars: int) -> str:
    """At most ``max_chars`` (weighted) of a long line: its best run of whole sentences with the sentences
    around it, marked with an ellipsis where the line goes on; a sentence too long alone is cut around its
    first query term."""
    sentences = [piece for piece in _SENTENCE.findall(line) if piece]
    scores = [scorer.score(sentence) for sentence in sentences]
    costs = [text_cost(sentence) + 1 for sentence in sentences]  # + 1: the separator the run helpers count
    room = max_chars - 2  # for two ellipses
    first, last = _best_run(scores, costs, room)
    if costs[first] - 1 > room:
        return _cut_sentence(line, scorer, max_chars)
    first, last = _widen(costs, first, last, room)
    text = "".join(sentences[first : last + 1]).strip()
    return (ELLIPSIS if first > 0 else "") + text + (ELLIPSIS if last < len(sentences) - 1 else "")


def _cut_sentence(line: str, scorer: LineScorer, max_chars: int) -> str:
    """``max_chars`` (weighted) of a long line, starting a little before its first query term, never inside
    a character's combining marks."""
    lowered = simplified(line.lower())  # as its terms are: 遷移 is 迁移 (one character for one: the offsets hold)
    found = [lowered.find(term) for term in scorer.terms | scorer.forms]
    hit = min((at for at in found if at >= 0), default=0)
    costs = [text_cost(char) for char in line]
    room = max_chars - 2  # for the ellipses
    start, lead = hit, 0
    while start > 0 and lead + costs[start - 1] <= room // 4:
        start -= 1
        lead += costs[start]
    end, size = start, 0
    while end < len(line) and size + costs[end] <= room:
        size += costs[end]
        end += 1
    while 0 < start < end and unicodedata.combining(line[start]):
        start += 1
    while start < end < len(line) and unicodedata.combining(line[end]):
        end -= 1
    return (ELLIPSIS if start > 0 else "") + line[start:end] + (ELLIPSIS if end < len(line) else "")


def fit(
    items: Sequence[Ranked],
    terms: Sequence[str],
    budget: int,
    snippet_chars: int,
    *,
    memory_weights: Mapping[str, float] | None = None,
    explain: bool = False,
) -> tuple[list[tuple[Ranked, Window]], int]:
    """Windows for ``items`` (best first) whose texts total at most ``budget`` characters; lines are scored by
    :class:`LineScorer`, with ``memory_weights``.

    The best hit's snippet gets up to ``snippet_chars``; the others share what it leaves (:data:`LOWER_ROOM`).
    Once fewer than ``MIN_SNIPPET_CHARS`` characters are left, the remaining items are left out; their number is
    returned beside the hits. The first hit is always kept, trimmed to the budget around its best lines. When
    every item fits, what they leave of the budget widens the snippets again, best first (:func:`_widened`).
    Whatever the budget, the snippets and every hit's other fields (with ``explain``, its explanation too) stay
    within ``ANSWER_JSON_CHARS``: many short hits are left out there, not sent as a tool result too large for the
    host.
    """
    scorer = LineScorer(terms, (item.row.text for item in items), memory_weights)
    lower = round(snippet_chars * LOWER_ROOM)  # each lower hit's room
    if len(items) > 1:
        lower = min(snippet_chars, max(lower, (budget - snippet_chars) // (len(items) - 1)))
    lower = max(MIN_SNIPPET_CHARS, lower)
    chosen: list[tuple[Ranked, Window]] = []
    used = sent = fields = 0  # the snippets' weighted size, their size as sent, the hits' other fields
    for place, item in enumerate(items):
        row = item.row
        fields += RESULT_FIELDS_CHARS + len(row.path)
        room = min(lower if place else snippet_chars, budget - used, ANSWER_JSON_CHARS - fields - sent)
        if place and room < MIN_SNIPPET_CHARS:
            return chosen, len(items) - place
        window = best_window(row.text, row.start_line, row.end_line, scorer, max(room, 1), _shown(chosen, row.path))
        fields += (EXPLAIN_FIELDS_CHARS + len(window.why)) if explain else 0
        size = sent_chars(window.text)
        if place and sent + size + fields > ANSWER_JSON_CHARS:  # its quotes and backslashes took it past
            return chosen, len(items) - place
        used += text_cost(window.text)
        sent += size
        chosen.append((item, window))
    return _widened(chosen, scorer, budget - used, ANSWER_JSON_CHARS - fields - sent), 0


def sent_chars(text: str) -> int:
    """How many characters ``text`` takes in the tool result's text copy: JSON inside JSON, so a quote, a
    backslash or a newline grows to several (a note of Windows paths or JSON is up to four times its length)."""
    return len(json.dumps(json.dumps(text, ensure_ascii=False), ensure_ascii=False)) - 2


def _shown(chosen: Sequence[tuple[Ranked, Window]], path: str) -> frozenset[tuple[int, str]]:
    """The lines of ``path`` (number and text) that the windows in ``chosen`` show whole; a line shown in part
    (a long line's best sentences, one piece of it) or a transcript's excerpt is not among them."""
    found: set[tuple[int, str]] = set()
    for item, window in chosen:
        lines = window.text.split("\n")
        if item.path == path and len(lines) == window.end_line - window.start_line + 1:
            found.update((window.start_line + at, line) for at, line in enumerate(lines))
    return frozenset(found)


def _widened(
    chosen: list[tuple[Ranked, Window]], scorer: LineScorer, spare: int, unsent: int
) -> list[tuple[Ranked, Window]]:
    """The snippets grown, best hit first, by what every hit left of the budget (``spare``), up to their chunks,
    and as far as the answer's size as sent allows (``unsent`` characters more: :func:`sent_chars`)."""
    for at, (item, window) in enumerate(chosen):
        row = item.row
        if spare < MIN_SNIPPET_CHARS:
            break
        shown = text_cost(window.text)
        if len(window.text) < len(row.text):
            others = _shown(chosen[:at] + chosen[at + 1 :], row.path)
            wider = best_window(row.text, row.start_line, row.end_line, scorer, shown + spare, others)
            growth = sent_chars(wider.text) - sent_chars(window.text)
            if growth > unsent:
                continue
            spare -= text_cost(wider.text) - shown
            unsent -= growth
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

