"""Words the notes hold one edit away from a query word they lack: the hint for a misspelt query. Pure.

A word the memory lacks may be a typo or a word of another topic ("cancer" asked of a chat that says
"dancer"), and only the caller can tell (the search takes one of English's commonest words for another
topic's, any other for a typo). An answer is ranked with each hint in place of its word (a misspelt word then
finds what it meant), and the warning names both, for the caller to search again if the hint is not what was
meant. Two of English's commonest words are two words, not a typo and its fix: "filled", asked of notes that
say "filed", gets no hint, where ranking by it found the notes about filing a ticket.
"""

from __future__ import annotations

import re
import string
from collections.abc import Callable, Iterable, Mapping, Sequence

from ..text.terms import fold_accents, written_words
from ..text.word_frequencies import english_share

# Shorter words have too many real neighbours one edit away: at 5 letters, 14 of LoCoMo's 200 other-topic probes
# got a hint ("liver": "live"), at 6 letters 7, while the hints of misspelt questions stayed as good (docs/benchmarks.md).
MIN_LETTERS = 6
MAX_WORDS = 3  # words looked up per query, at most: each costs about 54 lookups per letter (Cyrillic 83, Greek 51)
# A word of the Latin alphabet once its accents are folded as the index folds them: English, and the languages
# written with accents (German "Schlüssel", French "réunion"); "ß", "ø" and "æ" stay letters of their own.
LATIN = re.compile(r"[a-z\u00df-\u00f6\u00f8-\u00ff\u0100-\u024f]+")


def _alphabet(first: int, last: int, *more: str) -> str:
    """The lower-case letters from ``first`` to ``last`` and ``more``, accents folded as the index folds them."""
    letters = {fold_accents(char) for char in [*map(chr, range(first, last + 1)), *more] if char.isalpha()}
    return "".join(sorted(letter for letter in letters if len(letter) == 1))


# The letters a Greek or Cyrillic word is edited with ("й" and "ё" fold to "и" and "е", as in the index).
_ALPHABETS = (_alphabet(0x3B1, 0x3C9), _alphabet(0x430, 0x45F, "ґ"))


def correctable(term: str) -> bool:
    """Whether ``term`` is a word a hint is sought for: at least :data:`MIN_LETTERS` letters of the Latin alphabet
    (accents included: the index folds them), the Greek or the Cyrillic."""
    folded = fold_accents(term)
    return len(folded) >= MIN_LETTERS and (LATIN.fullmatch(folded) is not None or _script(folded) is not None)


def _script(word: str) -> str | None:
    """The Greek or Cyrillic alphabet when every letter of ``word`` is of it, else None."""
    return next((letters for letters in _ALPHABETS if set(word) <= set(letters)), None)


def another_word(word: str, near: str) -> bool:
    """Whether ``near`` is another English word than ``word``, not a spelling or a kin of it: both are among
    English's commonest words, counted apart ("filled" and "filed", "bought" and "brought"; the list counts
    "centre" and "center" as one word), and neither is the other with a letter added at its end, as
    "photography" is "photograph"'s."""
    share = english_share(word)
    if share <= 0 or english_share(near) in (0.0, share):
        return False
    shorter, longer = sorted((word, near), key=len)
    return not (len(longer) == len(shorter) + 1 and longer.startswith(shorter))


def one_edit(word: str, letters: str = string.ascii_lowercase) -> list[str]:
    """Every string one deletion, transposition, replacement or insertion of a letter of ``letters`` away from
    ``word``."""
    splits = [(word[:i], word[i:]) for i in range(len(word) + 1)]
    deletes = [a + b[1:] for a, b in splits if b]
    transposes = [a + b[1] + b[0] + b[2:] for a, b in splits if len(b) > 1 and b[0] != b[1]]
    replaces = [a + c + b[1:] for a, b in splits if b for c in letters if c != b[0]]
    inserts = [a + c + b for a, b in splits for c in letters]
    return list(dict.fromkeys(deletes + transposes + replaces + inserts))


def near_words(
    missing: Sequence[str],
    count: Callable[[Sequence[str]], Mapping[str, int]],
    texts: Callable[[str], Iterable[str]],
    term_of: Callable[[str], Sequence[str]] = lambda word: (),
) -> dict[str, str]:
    """For each word of ``missing`` (words no note holds) that :func:`correctable` takes, the word one edit
    away, with the same first letter and not :func:`another_word`, that the most notes hold, as the notes write
    it (their accents too: "schlüsel" gets "schlüssel", as the index matches words with their accents folded).
    Words with no such neighbour are left out.

    ``count`` says how many chunks hold each of some words, ``texts`` gives a few chunks that hold one.
    Counts go by the index's stems, so several spellings one edit away share the best count ("melani" and
    "melanie" both count the notes that say "Melanie"): the hint is the one of them those notes write.
    ``term_of`` gives the search terms of a word as the notes write it: a Greek or Cyrillic query term is a stem
    ("квартр" of a misspelt "квартры"), and its hint is the notes' word whose stem is one edit away ("квартиры").
    """
    words = [word for word in dict.fromkeys(missing) if correctable(word)][:MAX_WORDS]
    folded = {word: fold_accents(word) for word in words}
    edits = {  # a typo seldom hits the first letter
        word: [edit for edit in _edits(plain) if edit[0] == plain[0] and not another_word(plain, edit)]
        for word, plain in folded.items()
    }
    counts = count(list(dict.fromkeys(edit for near in edits.values() for edit in near))) if words else {}
    hints: dict[str, str] = {}
    for word, near in edits.items():
        best = max((counts.get(edit, 0) for edit in near), default=0)
        if best <= 0:
            continue
        tied = [edit for edit in near if counts.get(edit, 0) == best]
        written: dict[str, str] = {}  # a word of the notes or its search term, accents folded -> as they write it
        for seen in written_words(" ".join(texts(tied[0]))):
            for key in (seen, *term_of(seen)):
                written.setdefault(fold_accents(key), seen)
        if spelled := [written[edit] for edit in tied if edit in written]:
            hints[word] = spelled[0]
    return hints


def _edits(word: str) -> list[str]:
    """:func:`one_edit` of a folded word: with the Greek or Cyrillic letters, or those of the Latin alphabet and
    the word's own ("ß", "ø")."""
    letters = _script(word) or string.ascii_lowercase + "".join(sorted({char for char in word if not char.isascii()}))
    return one_edit(word, letters)


def hint_text(hints: Mapping[str, str], *, ranked: bool = False) -> str:
    """The hints as a warning the caller can act on; ``ranked``: the answer's hits were ranked by them."""
    pairs = ", ".join(f'"{word}" (did you mean "{near}"?)' for word, near in hints.items())
    if ranked:
        return f"no note holds {pairs}: the results are ranked by that spelling; search again if you meant another word"
    return f"no note holds {pairs}: search again with that spelling if it is what you meant"
