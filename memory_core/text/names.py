"""Names: the words a query writes with a capital that the notes write with one too ("Dana", "Lukas", "Berlin").

Ranking weighs a word by how few chunks hold it; abstention asks whether the memory knows what the query is
about, and a name that every note holds is the memory's own subject (:func:`..search.scoring.weigh_terms`).
Neither side's case tells a name alone: a query capitalises its first word, a note its bullets, and a
scientific claim its "Stem Cell". So a name is a word both write with a capital. Pure.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Collection, Iterable

from .terms import query_terms

_WORD = re.compile(r"[^\W\d_]+")  # a run of letters
NAME_SHARE = 0.9  # the share of its occurrences in the notes a name is written with a capital, at least


def capitalised_words(text: str) -> list[str]:
    """The words ``text`` writes with a capital and lower case after it, when it writes other words in lower
    case (in "Dana Role", as in "DANA ROLE", case tells nothing). Acronyms ("API") are not among them."""
    words = _WORD.findall(unicodedata.normalize("NFKC", text))
    if not any(len(word) > 1 and word.islower() for word in words):
        return []
    return [word for word in words if word[0].isupper() and not word.isupper()]


def capitalised_terms(text: str) -> frozenset[str]:
    """The search terms of :func:`capitalised_words`: "dana" of "what is Dana's role?"."""
    return frozenset(term for word in capitalised_words(text) for term in query_terms(word))


def written_as_names(terms: Collection[str], texts: Iterable[str]) -> frozenset[str]:
    """The ``terms`` that ``texts`` write with a capital, :data:`NAME_SHARE` of the times they write them or
    more ("Dana" in every note, not "capital", which "Capital plan" starts once)."""
    if not terms:
        return frozenset()
    pattern = re.compile(r"\b(?:" + "|".join(map(re.escape, terms)) + r")\b", re.IGNORECASE)
    capitals: dict[str, int] = dict.fromkeys(terms, 0)
    seen: dict[str, int] = dict.fromkeys(terms, 0)
    for text in texts:
        for match in pattern.finditer(text):
            word = match.group(0)
            seen[word.lower()] += 1
            capitals[word.lower()] += word[0].isupper()
    return frozenset(term for term in terms if seen[term] and capitals[term] >= NAME_SHARE * seen[term])
