"""Turn a user's natural-language query into a safe FTS5 query, and weigh its terms for 0..1 keyword scores.

An FTS5 ``MATCH 'a b c'`` is an AND of every word, which collapses recall for questions. memdex
ORs the query's terms instead and lets BM25 rank chunks that match more (and rarer) terms first.
Every term is double-quoted, so no input can be read as FTS5 syntax (``AND``, ``NEAR``, ``*``,
``:``, parentheses, stray quotes).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

MAX_TERMS = 64

_TERM = re.compile(r"[^\W_]+(?:_[^\W_]+)*")  # letters/digits, joined by inner underscores (POSTGRES_URL)

# Words that carry no retrieval signal in questions; dropped only when other terms remain.
STOPWORDS = frozenset(
    ["a", "an", "and", "are", "as", "at", "be", "been", "but", "by", "can", "could", "did", "do", "does", "for", "from", "had", "has", "have", "how", "i", "if", "in", "into", "is", "it", "its", "me", "my", "of", "on", "or", "our", "she", "he", "her", "his", "him", "so", "that", "the", "their", "them", "they", "this", "to", "was", "we", "were", "what", "when", "where", "which", "who", "whom", "why", "will", "with", "would", "you", "your"]
)


def query_terms(text: str) -> list[str]:
    """The distinct search terms of ``text``, lower-cased, stop-words removed when others remain."""
    seen: dict[str, None] = {}
    for match in _TERM.finditer(text):
        term = match.group(0).lower()
        if term not in seen:
            seen[term] = None
        if len(seen) >= MAX_TERMS * 2:
            break
    terms = list(seen)
    content = [t for t in terms if t not in STOPWORDS]
    return (content or terms)[:MAX_TERMS]


def match_expression(terms: Sequence[str]) -> str:
    """An FTS5 expression OR-ing ``terms`` (from :func:`query_terms`), each quoted."""
    return " OR ".join(f'"{term}"' for term in terms)


def rare_terms(terms: Sequence[str], counts: Mapping[str, int], total: int, limit: int) -> list[str] | None:
    """The terms worth a keyword search on their own, or None to search them all.

    FTS5's BM25 gives a term held by half the chunks or more an IDF of 1e-6, so such a term only orders
    chunks that hold nothing rarer. When the rarer terms are held by at least ``limit`` chunks, searching
    them alone returns the same top ``limit`` (up to ties within 1e-6) without scoring every chunk that
    says "data"; a store then checks that the rare search did fill ``limit`` rows.
    """
    rare = [term for term in terms if 2 * counts[term] < total]
    if rare and len(rare) < len(terms) and sum(counts[term] for term in rare) >= limit:
        return rare
    return None


_SUFFIXES = ("ing", "ies", "ed", "es", "s")


@lru_cache(maxsize=65_536)
def _stem(term: str) -> str:
    """A crude English stem, enough to match 'backups' with 'backup' when counting coverage."""
    for suffix in _SUFFIXES:
        if term.endswith(suffix) and len(term) - len(suffix) >= 3:
            return term[: -len(suffix)]
    return term


@lru_cache(maxsize=256)  # a query scores each candidate's text more than once (score, share, snippet)
def stems(text: str) -> frozenset[str]:
    """The crude stems of the words of ``text``, lower-cased (how coverage and snippets match terms)."""
    return frozenset(map(_stem, _TERM.findall(text.lower())))


def bm25_idf(rows: int, total: int) -> float:
    """FTS5's own IDF for a term that ``rows`` of ``total`` chunks hold; 0 from half the chunks up (FTS5: 1e-6)."""
    return math.log((total - rows + 0.5) / (rows + 0.5)) if 2 * rows < total else 0.0


def coverage_idf(rows: int, total: int) -> float:
    """An IDF that never reaches 0 (Lucene's): a word in most chunks weighs little, but not nothing."""
    return math.log(1.0 + (max(total, rows) - rows + 0.5) / (rows + 0.5))


@dataclass(frozen=True)
class TermWeights:
    """A query's terms weighed by how many chunks hold each: what keyword scores are built on."""

    stems: tuple[str, ...]  # each term's crude stem, as coverage matches it
    weights: tuple[float, ...]  # each term's coverage_idf; 0 for a term no chunk holds
    bm25_scale: float  # FTS5's IDF summed over the held terms: bm25 of a chunk with each once, average length
    missing: float = 0.0  # the terms no chunk holds, each weighed as the rarest: what no chunk can answer


def weigh_terms(terms: Sequence[str], counts: Mapping[str, int], total: int) -> TermWeights:
    """Weights for ``terms`` from ``counts`` (how many of ``total`` chunks hold each; missing = none)."""
    held = [counts.get(term, 0) for term in terms]
    return TermWeights(
        tuple(map(_stem, terms)),
        tuple(coverage_idf(rows, total) if rows else 0.0 for rows in held),
        sum(bm25_idf(rows, total) for rows in held if rows),
        sum(coverage_idf(1, total) for rows in held if not rows) if total else 0.0,
    )


def term_coverage(weights: TermWeights, text: str) -> float:
    """The share of the query's term weight that ``text`` holds (each term once; plural forms match)."""
    total = sum(weights.weights)
    if total <= 0:
        return 0.0
    present = stems(text)
    return sum(w for stem, w in zip(weights.stems, weights.weights) if stem in present) / total


def query_share(weights: TermWeights, text: str) -> float:
    """The share of the whole query that ``text`` answers: like :func:`term_coverage`, but the words no
    chunk holds count too (as the rarest), so a query on another topic that shares a common word or two
    with the memory scores low. Coverage leaves them out so that a typo does not lower every score."""
    total = sum(weights.weights) + weights.missing
    return term_coverage(weights, text) * sum(weights.weights) / total if total > 0 else 0.0


def bm25_strength(rank: float) -> float:
    """An FTS5 ``bm25()`` value (negative; lower is better) as ``s / (1 + s)`` of its strength ``s``:
    0..1, and still growing for the strongest matches (no cap)."""
    strength = -rank if rank < 0 else 0.0
    return strength / (1.0 + strength)


def bm25_share(rank: float, weights: TermWeights) -> float:
    """An FTS5 ``bm25()`` value (negative; lower is better) as a share of ``weights.bm25_scale``, at most 1."""
    if rank >= 0 or weights.bm25_scale <= 0:
        return 0.0
    return min(1.0, -rank / weights.bm25_scale)
