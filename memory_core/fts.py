"""Turn a user's natural-language query into a safe FTS5 query, and BM25 ranks into 0..1 scores.

An FTS5 ``MATCH 'a b c'`` is an AND of every word, which collapses recall for questions. memdex
ORs the query's terms instead and lets BM25 rank chunks that match more (and rarer) terms first.
Every term is double-quoted, so no input can be read as FTS5 syntax (``AND``, ``NEAR``, ``*``,
``:``, parentheses, stray quotes).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
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


_SUFFIXES = ("ing", "ies", "ed", "es", "s")


@lru_cache(maxsize=65_536)
def _stem(term: str) -> str:
    """A crude English stem, enough to match 'backups' with 'backup' when counting coverage."""
    for suffix in _SUFFIXES:
        if term.endswith(suffix) and len(term) - len(suffix) >= 3:
            return term[: -len(suffix)]
    return term


def term_coverage(terms: list[str], text: str) -> float:
    """The fraction of ``terms`` (from :func:`query_terms`) that occur in ``text``."""
    if not terms:
        return 0.0
    present = set(map(_stem, _TERM.findall(text.lower())))
    return sum(1 for term in terms if _stem(term) in present) / len(terms)


def bm25_to_score(rank: float) -> float:
    """Map an FTS5 ``bm25()`` value (negative; lower is better) onto 0..1, higher is better."""
    strength = -rank if rank < 0 else 0.0
    return strength / (1.0 + strength)
