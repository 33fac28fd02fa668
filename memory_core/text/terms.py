"""A query's search terms and the crude stems coverage and snippets match them by. Pure functions.

Terms are letters and digits (``POSTGRES_URL`` stays whole), lower-cased, stop-words dropped when
other terms remain. Stores quote each term in their own syntax, so no input is ever read as a query
operator; scoring weighs them (:mod:`..search.scoring`).
"""

from __future__ import annotations

import re
from functools import lru_cache

MAX_TERMS = 64
# How every store cuts text into keyword terms: FTS5's porter stemmer over unicode61 folding (the PostgreSQL
# store runs SQLite's own tokenizer, so both rank alike). In the index's identity: a change rebuilds it.
FTS_TOKENIZER = "porter unicode61"

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


_SUFFIXES = ("ing", "ies", "ed", "es", "s")


@lru_cache(maxsize=65_536)
def stem(term: str) -> str:
    """A crude English stem, enough to match 'backups' with 'backup' when counting coverage."""
    for suffix in _SUFFIXES:
        if term.endswith(suffix) and len(term) - len(suffix) >= 3:
            return term[: -len(suffix)]
    return term


@lru_cache(maxsize=256)  # a query scores each candidate's text more than once (score, share, snippet)
def stems(text: str) -> frozenset[str]:
    """The crude stems of the words of ``text``, lower-cased (how coverage and snippets match terms)."""
    return frozenset(map(stem, _TERM.findall(text.lower())))
