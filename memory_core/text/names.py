"""Names: the words the notes write with a capital, inside sentences as at their start ("Dana", "Berlin").

Ranking weighs a word by how few chunks hold it; abstention asks whether the memory knows what the query is
about, and a name that every note holds is the memory's own subject (:func:`..search.scoring.weigh_terms`).
The notes, not the query, tell a name: a query may be typed in lower case ("dana role") and capitalises its
first word ("Capital of Peru"). A capital at a line's or a sentence's start tells nothing alone (a log whose
bullets all start "Fixed …"), so a name is also written with one inside a sentence at least once. German
writes every noun with a capital ("das Team"): a German text tells no name. A Russian or Greek query term is a
stem, written in the notes as any word that stems to it ("наташ": "Наташа", "с Наташей"). Pure.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable

from .stemming import STEMMED_LETTER, stem_of
from .stopwords import is_german
from .terms import written_words

NAME_SHARE = 0.9  # the share of its occurrences a name is written with a capital, at least
# What may come before a word inside a sentence: a word, a comma or the like, then a space; or, right before
# it, Markdown's emphasis, a bracket or a quote ("- **Caroline**: hi", "(Dana)"). Not a line's start, nor an
# opener and a space: a bullet, a label, a sentence's end ("- Fixed", "Note: Dana", "done. Then").
_INSIDE = r"(?:[^\s.!?:\-*#>•|][ \t]+|[*_(\[\"'])"


def written_as_names(terms: Collection[str], texts: Iterable[str]) -> frozenset[str]:
    """The ``terms`` (lower case) that ``texts`` write with a capital :data:`NAME_SHARE` of the times they write
    them or more, once at least inside a sentence: "dana" of "Ask Dana whether…", not "capital", which "Capital
    plan:" starts once and "venture capital" writes in lower case."""
    cased = [term for term in terms if term != term.upper()]  # CJK grams and numbers have no case
    if not cased:
        return frozenset()
    text = "\n".join(text for text in texts if not is_german(written_words(text)))
    names = set()
    for term in cased:
        # A Russian or Greek query term is a stem (:mod:`.stemming`): "наташ" is written "Наташа", "Наташей".
        ending = r"\w*" if STEMMED_LETTER.search(term) else ""
        written = [
            word for word in re.findall(rf"\b{re.escape(term)}{ending}\b", text, re.IGNORECASE)
            if not ending or word.lower() == term or stem_of(word.lower()) == term
        ]
        capitalised = sum(1 for word in written if word[0].isupper())
        inside = rf"{_INSIDE}{re.escape(term[0].upper())}(?i:{re.escape(term[1:])}){ending}\b"
        if written and capitalised >= NAME_SHARE * len(written) and re.search(inside, text):
            names.add(term)
    return frozenset(names)
