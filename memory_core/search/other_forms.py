"""The words the notes write in a query word's place when the index found them by porter's stem alone. Pure.

FTS5's porter stemmer also cuts derivational endings ("migration" and "migrated" -> "migrat"), so the keyword
index finds a note for a word it does not hold. Whether memory answers goes by inflections only
(:mod:`..text.inflections`: "informal" is no answer to "information"), so such a query can get nothing at all,
and no clue why. When nothing answers, the word the found notes write in the query word's place is the hint:
a search with it answers, if it is what was meant.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache

from ..text.inflections import porter_stem
from ..text.terms import index_stems, term_index_keys, written_words

_ASCII_WORD = re.compile(r"[a-z]{3,}")  # porter stems English words (FTS5 leaves shorter ones as they are)
_stem = lru_cache(maxsize=4096)(porter_stem)


def other_forms(terms: Sequence[str], texts: Iterable[str]) -> dict[str, str]:
    """For each of ``terms`` (query terms) that none of ``texts`` (the chunks the index found) holds as the
    index holds words, the word of those texts with the same porter stem that they write most often.

    Only when every such term has one, so that the query with them is answered: a query on another topic
    lacks words of its own, and a form of one of its words ("responsibility" for "responsible") would only
    lead the caller to notes on something else (LoCoMo's other-topic probes: 50 of 370 got one)."""
    texts = list(texts)
    held = frozenset[str]().union(*map(index_stems, texts))
    lacking = [term for term in terms if not term_index_keys(term) <= held]
    if not lacking or not all(_ASCII_WORD.fullmatch(term) for term in lacking):
        return {}
    wanted = {term: _stem(term) for term in lacking}
    words = (word for text in texts for word in written_words(text) if _ASCII_WORD.fullmatch(word))
    seen = Counter(word for word in words if _stem(word) in wanted.values())
    written: dict[str, str] = {}  # a stem -> the word of that stem the texts write most
    for word, _ in seen.most_common():
        written.setdefault(_stem(word), word)
    return {term: written[stem] for term, stem in wanted.items()} if set(wanted.values()) <= written.keys() else {}

def forms_text(forms: Mapping[str, str]) -> str:
    """The forms as a warning the caller can act on."""
    pairs = ", ".join(f'"{word}" (the notes say "{form}")' for word, form in forms.items())
    return f"no note holds {pairs}: search again with the notes' word if it is what you meant"
