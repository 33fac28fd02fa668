"""English inflections folded as the index's porter stemmer folds them: Porter's steps 1 and 5a. Pure.

FTS5's porter tokenizer finds "databases" for "database", "decided" for "decide", "studies" for "study". The
Python side must agree wherever it decides what the index holds (whether memory answers, BM25 scored here), or
it says "nothing in memory matches" about a note FTS5 has just found. Only the inflectional steps are taken:
Porter's derivational steps 2 to 4 merge words that are not one ("informal" and "information" -> "inform").

M. F. Porter, "An algorithm for suffix stripping", Program 14(3), 1980; the steps as its reference
implementation (and SQLite's) runs them.
"""

from __future__ import annotations

_VOWELS = frozenset("aeiou")


def inflection_stem(word: str) -> str:
    """``word`` (lower case) with its inflection removed as porter removes it: the plural, ``-ed``, ``-ing``,
    a final ``-y`` and ``-e`` ("databases", "database" -> "databas"; "planned", "planning" -> "plan"). A word of
    two letters or fewer, or with anything but ASCII letters, is returned as it is."""
    if len(word) <= 2 or not (word.isascii() and word.isalpha()):
        return word
    return _final_e(_final_y(_ed_ing(_plural(word))))


def _consonant(word: str, at: int) -> bool:
    """Porter's consonant: not a vowel, and a ``y`` only after a vowel or first."""
    char = word[at]
    if char in _VOWELS:
        return False
    return char != "y" or at == 0 or not _consonant(word, at - 1)


def _measure(stem: str) -> int:
    """Porter's m: how many times a run of vowels is followed by a consonant in ``stem``."""
    return "".join("c" if _consonant(stem, at) else "v" for at in range(len(stem))).count("vc")


def _has_vowel(stem: str) -> bool:
    return any(not _consonant(stem, at) for at in range(len(stem)))


def _short_syllable(stem: str) -> bool:
    """Porter's *o: ``stem`` ends consonant, vowel, consonant, the last not w, x or y ("hop", not "snow")."""
    n = len(stem)
    return (
        n >= 3
        and _consonant(stem, n - 3)
        and not _consonant(stem, n - 2)
        and _consonant(stem, n - 1)
        and stem[-1] not in "wxy"
    )


def _plural(word: str) -> str:
    """Step 1a: sses -> ss, ies -> i, s -> (none), but ss stays."""
    if word.endswith(("sses", "ies")):
        return word[:-2]
    if word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def _ed_ing(word: str) -> str:
    """Step 1b: eed -> ee (m > 0); ed and ing go after a vowel, then at/bl/iz get their e back, a doubled
    consonant is undoubled (not l, s, z), and a short stem gets its e back ("hoping" -> "hope")."""
    if word.endswith("eed"):
        return word[:-1] if _measure(word[:-3]) > 0 else word
    for suffix in ("ed", "ing"):
        if word.endswith(suffix) and _has_vowel(stem := word[: -len(suffix)]):
            if stem.endswith(("at", "bl", "iz")):
                return stem + "e"
            if len(stem) >= 2 and stem[-1] == stem[-2] and _consonant(stem, len(stem) - 1) and stem[-1] not in "lsz":
                return stem[:-1]
            return stem + "e" if _measure(stem) == 1 and _short_syllable(stem) else stem
    return word


def _final_y(word: str) -> str:
    """Step 1c: y -> i after a vowel ("study", "studies" -> "studi")."""
    return word[:-1] + "i" if word.endswith("y") and _has_vowel(word[:-1]) else word


def _final_e(word: str) -> str:
    """Step 5a: a final e goes when m > 1, or m = 1 and the stem is not a short syllable ("note" stays)."""
    if word.endswith("e"):
        stem = word[:-1]
        m = _measure(stem)
        if m > 1 or (m == 1 and not _short_syllable(stem)):
            return stem
    return word
